package engine

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stateproc/stateproc/serializers"
)

// sliceSource has one split holding its events in the given order.
type sliceSource []testEvent

func (s sliceSource) Splits() int { return 1 }

func (s sliceSource) Open(ctx context.Context, _ int, offset int64) (SplitReader[testEvent], error) {
	return &sliceReader{s: s, i: int(offset)}, nil
}

type sliceReader struct {
	s sliceSource
	i int
}

func (r *sliceReader) Next(ctx context.Context) (testEvent, int64, bool, error) {
	if r.i >= len(r.s) {
		return testEvent{}, 0, false, nil
	}
	e := r.s[r.i]
	r.i++
	return e, e.TS, true, nil
}

// traced is a step of eventTimeTrace: a record processed or a timer fired,
// with the operator's watermark at that moment.
type traced struct {
	Timer     bool
	Key       string
	TS        int64
	Watermark int64
}

// eventTimeTrace sets an event-time timer at the time of every record and
// emits a step for every record and every timer.
type eventTimeTrace struct{ NoOpen }

func (eventTimeTrace) ProcessElement(ctx *Context[string, traced], e testEvent) error {
	if err := ctx.Emit(traced{Key: ctx.Key(), TS: e.TS, Watermark: ctx.CurrentWatermark()}); err != nil {
		return err
	}
	return ctx.RegisterEventTimeTimer(e.TS)
}

func (eventTimeTrace) OnTimer(ctx *Context[string, traced], t TimerInfo) error {
	return ctx.Emit(traced{Timer: true, Key: ctx.Key(), TS: t.Timestamp, Watermark: ctx.CurrentWatermark()})
}

// expectedTrace is what eventTimeTrace emits over events by the engine's
// rules: after each record the watermark is the largest event time read
// minus the bound, minus one; when it advances, the timers at or before it
// fire in (time, key) order; the end of the input advances it to
// MaxWatermark.
func expectedTrace(events []testEvent, bound int64) []traced {
	type timer struct {
		key string
		ts  int64
	}
	var out []traced
	pending := map[timer]bool{}
	watermark, highest := int64(MinWatermark), int64(MinWatermark)
	advance := func(to int64) {
		watermark = to
		var due []timer
		for tm := range pending {
			if tm.ts <= watermark {
				due = append(due, tm)
			}
		}
		slices.SortFunc(due, func(a, b timer) int { return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.key, b.key)) })
		for _, tm := range due {
			out = append(out, traced{Timer: true, Key: tm.key, TS: tm.ts, Watermark: watermark})
			delete(pending, tm)
		}
	}
	for _, e := range events {
		out = append(out, traced{Key: e.Key, TS: e.TS, Watermark: watermark})
		pending[timer{e.Key, e.TS}] = true
		highest = max(highest, e.TS)
		if w := highest - bound - 1; w > watermark {
			advance(w)
		}
	}
	advance(MaxWatermark)
	return out
}

// With a bound on out-of-orderness, event-time timers fire exactly when the
// watermark, the largest event time read minus the bound minus one, reaches
// them. An event that lags by the bound is on time; one that lags further
// is late: it still reaches the function, behind the watermark, and its
// timer fires at the next advance of the watermark.
func TestBoundedOutOfOrderness(t *testing.T) {
	const bound = 50
	// Event i is due at 10*i and arrives up to bound+10 ms late, so that it
	// lags behind the largest time before it by at most bound.
	var events []testEvent
	highest := int64(MinWatermark)
	for i := range 400 {
		e := testEvent{Key: []string{"k0", "k1", "k2"}[i%3], TS: int64(10*i + i*37%(bound+11))}
		events = append(events, e)
		highest = max(highest, e.TS)
		if i == 200 {
			events = append(events,
				testEvent{Key: "on-time", TS: highest - bound},
				testEvent{Key: "late", TS: highest - bound - 1},
				testEvent{Key: "late", TS: highest - 5*bound})
		}
	}
	shuffled := 0
	highest = MinWatermark
	for _, e := range events {
		if e.TS < highest {
			shuffled++
		}
		highest = max(highest, e.TS)
	}
	if shuffled < len(events)/4 {
		t.Fatalf("only %d of %d events arrive out of order", shuffled, len(events))
	}
	want := expectedTrace(events, bound)

	for _, backend := range []BackendKind{Heap, Pebble} {
		t.Run(string(backend), func(t *testing.T) {
			j := NewJob("event-time-trace")
			in := FromSource(j, sliceSource(events), Watermarks{OutOfOrderness: time.Duration(bound) * time.Millisecond, Every: 1}, UID("events"))
			out := Process(KeyBy(in, func(e testEvent) string { return e.Key }, serializers.String()),
				func() KeyedProcessFunction[string, testEvent, traced] { return eventTimeTrace{} },
				UID("trace"), MaxParallelism(128))
			sink := NewCollectSink[traced]()
			ToSink(out, sink, UID("sink"))
			if _, err := Run(context.Background(), j, RunOptions{Backend: backend}); err != nil {
				t.Fatal(err)
			}
			got := sink.Values()

			midStream := 0
			for _, s := range got {
				switch {
				case s.Timer && s.TS > s.Watermark:
					t.Fatalf("timer %+v fired before the watermark reached it", s)
				case s.Timer && s.Watermark != MaxWatermark:
					midStream++
				case !s.Timer && s.Key != "late" && s.TS <= s.Watermark:
					t.Fatalf("record %+v within the bound arrived behind the watermark", s)
				case !s.Timer && s.Key == "late" && s.TS > s.Watermark:
					t.Fatalf("record %+v, beyond the bound, arrived ahead of the watermark", s)
				}
			}
			if midStream < len(events)/2 {
				t.Fatalf("%d timers fired before the end of the input, want most of %d", midStream, len(events))
			}
			if len(got) != len(want) {
				t.Fatalf("%d steps, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("step %d: %+v, want %+v", i, got[i], want[i])
				}
			}
		})
	}
}
