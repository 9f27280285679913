package sptest

import (
	"bytes"
	"cmp"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// Files returns the contents of every file under dir, by slash-separated
// relative path.
func Files(t testing.TB, dir string) map[string][]byte {
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

// DataFiles returns Files of the savepoint in dir but its metadata file:
// the files that a rewrite which changes only the metadata copies as they
// are.
func DataFiles(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := Files(t, dir)
	delete(out, snapshotfmt.MetadataName)
	return out
}

// SameFiles fails the test unless dirs a and b hold the same files with the
// same bytes, and a holds at least one. It reports every difference.
func SameFiles(t testing.TB, a, b string) {
	t.Helper()
	fa, fb := Files(t, a), Files(t, b)
	if len(fa) == 0 {
		t.Fatalf("%s is empty", a)
	}
	for name, ba := range fa {
		bb, ok := fb[name]
		switch {
		case !ok:
			t.Errorf("%s is in %s but not in %s", name, a, b)
		case !bytes.Equal(ba, bb):
			t.Errorf("%s differs between %s and %s (%d and %d bytes)", name, a, b, len(ba), len(bb))
		}
	}
	for name := range fb {
		if _, ok := fa[name]; !ok {
			t.Errorf("%s is in %s but not in %s", name, b, a)
		}
	}
}

// Flipped copies the savepoint in into a temporary directory and flips one
// byte in the middle of its largest segment, which it returns with the
// copy's directory: a reader of the copy fails in that segment's file and
// key group.
func Flipped(t testing.TB, in string) (string, savepoint.Segment) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "flipped")
	if err := os.CopyFS(dir, os.DirFS(in)); err != nil {
		t.Fatal(err)
	}
	segs, err := savepoint.AllSegments(t.Context(), Open(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	big := slices.MaxFunc(segs, func(a, b savepoint.Segment) int { return cmp.Compare(a.Length, b.Length) })
	f, err := os.OpenFile(filepath.Join(dir, big.File), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	at := big.Offset + big.Length/2
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
	return dir, big
}

// NotByContent returns the names of the files of want (by their paths in
// an output on disk) that objs, a bucket prefix read back, does not hold
// with the same bytes under their content names (storage.NameByContent),
// or that listed, the sizes a marker gives by name, does not list with
// their size.
func NotByContent(want, objs map[string][]byte, listed map[string]int64) []string {
	var out []string
	for name, b := range want {
		ext := path.Ext(name)
		named := storage.NameByContent(strings.TrimSuffix(name, ext), storage.ContentSum(b), ext)
		if listed[named] != int64(len(b)) || !bytes.Equal(objs[named], b) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
