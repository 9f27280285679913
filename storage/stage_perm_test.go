package storage

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A published savepoint has the permissions the umask gives a new
// directory, not the 0700 of a private temporary one.
func TestStagedDirectoryFollowsTheUmask(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	target := filepath.Join(t.TempDir(), "sp")
	st, err := Stage(target, false)
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.Create(context.Background(), "_metadata")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Publish(context.Background()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o755 {
		t.Errorf("published savepoint has mode %v, want 0755 under umask 022", got)
	}
}
