package bootstrap_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/bootstrap"
	"github.com/stateproc/stateproc/diff"
	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
)

func TestRoundTripCheckedIn(t *testing.T) {
	for _, sp := range checkedIn(t) {
		for _, f := range []export.Format{export.Parquet, export.Arrow, export.JSONL} {
			t.Run(fmt.Sprintf("%s/%s", filepath.Base(sp), f), func(t *testing.T) {
				orig := sptest.Open(t, sp)
				m := orig.Metadata()
				dir := exportTo(t, sp, export.Options{Format: f})
				out := filepath.Join(t.TempDir(), "bootstrapped")
				codec, err := rewrite.Codec(context.Background(), orig)
				if err != nil {
					t.Fatal(err)
				}
				zstd := codec == snapshotfmt.CodecZstd
				sum, err := load(t, manifestOf(m), dir, bootstrap.Options{Out: out, Now: m.CreatedAt, ID: m.ID, Compress: zstd})
				if err != nil {
					t.Fatal(err)
				}
				got := sptest.Open(t, out)
				sptest.EqualKeyedState(t, orig, got)
				if w := got.Metadata().Watermark; w != math.MinInt64 {
					t.Errorf("watermark %d, want none (math.MinInt64): the data passed no job", w)
				}
				rep, err := diff.Compare(context.Background(), diff.Side{Source: orig, Path: sp}, diff.Side{Source: got, Path: out}, diff.Options{Examples: 3})
				if err != nil {
					t.Fatal(err)
				}
				if rep.Differ {
					t.Errorf("diff finds a difference: %+v", rep.States)
				}
				for i, op := range m.Operators {
					gop := got.Metadata().Operators[i]
					for j, s := range op.OperatorStates {
						if !slices.EqualFunc(s.Subtasks, gop.OperatorStates[j].Subtasks, func(a, b [][]byte) bool { return slices.EqualFunc(a, b, bytes.Equal) }) {
							t.Errorf("%s: operator state %s differs: %q vs %q", op.UID, s.Name, s.Subtasks, gop.OperatorStates[j].Subtasks)
						}
					}
				}
				gotFiles, wantFiles := sptest.DataFiles(t, out), sptest.DataFiles(t, sp)
				if !maps.EqualFunc(gotFiles, wantFiles, bytes.Equal) {
					t.Errorf("data files differ: %v vs %v", slices.Sorted(maps.Keys(gotFiles)), slices.Sorted(maps.Keys(wantFiles)))
				}
				t.Logf("%d rows, %d spill bytes, %d sorted runs", sum.Rows, sum.SpillBytes, sum.Spilled)
			})
		}
	}
}

// Entries more than the sort's memory go through spill files bucket by
// bucket, and the savepoint is the same, whatever the memory and the
// workers.
func TestSpilled(t *testing.T) {
	sp := "../testdata/savepoints/v2/sessions-p2-heap"
	orig := sptest.Open(t, sp)
	m := orig.Metadata()
	dir := exportTo(t, sp, export.Options{MaxRowsPerFile: 1000})
	for _, workers := range []int{1, 3} {
		parent := t.TempDir()
		out := filepath.Join(parent, "spilled")
		sum, err := load(t, manifestOf(m), dir, bootstrap.Options{Out: out, Now: m.CreatedAt, ID: m.ID, Memory: 64 << 10, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		if sum.SpillBytes < 4*(64<<10) {
			t.Errorf("%d workers: %d bytes spilled, want more than the memory", workers, sum.SpillBytes)
		}
		if got, want := sptest.DataFiles(t, out), sptest.DataFiles(t, sp); !maps.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("%d workers: data files differ", workers)
		}
		if left, _ := os.ReadDir(parent); len(left) != 1 {
			t.Errorf("%d workers: %d entries beside the target, want only the savepoint", workers, len(left))
		}
	}
}

// A bucket of key groups larger than the sort's memory is sorted in runs
// and merged, and gives the savepoint the sort in memory gives: list
// elements spread over runs keep their order.
func TestSortedRuns(t *testing.T) {
	job := savepoint.NewManifest("runs", []savepoint.Operator{
		{UID: "op", Name: "Op", Parallelism: 1, MaxParallelism: 1, KeyHash: keygroup.Murmur3, Key: i64,
			States: []savepoint.KeyedState{
				{Name: "value", Kind: savepoint.Value, Namespace: void, Value: str},
				{Name: "log", Kind: savepoint.List, Namespace: void, Value: str},
			}},
	})
	const n = 20000
	build := func(memory int) (string, *bootstrap.Summary) {
		out := filepath.Join(t.TempDir(), "runs")
		b, err := bootstrap.New(job, bootstrap.Options{Out: out, Now: testNow, Memory: memory, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		ctx := context.Background()
		values := func(yield func(int64, string) bool) {
			for i := range int64(n) {
				if !yield(i*7919%n, fmt.Sprintf("value %06d of a key", i)) {
					return
				}
			}
		}
		if err := bootstrap.Values(ctx, b, "op", "value", values); err != nil {
			t.Fatal(err)
		}
		log := make([]string, n)
		for i := range log {
			log[i] = fmt.Sprintf("e%06d", i)
		}
		if err := bootstrap.Lists(ctx, b, "op", "log", func(yield func(int64, []string) bool) { yield(7, log) }); err != nil {
			t.Fatal(err)
		}
		sum, err := b.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return out, sum
	}
	inMemory, sum := build(0)
	if sum.Spilled != 0 {
		t.Fatalf("default memory: %d sorted runs, want none", sum.Spilled)
	}
	inRuns, sum := build(64 << 10)
	if sum.Spilled < 4 {
		t.Fatalf("64 KiB: %d sorted runs, want several", sum.Spilled)
	}
	sptest.SameFiles(t, inMemory, inRuns)
	elems := sptest.Entries(t, sptest.Open(t, inRuns), "op", "log")
	if len(elems) != n || !slices.IsSortedFunc(elems, func(a, b savepoint.Entry) int { return bytes.Compare(a.Value, b.Value) }) {
		t.Errorf("%d list elements, in order %v; want %d in order", len(elems), slices.IsSortedFunc(elems, func(a, b savepoint.Entry) int { return bytes.Compare(a.Value, b.Value) }), n)
	}
	if vals := sptest.Entries(t, sptest.Open(t, inRuns), "op", "value"); len(vals) != n {
		t.Errorf("%d values, want %d", len(vals), n)
	}
}
