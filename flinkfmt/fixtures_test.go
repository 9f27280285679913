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

// inventoryRow is one line of inventory.tsv.
type inventoryRow struct {
	dir, version, flink, backend, kind string
}

func inventory(t testing.TB) (string, []inventoryRow) {
	root := fixtureRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "inventory.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []inventoryRow
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if i == 0 || len(f) < 6 {
			continue
		}
		rows = append(rows, inventoryRow{dir: strings.TrimSuffix(f[0], "/_metadata"), version: f[2], flink: f[3], backend: f[4], kind: f[5]})
	}
	return root, rows
}
