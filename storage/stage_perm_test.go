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

// A data file named by its content, staged before its name is known, has
// the permissions the umask gives a new file, as _metadata has, not the
// 0600 of a private temporary file.
func TestNamedFileFollowsTheUmask(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	ctx := context.Background()
	target := filepath.Join(t.TempDir(), "sp")
	tg, err := OpenTarget(ctx, target, TargetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := tg.CreateNamed(ctx, "op001-00000", ".data")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("bytes")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := tg.Create(ctx, "_metadata")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tg.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{w.Name(), "_metadata"} {
		fi, err := os.Stat(filepath.Join(target, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o644 {
			t.Errorf("published %s has mode %v, want 0644 under umask 022", name, got)
		}
	}
}
