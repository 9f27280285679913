//go:build unix

package bootstrap_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/bootstrap"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/storage"
)

// A bootstrap removes from --spill-dir the work directory that a killed
// bootstrap left there, and keeps that of a live one.
func TestSpillDirOfKilledRunIsRemoved(t *testing.T) {
	m := sptest.Open(t, "../testdata/savepoints/v2/sessions-p2-heap").Metadata()
	spill := t.TempDir()
	dead, live := plantWorkDirs(t, spill, "stateproc-bootstrap-")
	b, err := bootstrap.New(manifestOf(m), bootstrap.Options{Out: filepath.Join(t.TempDir(), "out"), SpillDir: spill})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed run's %s is still there (%v)", dead, err)
	}
	if _, err := os.Lstat(filepath.Join(live, "spill")); err != nil {
		t.Errorf("the live run's %s was removed: %v", live, err)
	}
	if left, err := os.ReadDir(spill); err != nil || len(left) != 1 {
		t.Errorf("the spill directory holds %d entries, want the live run's: %v", len(left), err)
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
