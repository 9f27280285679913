package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/serializers"
)

// testEvent is what the test source emits.
type testEvent struct {
	Key string
	TS  int64
}

// testSource has splits of n events each; event i of split s has key
// k<(i*7+s)%keys> and time i*10+s, in order within the split.
type testSource struct {
	splits, n, keys int
}

func (s testSource) Splits() int { return s.splits }

func (s testSource) Open(ctx context.Context, split int, offset int64) (SplitReader[testEvent], error) {
	return &testReader{s: s, split: split, i: int(offset)}, nil
}

type testReader struct {
	s     testSource
	split int
	i     int
}

func (r *testReader) Next(ctx context.Context) (testEvent, int64, bool, error) {
	if r.i >= r.s.n {
		return testEvent{}, 0, false, nil
	}
	e := testEvent{Key: fmt.Sprintf("k%d", (r.i*7+r.split)%r.s.keys), TS: int64(r.i*10 + r.split)}
	r.i++
	return e, e.TS, true, nil
}

// windowCount counts events per key in tumbling windows of 1000 ms and
// emits the count when the watermark passes the window's end.
type windowCount struct {
	counts state.MapState[int64, int64]
}

type windowResult struct {
	Key   string
	End   int64
	Count int64
}

var countDesc = state.NewMap("counts", serializers.Int64(), serializers.Int64())

func (w *windowCount) Open(ctx *OpenContext) error {
	var err error
	w.counts, err = GetMap(ctx, countDesc)
	return err
}

func (w *windowCount) ProcessElement(ctx *Context[string, windowResult], e testEvent) error {
	end := e.TS/1000*1000 + 999
	n, _, err := w.counts.Get(end)
	if err != nil {
		return err
	}
	if err := w.counts.Put(end, n+1); err != nil {
		return err
	}
	return ctx.RegisterEventTimeTimer(end)
}

func (w *windowCount) OnTimer(ctx *Context[string, windowResult], t TimerInfo) error {
	n, ok, err := w.counts.Get(t.Timestamp)
	if err != nil || !ok {
		return err
	}
	if err := ctx.Emit(windowResult{Key: ctx.Key(), End: t.Timestamp, Count: n}); err != nil {
		return err
	}
	return w.counts.Remove(t.Timestamp)
}

func countJob(src testSource, p int, sink Sink[windowResult]) *Job {
	j := NewJob("window-count", DefaultParallelism(p))
	events := FromSource(j, src, Watermarks{Every: 16}, UID("events"))
	keyed := KeyBy(events, func(e testEvent) string { return e.Key }, serializers.String())
	counts := Process(keyed, func() KeyedProcessFunction[string, testEvent, windowResult] { return &windowCount{} },
		UID("count"), WithState(countDesc), MaxParallelism(128))
	ToSink(counts, sink, UID("sink"))
	return j
}

// expectedCounts computes the job's output without the engine.
func expectedCounts(src testSource) []windowResult {
	m := map[[2]any]int64{}
	for s := 0; s < src.splits; s++ {
		r := &testReader{s: src, split: s}
		for {
			e, _, ok, _ := r.Next(context.Background())
			if !ok {
				break
			}
			m[[2]any{e.Key, e.TS/1000*1000 + 999}]++
		}
	}
	var out []windowResult
	for k, n := range m {
		out = append(out, windowResult{Key: k[0].(string), End: k[1].(int64), Count: n})
	}
	return sortResults(out)
}

func sortResults(rs []windowResult) []windowResult {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b windowResult) int {
		if a.Key != b.Key {
			if a.Key < b.Key {
				return -1
			}
			return 1
		}
		return int(a.End - b.End)
	})
	return rs
}

func TestRunToEndMatchesExpected(t *testing.T) {
	src := testSource{splits: 4, n: 3000, keys: 37}
	for _, backend := range []BackendKind{Heap, Pebble} {
		for _, p := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/p%d", backend, p), func(t *testing.T) {
				sink := NewCollectSink[windowResult]()
				if _, err := Run(context.Background(), countJob(src, p, sink), RunOptions{Backend: backend}); err != nil {
					t.Fatal(err)
				}
				got, want := sortResults(sink.Values()), expectedCounts(src)
				if !slices.Equal(got, want) {
					t.Fatalf("got %d results, want %d; first got %v want %v", len(got), len(want), got[:min(3, len(got))], want[:3])
				}
			})
		}
	}
}

func TestStopRestoreAtOtherParallelismAndBackend(t *testing.T) {
	src := testSource{splits: 4, n: 3000, keys: 37}
	dir := t.TempDir()
	sp := filepath.Join(dir, "sp")
	first := NewCollectSink[windowResult]()
	if _, err := Run(context.Background(), countJob(src, 2, first), RunOptions{Backend: Heap, StopAfter: 5000, SavepointDir: sp}); err != nil {
		t.Fatal(err)
	}
	second := NewCollectSink[windowResult]()
	if _, err := Run(context.Background(), countJob(src, 5, second), RunOptions{Backend: Pebble, RestoreFrom: sp}); err != nil {
		t.Fatal(err)
	}
	got := sortResults(append(first.Values(), second.Values()...))
	if want := expectedCounts(src); !slices.Equal(got, want) {
		t.Fatalf("stop and restore: got %d results, want %d", len(got), len(want))
	}
}

func TestSavepointsAreDeterministic(t *testing.T) {
	src := testSource{splits: 4, n: 3000, keys: 37}
	for _, p := range []int{1, 2, 4} {
		var dirs []string
		for run := 0; run < 2; run++ {
			sp := filepath.Join(t.TempDir(), "sp")
			if _, err := Run(context.Background(), countJob(src, p, NewCollectSink[windowResult]()), RunOptions{Backend: Pebble, ProcessingTime: DeterministicTime, StopAfter: 7001, SavepointDir: sp}); err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, sp)
		}
		sptest.SameFiles(t, dirs[0], dirs[1])
		if t.Failed() {
			t.Fatalf("parallelism %d: two runs gave different savepoints", p)
		}
	}
}
