//go:build unix

package flinkrewrite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/storage"
)

// A rescale removes from its spill directory the work directory that a
// killed rescale left there, and keeps that of a live one.
func TestRescaleRemovesKilledRunsSpillDirectory(t *testing.T) {
	dir, _ := sessions(t, 200, false)
	spill := t.TempDir()
	dead, live := plantWorkDirs(t, spill, storage.TempPrefix+"flink-rescale-")
	st := stage(t)
	rep, err := Rescale(context.Background(), open(t, dir), st, RescaleOptions{MaxParallelism: 256, SpillDir: spill})
	if err != nil || rep.Operators[0].Action != Rebucketed {
		t.Fatalf("%+v, %v", rep, err)
	}
	st.publish(t)
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
