package savepoint_test

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/savepoint"
)

// A walk that starts its segments ahead gives every segment the entries
// SegmentEntries gives, on workers that take them in order, and a walk
// left after a few segments closes what it started ahead and leaves no
// goroutine behind.
func TestStartAheadGivesEverySegment(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "sp")
	if err := spgen.Write(dir, spgen.Config{Seed: 3, Users: 200, Accounts: 20, Parallelism: 2, MaxParallelism: 64, Now: 1_700_000_000_000}); err != nil {
		t.Fatal(err)
	}
	src := sptest.Open(t, dir)
	segs, err := savepoint.AllSegments(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 20 {
		t.Fatalf("%d segments, want many", len(segs))
	}
	for _, depth := range []int{1, 3, 100} {
		got := make([][]savepoint.Entry, len(segs))
		w := savepoint.StartAhead(ctx, src, segs, depth)
		err := workers.Run(ctx, len(segs), 3, func(ctx context.Context, _, i int) error {
			it := w.Entries(ctx, i)
			defer it.Close()
			for it.Next() {
				e := *it.Entry()
				e.Key, e.Namespace, e.MapKey, e.Value = slices.Clone(e.Key), slices.Clone(e.Namespace), slices.Clone(e.MapKey), slices.Clone(e.Value)
				got[i] = append(got[i], e)
			}
			return it.Err()
		})
		w.Close()
		if err != nil {
			t.Fatalf("depth %d: %v", depth, err)
		}
		for i, seg := range segs {
			want := sptest.SegmentEntries(t, src, seg)
			if len(got[i]) != len(want) || len(want) == 0 {
				t.Fatalf("depth %d, segment %d: %d entries, want %d", depth, i, len(got[i]), len(want))
			}
			for j := range want {
				if string(got[i][j].Key) != string(want[j].Key) || string(got[i][j].Value) != string(want[j].Value) || string(got[i][j].MapKey) != string(want[j].MapKey) {
					t.Fatalf("depth %d, segment %d, entry %d differs", depth, i, j)
				}
			}
		}
	}
	before := runtime.NumGoroutine()
	w := savepoint.StartAhead(ctx, src, segs, 8)
	for i := range 3 {
		it := w.Entries(ctx, i)
		if !it.Next() {
			t.Fatalf("segment %d: no entry: %v", i, it.Err())
		}
		it.Close()
	}
	w.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the walk was closed, %d before", n, before)
	}
}
