package workdirtest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/internal/workdir"
	"github.com/stateproc/stateproc/storage"
)

// Plant makes in parent two work directories of prefix as runs leave
// them, each with a spill file and a lock file that names its holder: a
// killed run's, whose lock nobody holds, and a live run's, whose lock the
// test holds until it ends.
func Plant(t testing.TB, parent, prefix string) (dead, live string) {
	t.Helper()
	dead, live = filepath.Join(parent, prefix+"1001.work"), filepath.Join(parent, prefix+"1002.work")
	for _, d := range []string{dead, live} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"spill", workdir.LockName} {
			if err := os.WriteFile(filepath.Join(d, f), []byte("host 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	lock, err := storage.LockFile(filepath.Join(live, workdir.LockName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Release() })
	return dead, live
}

// CheckSwept fails t unless the killed run's directory is gone and the
// live run's still holds its spill file.
func CheckSwept(t testing.TB, dead, live string) {
	t.Helper()
	if _, err := os.Lstat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed run's %s is still there (%v)", dead, err)
	}
	if _, err := os.Lstat(filepath.Join(live, "spill")); err != nil {
		t.Errorf("the live run's %s was removed: %v", live, err)
	}
}
