package flinkfmt

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fixtureRoot returns the directory of Flink's own savepoints, beside the
// module root, or skips the test.
func fixtureRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "shared", "flink-savepoints")
	if _, err := os.Stat(filepath.Join(root, "inventory.tsv")); err != nil {
		t.Skipf("Flink savepoints not found at %s (../shared/flink-savepoints from the module root): %v", root, err)
	}
	return root
}

// fixtures lists the directories that hold a _metadata file, relative to
// the root, from inventory.tsv.
func fixtures(t testing.TB) (string, []string) {
	root := fixtureRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "inventory.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if i == 0 {
			continue
		}
		path := strings.SplitN(line, "\t", 2)[0]
		dirs = append(dirs, strings.TrimSuffix(path, "/_metadata"))
	}
	return root, dirs
}
