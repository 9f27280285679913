package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stateproc/stateproc/serializers"
)

// pacedSource has splits of n events, one a second of event time each,
// read at different speeds: split s sleeps delay[s] before each event. With
// 4 splits on 3 subtasks, subtask 0 also reads two of them. It records the
// progress of every split as it is read, and the largest spread between
// the splits still being read.
type pacedSource struct {
	n     int
	delay []time.Duration

	mu       sync.Mutex
	progress []int64
	done     []bool
	spread   int64
}

func newPacedSource(n int, delay ...time.Duration) *pacedSource {
	return &pacedSource{n: n, delay: delay, progress: make([]int64, len(delay)), done: make([]bool, len(delay))}
}

func (s *pacedSource) Splits() int { return len(s.delay) }

func (s *pacedSource) Open(ctx context.Context, split int, offset int64) (SplitReader[testEvent], error) {
	return &pacedReader{s: s, split: split, i: int(offset)}, nil
}

func (s *pacedSource) read(split int, ts int64, end bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.progress[split], s.done[split] = ts, end
	lo, hi, open := int64(1<<62), int64(-1<<62), 0
	for i, p := range s.progress {
		if !s.done[i] {
			lo, hi, open = min(lo, p), max(hi, p), open+1
		}
	}
	if open > 1 {
		s.spread = max(s.spread, hi-lo)
	}
}

type pacedReader struct {
	s     *pacedSource
	split int
	i     int
}

func (r *pacedReader) Next(ctx context.Context) (testEvent, int64, bool, error) {
	if r.i >= r.s.n {
		r.s.read(r.split, int64(r.i)*1000, true)
		return testEvent{}, 0, false, nil
	}
	time.Sleep(r.s.delay[r.split])
	ts := int64(r.i) * 1000
	r.i++
	r.s.read(r.split, ts, false)
	return testEvent{Key: fmt.Sprintf("k%d", r.i%5), TS: ts}, ts, true, nil
}

func discardJob(src Source[testEvent], wm Watermarks, p int) *Job {
	j := NewJob("paced", DefaultParallelism(p))
	in := FromSource(j, src, wm, UID("events"))
	ToSink(Process(KeyBy(in, func(e testEvent) string { return e.Key }, serializers.String()),
		ProcessFunc(func(*Context[string, struct{}], testEvent) error { return nil }),
		UID("nop"), MaxParallelism(128)), NewCollectSink[struct{}](), UID("sink"))
	return j
}

// Source subtasks in one alignment group stay within the group's drift of
// each other in event time, however unevenly their splits are read: here
// the splits of subtask 0 are read at a fifth of the speed of the others'.
// Without the group, the fast subtasks run far ahead.
func TestWatermarkAlignmentBoundsTheSkew(t *testing.T) {
	const drift, every = 20_000, 4
	slow, fast := 500*time.Microsecond, 100*time.Microsecond
	// A subtask may read up to a watermark interval past the point it
	// published, on each of its splits, before it checks its drift again.
	bound := int64(drift + 2*every*1000)
	for _, mode := range []ProcessingTimeMode{WallClock, DeterministicTime} {
		t.Run(mode.String(), func(t *testing.T) {
			free := newPacedSource(400, slow, fast, fast, slow)
			if _, err := Run(context.Background(), discardJob(free, Watermarks{Every: every}, 3), RunOptions{ProcessingTime: mode}); err != nil {
				t.Fatal(err)
			}
			aligned := newPacedSource(400, slow, fast, fast, slow)
			wm := Watermarks{Every: every, AlignmentGroup: "input", MaxDrift: time.Duration(drift) * time.Millisecond}
			if _, err := Run(context.Background(), discardJob(aligned, wm, 3), RunOptions{ProcessingTime: mode}); err != nil {
				t.Fatal(err)
			}
			if aligned.spread > bound {
				t.Errorf("aligned: the splits drifted %d ms apart, the bound is %d", aligned.spread, bound)
			}
			if mode == WallClock && free.spread < 3*bound {
				// Under DeterministicTime the gates' order holds the fast
				// subtasks back anyway, by as much as the channels buffer.
				t.Errorf("unaligned: the splits drifted only %d ms apart: the test does not show the alignment", free.spread)
			}
			t.Logf("largest spread: %d ms aligned, %d ms without", aligned.spread, free.spread)
		})
	}
}

