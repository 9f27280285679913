package window

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/serializers"
)

var backends = []engine.BackendKind{engine.Heap, engine.Pebble}

var eventTimeKinds = []struct {
	name string
	a    Assigner
}{
	{"tumbling", TumblingEventTime(time.Second)},
	{"sliding", SlidingEventTime(time.Second, 250*time.Millisecond)},
	{"session", EventTimeSession(100 * time.Millisecond)},
}

func windowJob(src engine.Source[event], p int, a Assigner, f fnKind, sink engine.Sink[result], configure func(Stream[string, event]) Stream[string, event]) *engine.Job {
	j := engine.NewJob("windows", engine.DefaultParallelism(p))
	events := engine.FromSource(j, src, engine.Watermarks{Every: 16}, engine.UID("events"))
	ws := Of(engine.KeyBy(events, keyOf, serializers.String()), a)
	if configure != nil {
		ws = configure(ws)
	}
	out := apply(ws, f, engine.UID("windows"), engine.MaxParallelism(128))
	engine.ToSink(out, sink, engine.UID("sink"))
	return j
}

// Every event-time window kind with every function kind, on both
// backends, emits per key and window what a computation without the
// engine gives.
func TestEventTimeWindows(t *testing.T) {
	src := source{splits: 4, n: 1500, keys: 13}
	for _, k := range eventTimeKinds {
		want := expected(k.a, src.all())
		for _, f := range fnKinds {
			for _, b := range backends {
				t.Run(fmt.Sprintf("%s/%s/%s", k.name, f, b), func(t *testing.T) {
					sink := engine.NewCollectSink[result]()
					if _, err := engine.Run(context.Background(), windowJob(src, 3, k.a, f, sink, nil), engine.RunOptions{Backend: b}); err != nil {
						t.Fatal(err)
					}
					got := sorted(sink.Values())
					if !slices.Equal(got, want) {
						t.Fatalf("%d windows, want %d; first got %v, want %v", len(got), len(want), got[:min(3, len(got))], want[:min(3, len(want))])
					}
				})
			}
		}
	}
}

// lateEvents, read in order with a watermark after each, exercise the
// allowed lateness of 500 ms on one-second windows: the third record is
// late but within it (the window fires again), the fifth comes after the
// window's cleanup and goes to the side output.
var lateEvents = listSource{
	{Key: "a", TS: 100, N: 1, V: 1},
	{Key: "a", TS: 1200, N: 1, V: 2},
	{Key: "a", TS: 300, N: 1, V: 4},
	{Key: "a", TS: 1600, N: 1, V: 8},
	{Key: "a", TS: 400, N: 1, V: 16},
	{Key: "a", TS: 2500, N: 1, V: 32},
}

var lateTag = engine.NewOutputTag[event]("late")

func TestAllowedLatenessAndLateOutput(t *testing.T) {
	want := []result{
		{Key: "a", Start: 0, End: 1000, N: 1, V: 1},
		{Key: "a", Start: 0, End: 1000, N: 2, V: 5},
		{Key: "a", Start: 1000, End: 2000, N: 2, V: 10},
		{Key: "a", Start: 2000, End: 3000, N: 1, V: 32},
	}
	for _, f := range fnKinds {
		for _, b := range backends {
			t.Run(fmt.Sprintf("%s/%s", f, b), func(t *testing.T) {
				j := engine.NewJob("late", engine.DefaultParallelism(2))
				events := engine.FromSource(j, lateEvents, engine.Watermarks{Every: 1}, engine.UID("events"), engine.Parallelism(1))
				ws := Of(engine.KeyBy(events, keyOf, serializers.String()), TumblingEventTime(time.Second)).
					AllowedLateness(500 * time.Millisecond).SideOutputLateData(lateTag)
				out := apply(ws, f, engine.UID("windows"))
				sink, late := engine.NewCollectSink[result](), engine.NewCollectSink[event]()
				engine.ToSink(out, sink, engine.UID("sink"))
				engine.ToSink(engine.SideOutput(out, lateTag), late, engine.UID("late"))
				if _, err := engine.Run(context.Background(), j, engine.RunOptions{Backend: b}); err != nil {
					t.Fatal(err)
				}
				if got := sorted(sink.Values()); !slices.Equal(got, want) {
					t.Errorf("windows %v, want %v", got, want)
				}
				if got := late.Values(); !slices.Equal(got, lateEvents[4:5]) {
					t.Errorf("late output %v, want %v", got, lateEvents[4:5])
				}
			})
		}
	}
}

