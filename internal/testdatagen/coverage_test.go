package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// The set covers what the toolkit's tests need: both backends, several
// parallelisms, a max parallelism above 128, TTL entries, pending timers,
// operator state and broadcast state; tiny has them all.
func TestFixturesCoverTheFeatures(t *testing.T) {
	dir := t.TempDir()
	if err := generateAll(context.Background(), dir, io.Discard); err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, f := range fixtures {
		r, err := snapshotfmt.Open(context.Background(), storage.LocalDir(filepath.Join(dir, f.name)))
		if err != nil {
			t.Fatal(err)
		}
		has := map[string]bool{"backend " + string(f.backend): true}
		for i, op := range r.Metadata().Operators {
			if op.Keyed() {
				has[fmt.Sprintf("parallelism %d", op.Parallelism)] = true
				has["max parallelism above 128"] = has["max parallelism above 128"] || op.MaxParallelism > 128
			}
			for _, seg := range sptest.OperatorSegments(t, r, i) {
				switch {
				case seg.Entries == 0:
				case seg.Ref.Timer:
					has["timers"] = true
				case op.States[seg.Ref.State].TTL != nil:
					has["TTL entries"] = true
				}
			}
			for _, s := range op.OperatorStates {
				for _, sub := range s.Subtasks {
					has["operator state"] = has["operator state"] || len(sub) > 0
				}
			}
			for _, b := range op.BroadcastStates {
				has["broadcast state"] = has["broadcast state"] || len(b.Entries) > 0
			}
		}
		r.Close()
		if f.name == "tiny" {
			for _, want := range []string{"timers", "TTL entries", "operator state", "broadcast state"} {
				if !has[want] {
					t.Errorf("tiny lacks %s", want)
				}
			}
		}
		for k := range has {
			covered[k] = true
		}
	}
	for _, want := range []string{"backend " + string(engine.Heap), "backend " + string(engine.Pebble), "parallelism 1", "parallelism 2", "parallelism 3",
		"max parallelism above 128", "timers", "TTL entries", "operator state", "broadcast state"} {
		if !covered[want] {
			t.Errorf("no fixture has %s", want)
		}
	}
}
