package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/serializers"
)

// timerCmd has ptTimers register a processing-time timer for Key at
// Register and delete the one at Delete (0 for neither).
type timerCmd struct {
	Key              string
	Register, Delete int64
}

// heldSource has one split whose records the test hands over one at a
// time, so that the input stays idle while the test waits. A record's event
// time is its place in the input, which advances the watermark and so sends
// the record on at once. The split ends when in is closed, and fails when
// ctx is done; a reader opened at an offset goes on with what in delivers
// next.
type heldSource struct {
	ctx context.Context
	in  <-chan timerCmd
}

func (s heldSource) Splits() int { return 1 }

func (s heldSource) Open(ctx context.Context, _ int, offset int64) (SplitReader[timerCmd], error) {
	return &heldReader{s: s, ts: offset}, nil
}

type heldReader struct {
	s  heldSource
	ts int64
}

func (r *heldReader) Next(ctx context.Context) (timerCmd, int64, bool, error) {
	select {
	case c, ok := <-r.s.in:
		r.ts++
		return c, r.ts, ok, nil
	case <-r.s.ctx.Done():
		return timerCmd{}, 0, false, r.s.ctx.Err()
	}
}

type firedTimer struct {
	Key string
	TS  int64
}

// ptTimers obeys timerCmds, and reports every command it has processed and
// every timer that fires.
type ptTimers struct {
	NoOpen
	processed chan<- timerCmd
	fired     chan<- firedTimer
}

func (p *ptTimers) ProcessElement(ctx *Context[string, struct{}], c timerCmd) error {
	if c.Register != 0 {
		if err := ctx.RegisterProcessingTimeTimer(c.Register); err != nil {
			return err
		}
	}
	if c.Delete != 0 {
		if err := ctx.DeleteProcessingTimeTimer(c.Delete); err != nil {
			return err
		}
	}
	p.processed <- c
	return nil
}

func (p *ptTimers) OnTimer(ctx *Context[string, struct{}], t TimerInfo) error {
	if now := ctx.CurrentProcessingTime(); t.Domain != ProcessingTime || now < t.Timestamp {
		return fmt.Errorf("timer %+v of %s fired at processing time %d", t, ctx.Key(), now)
	}
	p.fired <- firedTimer{Key: ctx.Key(), TS: t.Timestamp}
	return nil
}

// heldRun is the timer job running in the background while the test
// drives its input and its clock.
type heldRun struct {
	in        chan timerCmd
	processed chan timerCmd
	fired     chan firedTimer
	cancel    context.CancelFunc
	done      chan error
	ended     bool
}

// waitLimit bounds every wait for the job: far above what it needs.
const waitLimit = 10 * time.Second

func timerJob(src heldSource, p int, processed chan<- timerCmd, fired chan<- firedTimer) *Job {
	j := NewJob("timers", DefaultParallelism(p))
	cmds := FromSource(j, src, Watermarks{Every: 1}, UID("commands"), Parallelism(1))
	Process(KeyBy(cmds, func(c timerCmd) string { return c.Key }, serializers.String()),
		func() KeyedProcessFunction[string, timerCmd, struct{}] {
			return &ptTimers{processed: processed, fired: fired}
		},
		UID("timers"), MaxParallelism(128))
	return j
}

// startTimerJob runs the timer job at parallelism p until the test ends
// its input.
func startTimerJob(t *testing.T, p int, opts RunOptions) *heldRun {
	ctx, cancel := context.WithCancel(context.Background())
	r := &heldRun{in: make(chan timerCmd), processed: make(chan timerCmd, 64), fired: make(chan firedTimer, 64),
		cancel: cancel, done: make(chan error, 1)}
	j := timerJob(heldSource{ctx: ctx, in: r.in}, p, r.processed, r.fired)
	go func() {
		_, err := Run(ctx, j, opts)
		r.done <- err
	}()
	t.Cleanup(func() {
		if !r.ended {
			cancel()
			<-r.done
		}
	})
	return r
}

// send hands c to the job and waits until the function has processed it.
func (r *heldRun) send(t *testing.T, c timerCmd) {
	t.Helper()
	select {
	case r.in <- c:
	case err := <-r.done:
		r.ended = true
		t.Fatalf("the job ended: %v", err)
	}
	select {
	case <-r.processed:
	case <-time.After(waitLimit):
		t.Fatalf("command %+v not processed after %v", c, waitLimit)
	}
}