// Without allowed lateness both late records are dropped from the main
// output and go to the side output.
func TestLateRecordsWithoutLateness(t *testing.T) {
	j := engine.NewJob("late", engine.DefaultParallelism(2))
	events := engine.FromSource(j, lateEvents, engine.Watermarks{Every: 1}, engine.UID("events"), engine.Parallelism(1))
	ws := Of(engine.KeyBy(events, keyOf, serializers.String()), TumblingEventTime(time.Second)).SideOutputLateData(lateTag)
	out := Aggregate(ws, AggregateFunction[event, acc, acc](sums{}), accSer, engine.UID("windows"))
	sink, late := engine.NewCollectSink[acc](), engine.NewCollectSink[event]()
	engine.ToSink(out, sink, engine.UID("sink"))
	engine.ToSink(engine.SideOutput(out, lateTag), late, engine.UID("late"))
	if _, err := engine.Run(context.Background(), j, engine.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	got := sink.Values()
	slices.SortFunc(got, func(a, b acc) int { return int(a.V - b.V) })
	if want := []acc{{N: 1, V: 1}, {N: 2, V: 10}, {N: 1, V: 32}}; !slices.Equal(got, want) {
		t.Errorf("windows %v, want %v", got, want)
	}
	if got, want := late.Values(), []event{lateEvents[2], lateEvents[4]}; !slices.Equal(got, want) {
		t.Errorf("late output %v, want %v", got, want)
	}
}

// A count trigger fires every third record of a window; purging makes each
// firing hold only the records since the last. Without purging each firing
// holds them all.
func TestCountTriggerAndPurging(t *testing.T) {
	var events listSource
	for i := range 8 {
		events = append(events, event{Key: "a", TS: int64(i), N: 1, V: 1 << i})
	}
	for _, tc := range []struct {
		name string
		tr   Trigger
		want []result
	}{
		{"count", CountTrigger(3), []result{{"a", 0, 1000, 3, 7}, {"a", 0, 1000, 6, 63}}},
		{"purging", Purging(CountTrigger(3)), []result{{"a", 0, 1000, 3, 7}, {"a", 0, 1000, 3, 56}}},
	} {
		for _, f := range fnKinds {
			for _, b := range backends {
				t.Run(fmt.Sprintf("%s/%s/%s", tc.name, f, b), func(t *testing.T) {
					sink := engine.NewCollectSink[result]()
					j := windowJob(events, 2, TumblingEventTime(time.Second), f, sink, func(ws Stream[string, event]) Stream[string, event] { return ws.Trigger(tc.tr) })
					if _, err := engine.Run(context.Background(), j, engine.RunOptions{Backend: b}); err != nil {
						t.Fatal(err)
					}
					if got := sorted(sink.Values()); !slices.Equal(got, tc.want) {
						t.Errorf("got %v, want %v", got, tc.want)
					}
				})
			}
		}
	}
}

// Session windows within the allowed lateness: a late record that bridges
// two fired sessions merges them, and the merged session fires at once
// with all three records; a record after the cleanup goes to the side
// output.
func TestSessionLateness(t *testing.T) {
	events := listSource{
		{Key: "a", TS: 100, N: 1, V: 1},
		{Key: "a", TS: 400, N: 1, V: 2},
		{Key: "a", TS: 250, N: 1, V: 4},
		{Key: "a", TS: 180, N: 1, V: 8},
		{Key: "a", TS: 2000, N: 1, V: 16},
		{Key: "a", TS: 120, N: 1, V: 32},
	}
	want := sorted([]result{
		{"a", 100, 200, 1, 1}, {"a", 250, 350, 1, 4}, {"a", 100, 350, 3, 13}, {"a", 400, 500, 1, 2}, {"a", 2000, 2100, 1, 16},
	})
	for _, f := range fnKinds {
		for _, b := range backends {
			t.Run(fmt.Sprintf("%s/%s", f, b), func(t *testing.T) {
				j := engine.NewJob("late-sessions", engine.DefaultParallelism(2))
				src := engine.FromSource(j, events, engine.Watermarks{Every: 1}, engine.UID("events"), engine.Parallelism(1))
				ws := Of(engine.KeyBy(src, keyOf, serializers.String()), EventTimeSession(100*time.Millisecond)).
					AllowedLateness(500 * time.Millisecond).SideOutputLateData(lateTag)
				out := apply(ws, f, engine.UID("windows"))
				sink, late := engine.NewCollectSink[result](), engine.NewCollectSink[event]()
				engine.ToSink(out, sink, engine.UID("sink"))
				engine.ToSink(engine.SideOutput(out, lateTag), late, engine.UID("late"))
				if _, err := engine.Run(context.Background(), j, engine.RunOptions{Backend: b}); err != nil {
					t.Fatal(err)
				}
				if got := sorted(sink.Values()); !slices.Equal(got, want) {
					t.Errorf("windows %v, want %v", got, want)
				}
				if got := late.Values(); !slices.Equal(got, events[5:]) {
					t.Errorf("late output %v, want %v", got, events[5:])
				}
			})
		}
	}
}
