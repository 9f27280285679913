package rescale_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/rescale"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/storage"
)

// A re-bucketed operator's spill files are removed once the operator is
// written, beside the target as in a --spill-dir: the next operator's
// spill never sits beside them, so that the disk holds one operator's
// spill at a time. Progress, reported all through both passes of every
// operator, looks at what the target's directory holds.
func TestEachOperatorsSpillGoesWithIt(t *testing.T) {
	in := generate(t, spgen.Config{Seed: 3, Users: 3000, Accounts: 500, Parallelism: 2, MaxParallelism: 128, Now: now})
	src := sptest.Open(t, in)
	parent := t.TempDir()
	out := filepath.Join(parent, "out")
	most, calls := 0, 0
	progress := func(int64, int64) {
		calls++
		entries, err := os.ReadDir(parent)
		if err != nil {
			t.Error(err)
			return
		}
		holding := 0
		for _, e := range entries {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), storage.TempPrefix) {
				continue
			}
			spills, _ := filepath.Glob(filepath.Join(parent, e.Name(), "*.spill"))
			if len(spills) > 0 {
				holding++
			}
		}
		most = max(most, holding)
	}
	// A budget small enough that every keyed operator spills to files.
	opts := rescale.Options{MaxParallelism: 97, Workers: 1, Memory: 8 << 10}
	rep, err := rescale.Run(context.Background(), src, in, opts, rewrite.Options{Out: out, Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	rebucketed := 0
	for _, op := range rep.Operators {
		if op.Action == rescale.Rebucketed {
			rebucketed++
		}
	}
	if rebucketed < 2 || calls == 0 {
		t.Fatalf("%d operators re-bucketed, %d progress calls: the test needs two and some", rebucketed, calls)
	}
	if most != 1 {
		t.Errorf("at most %d spill directories held spill files at once, want 1", most)
	}
	sptest.Open(t, out)
}