// quietSource has two splits: split 0 holds events at 0, 10, 20, ... ms,
// read a few milliseconds apart so that it is still being read when split 1
// goes idle; split 1 returns ErrNothingAvailable until release is closed,
// and then ends.
type quietSource struct {
	n       int
	release chan struct{}
}

func (s quietSource) Splits() int { return 2 }

func (s quietSource) Open(ctx context.Context, split int, offset int64) (SplitReader[testEvent], error) {
	if split == 1 {
		return quietReader{s.release}, nil
	}
	return &slowSliceReader{sliceReader{s: s.events(), i: int(offset)}}, nil
}

type slowSliceReader struct{ sliceReader }

func (r *slowSliceReader) Next(ctx context.Context) (testEvent, int64, bool, error) {
	time.Sleep(2 * time.Millisecond)
	return r.sliceReader.Next(ctx)
}

func (s quietSource) events() sliceSource {
	var out sliceSource
	for i := range s.n {
		out = append(out, testEvent{Key: fmt.Sprintf("k%d", i%3), TS: int64(i * 10)})
	}
	return out
}

type quietReader struct{ release chan struct{} }

func (r quietReader) Next(ctx context.Context) (testEvent, int64, bool, error) {
	select {
	case <-r.release:
		return testEvent{}, 0, false, nil
	default:
		return testEvent{}, 0, false, ErrNothingAvailable
	}
}

// firedTimers sets an event-time timer at the time of every record and
// counts those that fire.
type firedTimers struct {
	NoOpen
	fired *atomic.Int64
}

func (f firedTimers) ProcessElement(ctx *Context[string, struct{}], e testEvent) error {
	return ctx.RegisterEventTimeTimer(e.TS)
}

func (f firedTimers) OnTimer(*Context[string, struct{}], TimerInfo) error {
	f.fired.Add(1)
	return nil
}

// A split that has nothing to read holds the watermark back until it has
// been idle for IdleTimeout; then the timers the other split's events set
// fire while it is still idle. That holds for a split beside an active one
// in one source subtask, and for a source subtask whose splits are all
// idle. (A subtask whose other splits have all ended goes idle itself: its
// watermark stays where it was.)
func TestIdleSplitDoesNotHoldTheWatermark(t *testing.T) {
	for _, p := range []int{1, 2} {
		for _, timeout := range []time.Duration{0, 20 * time.Millisecond} {
			t.Run(fmt.Sprintf("p%d/idle-after-%v", p, timeout), func(t *testing.T) {
				const n = 50
				src := quietSource{n: n, release: make(chan struct{})}
				var fired atomic.Int64
				j := NewJob("idle", DefaultParallelism(p))
				in := FromSource(j, src, Watermarks{Every: 1, IdleTimeout: timeout}, UID("events"))
				ToSink(Process(KeyBy(in, func(e testEvent) string { return e.Key }, serializers.String()),
					func() KeyedProcessFunction[string, testEvent, struct{}] { return firedTimers{fired: &fired} },
					UID("timers"), MaxParallelism(128)), NewCollectSink[struct{}](), UID("sink"))
				done := make(chan error, 1)
				go func() {
					_, err := Run(context.Background(), j, RunOptions{})
					done <- err
				}()
				// Every timer but the last, which waits for an event after
				// it, can fire once the idle split stops holding back.
				deadline := time.Now().Add(waitLimit)
				for fired.Load() < n-1 && time.Now().Before(deadline) && timeout > 0 {
					time.Sleep(time.Millisecond)
				}
				if timeout == 0 {
					time.Sleep(50 * time.Millisecond)
				}
				got := fired.Load()
				close(src.release)
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				switch {
				case timeout > 0 && got < n-1:
					t.Errorf("%d of %d timers fired while split 1 was idle", got, n-1)
				case timeout == 0 && got != 0:
					t.Errorf("%d timers fired while split 1, never marked idle, held the watermark back", got)
				}
				if fired.Load() != n {
					t.Errorf("%d of %d timers fired by the end", fired.Load(), n)
				}
			})
		}
	}
}

