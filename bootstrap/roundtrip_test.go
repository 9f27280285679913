package bootstrap_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/bootstrap"
	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/rewrite"
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
				t.Logf("%d rows, %d spilled", sum.Rows, sum.Spilled)
			})
		}
	}
}

// The sort spills runs to files when the entries do not fit its memory,
// and the savepoint is the same, whatever the memory and the workers.
func TestSpilled(t *testing.T) {
	sp := "../testdata/savepoints/v1/sessions-p2-heap"
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
		if sum.Spilled < 10 {
			t.Errorf("%d workers: %d runs spilled, want many", workers, sum.Spilled)
		}
		if got, want := sptest.DataFiles(t, out), sptest.DataFiles(t, sp); !maps.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("%d workers: data files differ", workers)
		}
		if left, _ := os.ReadDir(parent); len(left) != 1 {
			t.Errorf("%d workers: %d entries beside the target, want only the savepoint", workers, len(left))
		}
	}
}
