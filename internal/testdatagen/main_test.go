package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The checked-in savepoints are what the generator writes today, byte for
// byte: a change to the example jobs, the engine or the format that changes
// them must regenerate them (go generate ./internal/testdatagen) on purpose.
func TestCheckedInSavepointsAreUpToDate(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	checkedIn := defaultDir(root)
	if _, err := os.Stat(checkedIn); os.IsNotExist(err) {
		t.Skipf("%s is absent: generate it with go run ./internal/testdatagen", checkedIn)
	}
	fresh := t.TempDir()
	if err := generateAll(context.Background(), fresh, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, f := range fixtures {
		want, got := files(t, filepath.Join(checkedIn, f.name)), files(t, filepath.Join(fresh, f.name))
		for name, b := range got {
			if w, ok := want[name]; !ok {
				t.Errorf("%s/%s is generated but not checked in", f.name, name)
			} else if !bytes.Equal(w, b) {
				t.Errorf("%s/%s: the checked-in file differs from the generated one (%d and %d bytes)", f.name, name, len(w), len(b))
			}
		}
		for name := range want {
			if _, ok := got[name]; !ok {
				t.Errorf("%s/%s is checked in but no longer generated", f.name, name)
			}
		}
	}
}

// Every fixture is small, tiny fits in 16 KiB, and the set stays within a
// few MiB.
func TestFixtureSizes(t *testing.T) {
	dir := t.TempDir()
	if err := generateAll(context.Background(), dir, io.Discard); err != nil {
		t.Fatal(err)
	}
	var all int
	for _, f := range fixtures {
		var size int
		for _, b := range files(t, filepath.Join(dir, f.name)) {
			size += len(b)
		}
		all += size
		if f.name == "tiny" && size > 16<<10 {
			t.Errorf("tiny is %d bytes, more than 16 KiB", size)
		}
	}
	if all > 4<<20 {
		t.Errorf("the fixtures take %d bytes, more than 4 MiB", all)
	}
}

// files returns every file under dir by slash-separated relative path.
func files(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
