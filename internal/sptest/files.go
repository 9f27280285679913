package sptest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/snapshotfmt"
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
