//go:build unix

package flinkrewrite

import (
	"context"
	"testing"

	"github.com/stateproc/stateproc/internal/workdir/workdirtest"
	"github.com/stateproc/stateproc/storage"
)

// A rescale removes from its spill directory the work directory that a
// killed rescale left there, and keeps that of a live one.
func TestRescaleRemovesKilledRunsSpillDirectory(t *testing.T) {
	dir, _ := sessions(t, 200, false)
	spill := t.TempDir()
	dead, live := workdirtest.Plant(t, spill, storage.TempPrefix+"flink-rescale-")
	st := stage(t)
	rep, err := Rescale(context.Background(), open(t, dir), st, RescaleOptions{MaxParallelism: 256, SpillDir: spill})
	if err != nil || rep.Operators[0].Action != Rebucketed {
		t.Fatalf("%+v, %v", rep, err)
	}
	st.publish(t)
	workdirtest.CheckSwept(t, dead, live)
}
