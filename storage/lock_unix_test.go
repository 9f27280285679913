//go:build unix && !solaris && !aix

package storage_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/storage"
)

// One holder at a time has a lock; the lock goes with the process or
// with Release, and its file with Release.
func TestLockIsExclusive(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lock")
	l, err := storage.LockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s:%d", host, os.Getpid())
	if _, err := storage.LockFile(path); !errors.Is(err, storage.ErrHeld) || !strings.Contains(err.Error(), "held by "+holder) {
		t.Fatalf("a second lock: %v, want ErrHeld naming the holder, %s", err, holder)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the lock file is left: %v", err)
	}
	l2, err := storage.LockFile(path)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.Release()
}
