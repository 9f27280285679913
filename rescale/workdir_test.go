//go:build unix

package rescale_test

import (
	"context"
	"iter"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/internal/workdir/workdirtest"
	"github.com/stateproc/stateproc/rescale"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/storage"
)

// The reduce stage of a shuffled rescale sorts in the system's temporary
// directory: it removes the work directory that a killed one left there,
// and keeps that of a live one.
func TestWriteKeyGroupRemovesKilledRunsSpillDirectory(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead, live := workdirtest.Plant(t, tmp, storage.TempPrefix+"rescale-")
	in := "../testdata/savepoints/v2/gateway-p2-pebble"
	ctx := context.Background()
	sh, err := rescale.PlanShuffle(ctx, sptest.Open(t, in), in, rescale.Options{MaxParallelism: 256})
	if err != nil {
		t.Fatal(err)
	}
	d := sh.Destinations()[0]
	var none iter.Seq[[]byte] = func(func([]byte) bool) {}
	if err := sh.WriteKeyGroup(ctx, d, none, 0, rewrite.Options{Out: d.Part(filepath.Join(t.TempDir(), "out"))}); err != nil {
		t.Fatal(err)
	}
	workdirtest.CheckSwept(t, dead, live)
}
