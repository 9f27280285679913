package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/internal/sptest"
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
		sptest.SameFiles(t, filepath.Join(fresh, f.name), filepath.Join(checkedIn, f.name))
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
		for _, b := range sptest.Files(t, filepath.Join(dir, f.name)) {
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