// next waits for the next timer to fire.
func (r *heldRun) next(t *testing.T) firedTimer {
	t.Helper()
	select {
	case f := <-r.fired:
		return f
	case <-time.After(waitLimit):
		t.Fatalf("no timer fired within %v", waitLimit)
		return firedTimer{}
	}
}

// expect waits for the timers want to fire, in that order.
func (r *heldRun) expect(t *testing.T, want ...firedTimer) {
	t.Helper()
	for _, w := range want {
		if f := r.next(t); f != w {
			t.Fatalf("timer %+v fired, want %+v", f, w)
		}
	}
}

// quiet fails if a timer fires within many ticks of the runtime.
func (r *heldRun) quiet(t *testing.T) {
	t.Helper()
	select {
	case f := <-r.fired:
		t.Fatalf("timer %+v fired before the clock reached it", f)
	case <-time.After(20 * processingTimeTick):
	}
}

// finish ends the input and waits for the job to end.
func (r *heldRun) finish(t *testing.T) {
	t.Helper()
	close(r.in)
	select {
	case err := <-r.done:
		r.ended = true
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLimit):
		t.Fatalf("the job did not end within %v of the end of its input", waitLimit)
	}
	select {
	case f := <-r.fired:
		t.Fatalf("timer %+v fired at the end of the job", f)
	default:
	}
}

// With an injected clock, processing-time timers fire in (time, key) order
// once the clock reaches them, with no input arriving, and a deleted timer
// never fires.
func TestProcessingTimeTimersFollowTheInjectedClock(t *testing.T) {
	for _, backend := range []BackendKind{Heap, Pebble} {
		t.Run(string(backend), func(t *testing.T) {
			clock := state.NewManualClock(1000)
			r := startTimerJob(t, 1, RunOptions{Backend: backend, ProcessingTime: ClockTime(clock)})
			for _, c := range []timerCmd{
				{Key: "a", Register: 1500}, {Key: "b", Register: 1300}, {Key: "f", Register: 1250},
				{Key: "c", Register: 1200}, {Key: "d", Register: 1800}, {Key: "e", Register: 1250},
				{Key: "a", Delete: 1500},
			} {
				r.send(t, c)
			}
			r.quiet(t)
			clock.Set(1260)
			r.expect(t, firedTimer{"c", 1200}, firedTimer{"e", 1250}, firedTimer{"f", 1250})
			r.quiet(t)
			clock.Set(1799)
			r.expect(t, firedTimer{"b", 1300})
			r.quiet(t)
			clock.Set(1800)
			r.expect(t, firedTimer{"d", 1800})
			r.finish(t)
		})
	}
}

