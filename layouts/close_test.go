package layouts_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/savepoint"
)

// A savepoint on disk opened and closed leaves no descriptor open: the
// directory its reader holds is closed with the source, or as soon as the
// source no longer reads through it.
func TestClosedSourcesHoldNoDirectory(t *testing.T) {
	openFDs := func() int {
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("no /proc/self/fd to count descriptors in: %v", err)
		}
		return len(entries)
	}
	paths := []string{"../testdata/savepoints/v2/gateway-p2-pebble"}
	flink := filepath.Join("../../shared/flink-savepoints", "flink-end-to-end-tests/flink-state-evolution-test/savepoints/1.7")
	if _, err := os.Stat(filepath.Join(flink, savepoint.MetadataFile)); err == nil {
		paths = append(paths, flink)
	}
	openAndClose := func() {
		for _, p := range paths {
			src, err := layouts.Open(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if err := src.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	openAndClose()
	// A descriptor left open would be closed when its os.File is
	// collected: no collection may hide it.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	before := openFDs()
	for range 20 {
		openAndClose()
	}
	if after := openFDs(); after > before {
		t.Errorf("%d descriptors open after 20 opens and closes of %v, %d before", after, paths, before)
	}
}
