package window

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/prunettl"
	"github.com/stateproc/stateproc/rescale"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/serializers"
)

// unevenSource reads its splits at uneven speeds: split s sleeps a
// millisecond every 100*(s+1) records, so that splits, and the subtasks
// that read them, run apart.
type unevenSource struct{ source }

func (s unevenSource) Open(ctx context.Context, split int, offset int64) (engine.SplitReader[event], error) {
	return &unevenReader{reader{s: s.source, split: split, i: int(offset)}}, nil
}

type unevenReader struct{ reader }

func (r *unevenReader) Next(ctx context.Context) (event, int64, bool, error) {
	e, ts, ok, err := r.reader.Next(ctx)
	if ok && r.i%(100*(r.split+1)) == 0 {
		time.Sleep(time.Millisecond)
	}
	return e, ts, ok, err
}

func restoreJob(src engine.Source[event], p, maxP int, a Assigner, f fnKind, sink engine.Sink[result]) *engine.Job {
	j := engine.NewJob("windows", engine.DefaultParallelism(p))
	events := engine.FromSource(j, src, engine.Watermarks{Every: 16, OutOfOrderness: 50 * time.Millisecond}, engine.UID("events"))
	ws := Of(engine.KeyBy(events, keyOf, serializers.String()), a)
	out := apply(ws, f, engine.UID("windows"), engine.MaxParallelism(maxP))
	engine.ToSink(out, sink, engine.UID("sink"))
	return j
}

// A job stopped mid-window and restored at another parallelism on the
// other backend, directly, after a rescale to another max parallelism, or
// after prune-ttl, emits with the first run what an uninterrupted run
// emits, each window exactly once.
func TestRestoreMidWindow(t *testing.T) {
	src := unevenSource{source{splits: 6, n: 1200, keys: 17}}
	stop := int64(src.splits*src.n) / 2
	n := 0
	for _, k := range eventTimeKinds {
		for _, f := range fnKinds {
			// Each combination once, from either backend to the other.
			first, second := backends[n%2], backends[(n+1)%2]
			n++
			t.Run(fmt.Sprintf("%s/%s/%s-to-%s", k.name, f, first, second), func(t *testing.T) {
				whole := engine.NewCollectSink[result]()
				if _, err := engine.Run(context.Background(), restoreJob(src, 2, 128, k.a, f, whole), engine.RunOptions{Backend: first}); err != nil {
					t.Fatal(err)
				}
				want := sorted(whole.Values())
				if !slices.Equal(want, expected(k.a, src.all())) {
					t.Fatal("the uninterrupted run differs from the computation without the engine")
				}
				dir := t.TempDir()
				sp := filepath.Join(dir, "sp")
				before := engine.NewCollectSink[result]()
				if _, err := engine.Run(context.Background(), restoreJob(src, 2, 128, k.a, f, before), engine.RunOptions{Backend: first, StopAfter: stop, SavepointDir: sp}); err != nil {
					t.Fatal(err)
				}
				r := sptest.Open(t, sp)
				contents, timers := sptest.Entries(t, r, "windows", ContentsState), sptest.Timers(t, r, "windows", engine.EventTimeTimers)
				if len(contents) == 0 || len(timers) == 0 {
					t.Fatalf("the savepoint holds %d window entries and %d timers: no window was open", len(contents), len(timers))
				}
				for _, e := range append(contents, timers...) {
					if _, err := serializers.Window().Decode(e.Namespace); err != nil {
						t.Fatalf("entry of key %q: namespace: %v", e.Key, err)
					}
				}
				if k.a.Merging() && len(sptest.Entries(t, r, "windows", MergingWindowSetState)) == 0 {
					t.Fatal("the savepoint holds no merging window set")
				}

				rescaled, pruned := filepath.Join(dir, "rescaled"), filepath.Join(dir, "pruned")
				if _, err := rescale.Run(context.Background(), r, sp, rescale.Options{MaxParallelism: 256}, rewrite.Options{Out: rescaled}); err != nil {
					t.Fatal(err)
				}
				if _, err := prunettl.Run(context.Background(), r, sp, prunettl.Options{Now: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()}, rewrite.Options{Out: pruned}); err != nil {
					t.Fatal(err)
				}
				for _, from := range []struct {
					name string
					dir  string
					maxP int
				}{{"savepoint", sp, 128}, {"rescaled", rescaled, 256}, {"pruned", pruned, 128}} {
					after := engine.NewCollectSink[result]()
					if _, err := engine.Run(context.Background(), restoreJob(src, 3, from.maxP, k.a, f, after), engine.RunOptions{Backend: second, RestoreFrom: from.dir}); err != nil {
						t.Fatalf("%s: %v", from.name, err)
					}
					if len(before.Values()) == 0 || len(after.Values()) == 0 {
						t.Fatalf("restored from the %s: %d windows before the stop, %d after: the stop was not mid-stream", from.name, len(before.Values()), len(after.Values()))
					}
					if got := sorted(append(before.Values(), after.Values()...)); !slices.Equal(got, want) {
						t.Errorf("restored from the %s: %d windows with the first run, want %d", from.name, len(got), len(want))
					}
				}
			})
		}
	}
}
