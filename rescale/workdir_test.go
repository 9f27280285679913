//go:build unix

package rescale_test

import (
	"context"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/internal/sptest"
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
	dead, live := plantWorkDirs(t, tmp, storage.TempPrefix+"rescale-")
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
	if _, err := os.Lstat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed run's %s is still there (%v)", dead, err)
	}
	if _, err := os.Lstat(filepath.Join(live, "spill")); err != nil {
		t.Errorf("the live run's %s was removed: %v", live, err)
	}
}

// plantWorkDirs makes in parent two work directories of prefix as runs
// leave them, each with a spill file and a lock file that names its
// holder: a killed run's, whose lock nobody holds, and a live run's, whose
// lock the test holds.
func plantWorkDirs(t *testing.T, parent, prefix string) (dead, live string) {
	t.Helper()
	dead, live = filepath.Join(parent, prefix+"1001.work"), filepath.Join(parent, prefix+"1002.work")
	for _, d := range []string{dead, live} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"spill", ".stateproc-work.lock"} {
			if err := os.WriteFile(filepath.Join(d, f), []byte("host 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	lock, err := storage.LockFile(filepath.Join(live, ".stateproc-work.lock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Release() })
	return dead, live
}
