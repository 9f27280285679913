//go:build unix

package bootstrap_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/bootstrap"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/internal/workdir/workdirtest"
)

// A bootstrap removes from --spill-dir the work directory that a killed
// bootstrap left there, and keeps that of a live one.
func TestSpillDirOfKilledRunIsRemoved(t *testing.T) {
	m := sptest.Open(t, "../testdata/savepoints/v2/sessions-p2-heap").Metadata()
	spill := t.TempDir()
	dead, live := workdirtest.Plant(t, spill, "stateproc-bootstrap-")
	b, err := bootstrap.New(manifestOf(m), bootstrap.Options{Out: filepath.Join(t.TempDir(), "out"), SpillDir: spill})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	workdirtest.CheckSwept(t, dead, live)
	if left, err := os.ReadDir(spill); err != nil || len(left) != 1 {
		t.Errorf("the spill directory holds %d entries, want the live run's: %v", len(left), err)
	}
}