// processingTimes records the processing time of every call.
type processingTimes struct {
	NoOpen
	mu  *sync.Mutex
	log *[]int64
}

func (p processingTimes) ProcessElement(ctx *Context[string, traced], e testEvent) error {
	p.mu.Lock()
	*p.log = append(*p.log, ctx.CurrentProcessingTime())
	p.mu.Unlock()
	return ctx.RegisterEventTimeTimer(e.TS + 100)
}

func (p processingTimes) OnTimer(ctx *Context[string, traced], t TimerInfo) error {
	return ctx.Emit(traced{Timer: true, Key: ctx.Key(), TS: t.Timestamp, Watermark: ctx.CurrentWatermark()})
}

// One record dated far ahead moves its split's watermark, and with it
// deterministic processing time, by no more than MaxAdvance: the timers
// behind it fire as the records after it come, not all at once.
func TestMaxAdvanceBoundsOneFutureRecord(t *testing.T) {
	const maxAdvance, future = 500, 1_000_000_000
	var events sliceSource
	for i := range 200 {
		events = append(events, testEvent{Key: fmt.Sprintf("k%d", i%4), TS: int64(i * 10)})
		if i == 100 {
			events = append(events, testEvent{Key: "typo", TS: future})
		}
	}
	for _, bound := range []int64{0, maxAdvance} {
		t.Run(fmt.Sprintf("max-advance-%d", bound), func(t *testing.T) {
			var mu sync.Mutex
			var times []int64
			j := NewJob("advance")
			in := FromSource(j, events, Watermarks{Every: 1, MaxAdvance: time.Duration(bound) * time.Millisecond}, UID("events"))
			out := Process(KeyBy(in, func(e testEvent) string { return e.Key }, serializers.String()),
				func() KeyedProcessFunction[string, testEvent, traced] { return processingTimes{mu: &mu, log: &times} },
				UID("trace"), MaxParallelism(128))
			sink := NewCollectSink[traced]()
			ToSink(out, sink, UID("sink"))
			if _, err := Run(context.Background(), j, RunOptions{ProcessingTime: DeterministicTime}); err != nil {
				t.Fatal(err)
			}
			early := 0
			for _, tr := range sink.Values() {
				if tr.Key != "typo" && tr.Watermark != MaxWatermark && tr.Watermark > tr.TS+maxAdvance {
					early++
				}
			}
			latest := times[len(times)-1]
			switch {
			case bound == 0 && (early == 0 || latest < future/2):
				t.Errorf("without a bound, the future record fired %d timers early and left processing time at %d: the test shows nothing", early, latest)
			case bound > 0 && early != 0:
				t.Errorf("%d timers fired with the watermark beyond them by more than %d ms", early, maxAdvance)
			case bound > 0 && latest > 200*10+bound:
				t.Errorf("processing time reached %d, beyond the last ordinary record (%d) plus the bound", latest, 200*10)
			}
		})
	}
}

func TestWatermarkOptionsAreChecked(t *testing.T) {
	for _, wm := range []Watermarks{{OutOfOrderness: -1}, {MaxAdvance: -1}, {IdleTimeout: -time.Second}, {MaxDrift: 10}, {AlignmentGroup: "g", MaxDrift: -1}} {
		j := discardJob(newPacedSource(1, 0), wm, 1)
		if _, err := Run(context.Background(), j, RunOptions{}); !errors.Is(err, ErrBuild) {
			t.Errorf("%+v: %v, want a build error", wm, err)
		}
	}
}
