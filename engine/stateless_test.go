package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/serializers"
)

// statelessJob counts in windows what Filter, Map, Union and FlatMap make
// of two sources: the events of a whose time is not a multiple of 3, the
// events of b under keys prefixed "b-", and, for every key ending in 1, a
// copy under the key with "x" appended.
func statelessJob(a, b testSource, p int, sink Sink[windowResult]) *Job {
	j := NewJob("stateless", DefaultParallelism(p))
	ea := FromSource(j, a, Watermarks{Every: 16}, UID("a"))
	eb := FromSource(j, b, Watermarks{Every: 16}, UID("b"), Parallelism(1))
	kept := Filter(ea, func(_ context.Context, e testEvent) (bool, error) { return keepEvent(e), nil })
	renamed := Map(eb, func(_ context.Context, e testEvent) (testEvent, error) { return renameEvent(e), nil })
	both := FlatMap(Union(kept, renamed), func(_ context.Context, e testEvent, emit func(testEvent) error) error {
		return copyEvent(e, emit)
	})
	counts := Process(KeyBy(both, func(e testEvent) string { return e.Key }, serializers.String()),
		func() KeyedProcessFunction[string, testEvent, windowResult] { return &windowCount{} },
		UID("count"), WithState(countDesc), MaxParallelism(128))
	ToSink(counts, sink, UID("sink"))
	return j
}

func keepEvent(e testEvent) bool { return e.TS%3 != 0 }

func renameEvent(e testEvent) testEvent { return testEvent{Key: "b-" + e.Key, TS: e.TS} }

func copyEvent(e testEvent, emit func(testEvent) error) error {
	if err := emit(e); err != nil {
		return err
	}
	if strings.HasSuffix(e.Key, "1") {
		return emit(testEvent{Key: e.Key + "x", TS: e.TS})
	}
	return nil
}

// expectedStateless computes statelessJob's output without the engine.
func expectedStateless(a, b testSource) []windowResult {
	m := map[[2]any]int64{}
	count := func(e testEvent) error {
		m[[2]any{e.Key, e.TS/1000*1000 + 999}]++
		return nil
	}
	for _, src := range []testSource{a, b} {
		for s := 0; s < src.splits; s++ {
			r := &testReader{s: src, split: s}
			for {
				e, _, ok, _ := r.Next(context.Background())
				if !ok {
					break
				}
				if src == a && !keepEvent(e) {
					continue
				}
				if src == b {
					e = renameEvent(e)
				}
				copyEvent(e, count)
			}
		}
	}
	var out []windowResult
	for k, n := range m {
		out = append(out, windowResult{Key: k[0].(string), End: k[1].(int64), Count: n})
	}
	return sortResults(out)
}

// Stateless operators between sources and a keyed operator pass records,
// watermarks and barriers on: a run to the end, and a run stopped with a
// savepoint and restored at another parallelism on the other backend,
// write what the functions make of the input, under both clocks.
func TestStatelessOperators(t *testing.T) {
	a, b := testSource{splits: 4, n: 2000, keys: 23}, testSource{splits: 2, n: 1500, keys: 11}
	want := expectedStateless(a, b)
	for _, pt := range []ProcessingTimeMode{WallClock, DeterministicTime} {
		for _, backend := range []BackendKind{Heap, Pebble} {
			t.Run(fmt.Sprintf("%s/%v", backend, pt.deterministic()), func(t *testing.T) {
				whole := NewCollectSink[windowResult]()
				if _, err := Run(context.Background(), statelessJob(a, b, 3, whole), RunOptions{Backend: backend, ProcessingTime: pt}); err != nil {
					t.Fatal(err)
				}
				if got := sortResults(whole.Values()); !slices.Equal(got, want) {
					t.Fatalf("run to the end: %d results, want %d", len(got), len(want))
				}
				sp := filepath.Join(t.TempDir(), "sp")
				first, second := NewCollectSink[windowResult](), NewCollectSink[windowResult]()
				if _, err := Run(context.Background(), statelessJob(a, b, 3, first), RunOptions{Backend: backend, ProcessingTime: pt,
					StopAfter: 2500, SavepointDir: sp}); err != nil {
					t.Fatal(err)
				}
				other := Heap
				if backend == Heap {
					other = Pebble
				}
				if _, err := Run(context.Background(), statelessJob(a, b, 2, second), RunOptions{Backend: other, ProcessingTime: pt, RestoreFrom: sp}); err != nil {
					t.Fatal(err)
				}
				if len(first.Values()) == 0 || len(second.Values()) == 0 {
					t.Fatalf("%d results before the savepoint, %d after: both runs must emit some", len(first.Values()), len(second.Values()))
				}
				if got := sortResults(append(first.Values(), second.Values()...)); !slices.Equal(got, want) {
					t.Fatalf("stop and restore: %d results, want %d", len(got), len(want))
				}
			})
		}
	}
}
