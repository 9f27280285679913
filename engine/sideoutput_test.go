package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/serializers"
)

// splitter sends events of even time to its main output and the others, as
// their key, to the side output "odd".
type splitter struct{}

var oddTag = NewOutputTag[string]("odd")

func (splitter) Open(*OpenContext) error { return nil }

func (splitter) ProcessElement(ctx *Context[string, testEvent], e testEvent) error {
	if e.TS%2 == 0 {
		return ctx.Emit(e)
	}
	return EmitSide(ctx, oddTag, fmt.Sprintf("%s@%d", e.Key, ctx.Timestamp()))
}

func (splitter) OnTimer(*Context[string, testEvent], TimerInfo) error { return nil }

func splitJob(src testSource, p int, main *CollectSink[testEvent], side *CollectSink[string]) *Job {
	j := NewJob("split", DefaultParallelism(p))
	events := FromSource(j, src, Watermarks{Every: 16}, UID("events"))
	keyed := KeyBy(events, func(e testEvent) string { return e.Key }, serializers.String())
	out := Process(keyed, func() KeyedProcessFunction[string, testEvent, testEvent] { return splitter{} }, UID("split"))
	ToSink(out, main, UID("main"))
	if side != nil {
		ToSink(SideOutput(out, oddTag), side, UID("side"), Parallelism(1))
	}
	return j
}

func TestSideOutputCarriesWhatTheFunctionSendsThere(t *testing.T) {
	src := testSource{splits: 3, n: 2000, keys: 11}
	var wantMain []testEvent
	var wantSide []string
	for s := 0; s < src.splits; s++ {
		r := &testReader{s: src, split: s}
		for {
			e, _, ok, _ := r.Next(context.Background())
			if !ok {
				break
			}
			if e.TS%2 == 0 {
				wantMain = append(wantMain, e)
			} else {
				wantSide = append(wantSide, fmt.Sprintf("%s@%d", e.Key, e.TS))
			}
		}
	}
	byTime := func(a, b testEvent) int { return int(a.TS - b.TS) }
	slices.SortFunc(wantMain, byTime)
	slices.Sort(wantSide)
	for _, backend := range []BackendKind{Heap, Pebble} {
		t.Run(string(backend), func(t *testing.T) {
			main, side := NewCollectSink[testEvent](), NewCollectSink[string]()
			if _, err := Run(context.Background(), splitJob(src, 2, main, side), RunOptions{Backend: backend}); err != nil {
				t.Fatal(err)
			}
			gotMain, gotSide := main.Values(), side.Values()
			slices.SortFunc(gotMain, byTime)
			slices.Sort(gotSide)
			if !slices.Equal(gotMain, wantMain) {
				t.Errorf("main output: %d records, want %d", len(gotMain), len(wantMain))
			}
			if !slices.Equal(gotSide, wantSide) {
				t.Errorf("side output: %d records, want %d", len(gotSide), len(wantSide))
			}
		})
	}
	// Nobody reads the side output: its records are dropped, the main
	// output is the same.
	main := NewCollectSink[testEvent]()
	if _, err := Run(context.Background(), splitJob(src, 2, main, nil), RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := main.Values(); len(got) != len(wantMain) {
		t.Errorf("main output without a side reader: %d records, want %d", len(got), len(wantMain))
	}
}

func TestSideOutputBuildErrors(t *testing.T) {
	src := testSource{splits: 1, n: 10, keys: 2}
	j := NewJob("bad")
	events := FromSource(j, src, Watermarks{}, UID("events"))
	ToSink(SideOutput(events, oddTag), NewCollectSink[string](), UID("s1"))
	if err := j.Validate(); !errors.Is(err, ErrBuild) {
		t.Fatalf("side output of a source: err = %v, want ErrBuild", err)
	}

	j = NewJob("conflict")
	events = FromSource(j, src, Watermarks{}, UID("events"))
	keyed := KeyBy(events, func(e testEvent) string { return e.Key }, serializers.String())
	out := Process(keyed, func() KeyedProcessFunction[string, testEvent, testEvent] { return splitter{} }, UID("split"))
	ToSink(SideOutput(out, oddTag), NewCollectSink[string](), UID("s1"))
	ToSink(SideOutput(out, NewOutputTag[int64]("odd")), NewCollectSink[int64](), UID("s2"))
	if err := j.Validate(); !errors.Is(err, ErrBuild) {
		t.Fatalf("one tag id read as two types: err = %v, want ErrBuild", err)
	}
}

// voidTimers registers a timer without a namespace on an operator whose
// timers have one.
type voidTimers struct{ NoOpen }

func (voidTimers) ProcessElement(ctx *Context[string, testEvent], e testEvent) error {
	return ctx.RegisterEventTimeTimer(e.TS + 1)
}

func (voidTimers) OnTimer(*Context[string, testEvent], TimerInfo) error { return nil }

// A timer without a namespace on an operator with a TimerNamespace fails
// the job instead of storing a timer that no restore could decode.
func TestVoidTimerOnANamespacedOperatorFails(t *testing.T) {
	j := NewJob("void-timers", DefaultParallelism(2))
	events := FromSource(j, testSource{splits: 2, n: 10, keys: 3}, Watermarks{Every: 16}, UID("events"))
	keyed := KeyBy(events, func(e testEvent) string { return e.Key }, serializers.String())
	out := Process(keyed, func() KeyedProcessFunction[string, testEvent, testEvent] { return voidTimers{} },
		UID("windowish"), TimerNamespace(serializers.Window()))
	ToSink(out, NewCollectSink[testEvent](), UID("sink"))
	_, err := Run(context.Background(), j, RunOptions{})
	if err == nil || !strings.Contains(err.Error(), `"windowish"`) || !strings.Contains(err.Error(), "TimerNamespace") {
		t.Fatalf("Run: %v, want a failure naming the operator and its TimerNamespace", err)
	}
}