// Processing-time timers are keyed state: a savepoint holds them in its
// processing-time timer service, and a job restored from it, on the other
// backend and at another parallelism, fires them once its clock reaches
// them.
func TestProcessingTimeTimersSurviveASavepoint(t *testing.T) {
	for _, backends := range [][2]BackendKind{{Heap, Pebble}, {Pebble, Heap}} {
		t.Run(fmt.Sprintf("%s-to-%s", backends[0], backends[1]), func(t *testing.T) {
			cmds := []timerCmd{
				{Key: "a", Register: 5000}, {Key: "b", Register: 6000}, {Key: "c", Register: 7000},
				{Key: "b", Delete: 6000}, {Key: "d", Register: 5000},
			}
			in := make(chan timerCmd, len(cmds))
			for _, c := range cmds {
				in <- c
			}
			processed, fired := make(chan timerCmd, len(cmds)), make(chan firedTimer, len(cmds))
			sp := filepath.Join(t.TempDir(), "sp")
			_, err := Run(context.Background(), timerJob(heldSource{ctx: context.Background(), in: in}, 1, processed, fired), RunOptions{
				Backend: backends[0], ProcessingTime: ClockTime(state.NewManualClock(1000)), StopAfter: int64(len(cmds)), SavepointDir: sp,
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(fired) != 0 {
				t.Fatalf("a timer fired before the clock reached it: %+v", <-fired)
			}

			spr := sptest.Open(t, sp)
			var saved []firedTimer
			for _, e := range sptest.Timers(t, spr, "timers", ProcessingTimeTimers) {
				saved = append(saved, firedTimer{Key: string(e.Key), TS: e.Timestamp})
			}
			slices.SortFunc(saved, func(x, y firedTimer) int { return cmp.Or(cmp.Compare(x.TS, y.TS), cmp.Compare(x.Key, y.Key)) })
			if want := []firedTimer{{"a", 5000}, {"d", 5000}, {"c", 7000}}; !slices.Equal(saved, want) {
				t.Fatalf("the savepoint holds processing-time timers %+v, want %+v", saved, want)
			}
			if n := len(sptest.Timers(t, spr, "timers", EventTimeTimers)); n != 0 {
				t.Fatalf("%d event-time timers in the savepoint, want none", n)
			}

			clock := state.NewManualClock(1000)
			r := startTimerJob(t, 2, RunOptions{Backend: backends[1], ProcessingTime: ClockTime(clock), RestoreFrom: sp})
			clock.Set(4999)
			r.quiet(t)
			clock.Set(5000)
			// The two keys may be on different subtasks.
			got := []firedTimer{r.next(t), r.next(t)}
			slices.SortFunc(got, func(x, y firedTimer) int { return cmp.Compare(x.Key, y.Key) })
			if want := []firedTimer{{"a", 5000}, {"d", 5000}}; !slices.Equal(got, want) {
				t.Fatalf("at 5000, timers %+v fired, want %+v", got, want)
			}
			r.quiet(t)
			clock.Set(9000)
			r.expect(t, firedTimer{"c", 7000})
			r.finish(t)
		})
	}
}

// Cancelling a job whose keyed subtasks wait on an injected clock stops it.
func TestCancelWithAnInjectedClock(t *testing.T) {
	clock := state.NewManualClock(1000)
	r := startTimerJob(t, 2, RunOptions{ProcessingTime: ClockTime(clock)})
	r.send(t, timerCmd{Key: "a", Register: 2000})
	r.cancel()
	select {
	case err := <-r.done:
		r.ended = true
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(waitLimit):
		t.Fatalf("the job did not stop within %v of the cancellation", waitLimit)
	}
}

// echoAfter emits each event's time when an event-time timer 5 ms after it
// fires.
type echoAfter struct{ NoOpen }

func (echoAfter) ProcessElement(ctx *Context[string, int64], e testEvent) error {
	return ctx.RegisterEventTimeTimer(e.TS + 5)
}

func (echoAfter) OnTimer(ctx *Context[string, int64], info TimerInfo) error {
	return ctx.Emit(info.Timestamp - 5)
}

// A savepoint taken after every input ended (a bounded job's end, or a
// drain) holds the largest watermark. A job restored from it to read more
// input starts its event time again, as Flink, which keeps no watermark,
// does: its timers fire. They never did when the restored subtasks started
// at the end of time.
func TestTimersFireAfterRestoringADrainedSavepoint(t *testing.T) {
	job := func(n int, sink Sink[int64]) *Job {
		j := NewJob("echo", DefaultParallelism(2))
		events := FromSource(j, testSource{splits: 2, n: n, keys: 5}, Watermarks{Every: 4}, UID("events"))
		out := Process(KeyBy(events, func(e testEvent) string { return e.Key }, serializers.String()),
			func() KeyedProcessFunction[string, testEvent, int64] { return echoAfter{} }, UID("echo"))
		ToSink(out, sink, UID("sink"))
		return j
	}
	for _, backend := range []BackendKind{Heap, Pebble} {
		sp := filepath.Join(t.TempDir(), "sp")
		first, second := NewCollectSink[int64](), NewCollectSink[int64]()
		if _, err := Run(context.Background(), job(100, first), RunOptions{Backend: backend, ProcessingTime: DeterministicTime, SavepointDir: sp}); err != nil {
			t.Fatal(err)
		}
		if _, err := Run(context.Background(), job(200, second), RunOptions{Backend: backend, ProcessingTime: DeterministicTime, RestoreFrom: sp}); err != nil {
			t.Fatal(err)
		}
		// Event i of split s is at i*10+s: the second run reads 100 to 199.
		if got := len(second.Values()); got != 200 || len(first.Values()) != 200 {
			t.Errorf("%s: %d timers fired before the savepoint, %d after it; want 200 each", backend, len(first.Values()), got)
		}
		if i := slices.IndexFunc(second.Values(), func(ts int64) bool { return ts < 1000 }); i >= 0 {
			t.Errorf("%s: the restored run fired a timer of event time %d, before its input", backend, second.Values()[i])
		}
	}
}
