package rescale_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/rescale"
	"github.com/stateproc/stateproc/rewrite"
)

// A rescale reports progress that only grows, one call at a time, through
// both passes over its re-bucketed operators and the copy of the others,
// and ends at the bytes of the input's segments: each re-bucketed byte is
// counted once, part when partitioned and the rest when written, whatever
// order the workers finish the buckets in; and on the direct path, which
// reads a segment once per new key group it feeds (256) or merges several
// (64), each segment's bytes once in all.
func TestRescaleReportsProgress(t *testing.T) {
	for _, maxP := range []int{720, 256, 64} {
		t.Run(fmt.Sprint(maxP), func(t *testing.T) { testRescaleReportsProgress(t, maxP) })
	}
}

func testRescaleReportsProgress(t *testing.T, maxP int) {
	in := generate(t, spgen.Config{Seed: 2, Users: 3000, Accounts: 500, Parallelism: 2, MaxParallelism: 128, Now: now})
	src := sptest.Open(t, in)
	var want int64
	for op := range src.Metadata().Operators {
		for _, s := range sptest.OperatorSegments(t, src, op) {
			want += s.Length
		}
	}
	var inside atomic.Bool
	var calls int
	var last, total int64
	progress := func(done, all int64) {
		if inside.Swap(true) {
			t.Error("the progress callback was called by two workers at once")
		}
		defer inside.Store(false)
		if done <= last || done > all || (calls > 0 && all != total) {
			t.Errorf("call %d: %d of %d after %d of %d", calls, done, all, last, total)
		}
		calls++
		last, total = done, all
	}
	// A small memory budget makes many buckets, written by three workers.
	opts := rescale.Options{MaxParallelism: maxP, Parallelism: 5, Workers: 3, Memory: 1 << 20}
	out := filepath.Join(t.TempDir(), "out")
	if _, err := rescale.Run(context.Background(), src, in, opts, rewrite.Options{Out: out, Progress: progress}); err != nil {
		t.Fatal(err)
	}
	if last != want || total != want {
		t.Fatalf("progress ended at %d of %d, want %d of %d", last, total, want, want)
	}
	sptest.Open(t, out)
}
