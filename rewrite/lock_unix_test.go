//go:build unix && !solaris && !aix

package rewrite

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// One rewrite at a time writes a target; the lock goes with the process
// or with Close.
func TestLockIsExclusive(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lock")
	l, err := lockTarget(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockTarget(path); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second lock: %v, want ErrBusy", err)
	}
	if err := l.release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the lock file is left: %v", err)
	}
	l2, err := lockTarget(path)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.release()
}
