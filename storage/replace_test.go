package storage

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// readAll returns the content of name in d.
func readAll(t *testing.T, d Dir, name string) (string, error) {
	t.Helper()
	f, err := d.Open(context.Background(), name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b := make([]byte, f.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return string(b), nil
}

// wantReplaced fails unless err says that the directory was replaced while
// it was read, and not that a file is missing: a reader must not take a
// forced publish for a damaged savepoint.
func wantReplaced(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrChanged) || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s = %v, want ErrChanged and not ErrNotExist", what, err)
	}
}

// A reader that read a savepoint's _metadata goes on reading that
// savepoint's files when a forced publish exchanges the directory with
// another: never those of the new savepoint, and once the old directory
// is deleted, an error that says it was replaced.
func TestReaderKeepsTheDirectoryItOpened(t *testing.T) {
	target := filepath.Join(t.TempDir(), "sp")
	stageSavepoint(t, target, "old", false)
	d := LocalDir(target)
	if got, err := readAll(t, d, MetadataName); err != nil || got != "old" {
		t.Fatalf("_metadata = %q, %v", got, err)
	}
	// Between the exchange and the removal of the old directory, its
	// files are still there to read.
	var between string
	exchangeDirs = func(a, b string) error {
		err := exchange(a, b)
		if err == nil {
			between, err = readAll(t, d, "data-000")
		}
		return err
	}
	t.Cleanup(func() { exchangeDirs = exchange })
	stageSavepoint(t, target, "new", true)
	if between != "old" {
		t.Errorf("data-000 read after the exchange holds %q, want the old savepoint's", between)
	}
	got, err := readAll(t, d, "data-000")
	if err == nil {
		t.Fatalf("data-000 read after the forced publish holds %q, want an error: the directory read was replaced", got)
	}
	wantReplaced(t, "Open after the forced publish", err)
	_, err = d.List(context.Background())
	wantReplaced(t, "List after the forced publish", err)
	// A Dir opened now reads the new savepoint.
	if got, err := readAll(t, LocalDir(target), "data-000"); err != nil || got != "new" {
		t.Fatalf("a new Dir reads %q, %v", got, err)
	}
}

// Where no exchange exists, the old directory is moved aside and then
// deleted: its reader is told as well.
func TestReaderOfADirectoryReplacedInTwoSteps(t *testing.T) {
	withoutExchange(t)
	target := filepath.Join(t.TempDir(), "sp")
	stageSavepoint(t, target, "old", false)
	d := LocalDir(target)
	if got, err := readAll(t, d, MetadataName); err != nil || got != "old" {
		t.Fatalf("_metadata = %q, %v", got, err)
	}
	stageSavepoint(t, target, "new", true)
	got, err := readAll(t, d, "data-000")
	if err == nil {
		t.Fatalf("data-000 read after the forced publish holds %q, want an error", got)
	}
	wantReplaced(t, "Open after the forced publish", err)
}

// A Sub reads within the directory its parent holds, and a listing of a
// directory that is no longer at its path fails.
func TestSubReadsTheDirectoryItsParentHolds(t *testing.T) {
	target := filepath.Join(t.TempDir(), "sp")
	writeFile(t, filepath.Join(target, "chk-1", "_metadata"), "old")
	d := LocalDir(target)
	if _, err := readAll(t, d, "chk-1/_metadata"); err != nil {
		t.Fatal(err)
	}
	aside := target + "-aside"
	if err := os.Rename(target, aside); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(target, "chk-1", "_metadata"), "new")
	sub, err := Sub(d, "chk-1")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(t, sub, "_metadata"); err != nil || got != "old" {
		t.Fatalf("Sub reads %q, %v; want the directory its parent read", got, err)
	}
	// A listing cannot tell whether the directory it read is being
	// deleted.
	_, err = Subdirs(context.Background(), d)
	wantReplaced(t, "Subdirs of a directory moved away", err)
}

// A file missing from a directory that is still in place is missing, as
// it was before the directory was held.
func TestMissingFileOfAHeldDirectoryIsNotExist(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, MetadataName), "here")
	d := LocalDir(dir)
	if _, err := readAll(t, d, MetadataName); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"data-000", "sub/data-000"} {
		_, err := d.Open(context.Background(), name)
		if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrChanged) {
			t.Errorf("Open(%q) = %v, want ErrNotExist", name, err)
		}
	}
}

// Close releases the directory, and a Dir is not used after it.
func TestLocalDirClose(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, MetadataName), "here")
	d := LocalDir(dir)
	if _, err := readAll(t, d, MetadataName); err != nil {
		t.Fatal(err)
	}
	c, ok := d.(io.Closer)
	if !ok {
		t.Fatalf("%T has no Close", d)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Open(context.Background(), MetadataName); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("Open after Close = %v, want fs.ErrClosed", err)
	}
}

// A Sub that is a symbolic link to a directory (a Flink job directory
// whose chk-N links elsewhere) is followed, as LocalDir follows its own
// path; the files inside still are not.
func TestSubFollowsALinkedDirectory(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "real-chk-5", "_metadata"), "checkpoint")
	job := filepath.Join(root, "job")
	if err := os.MkdirAll(job, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../real-chk-5", filepath.Join(job, "chk-5")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("_metadata", filepath.Join(root, "real-chk-5", "linked")); err != nil {
		t.Fatal(err)
	}
	d := LocalDir(job)
	defer d.Close()
	sub, err := Sub(d, "chk-5")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(t, sub, "_metadata"); err != nil || got != "checkpoint" {
		t.Fatalf("Sub through a linked directory reads %q, %v", got, err)
	}
	if names, err := sub.List(context.Background()); err != nil || !slices.Equal(names, []string{"_metadata"}) {
		t.Errorf("its listing: %v, %v; want _metadata alone", names, err)
	}
	if _, err := sub.Open(context.Background(), "linked"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("a linked file inside: %v, want ErrNotRegular", err)
	}
}
