package hostile

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestCorpusIsCurrent: testdata/hostile is what internal/hostilegen
// writes now, byte for byte and link for link.
func TestCorpusIsCurrent(t *testing.T) {
	fresh := filepath.Join(t.TempDir(), "hostile")
	if err := WriteCorpus(fresh); err != nil {
		t.Fatal(err)
	}
	checkedIn := "../../testdata/hostile"
	want, got := tree(t, fresh), tree(t, checkedIn)
	for name, w := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("%s is missing from %s: run go run ./internal/hostilegen", name, checkedIn)
		} else if !bytes.Equal(g, w) {
			t.Errorf("%s differs from what internal/hostilegen writes: run it", name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s is not part of the corpus: run go run ./internal/hostilegen", name)
		}
	}
}

// tree maps every file under root to its bytes, and every link to where
// it points.
func tree(t *testing.T, root string) map[string][]byte {
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.Type()&fs.ModeSymlink != 0 {
			link, err := os.Readlink(p)
			out[rel] = []byte("-> " + link)
			return err
		}
		b, err := os.ReadFile(p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
