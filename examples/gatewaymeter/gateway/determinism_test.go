package gateway

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/serializers"
)

// The same seed and flags give byte-identical savepoints, whatever the
// scheduling: taken mid-stream without draining, so that they hold open
// requests, pending records, timers and the price table.
func TestSavepointsAreDeterministic(t *testing.T) {
	for _, c := range []struct {
		backend engine.BackendKind
		p       int
	}{{engine.Pebble, 1}, {engine.Pebble, 2}, {engine.Pebble, 4}, {engine.Heap, 2}} {
		t.Run(fmt.Sprintf("%s/p%d", c.backend, c.p), func(t *testing.T) {
			cfg := Config{Seed: 5, Events: 12000, Parallelism: c.p, MaxParallelism: 128}
			var dirs []string
			for range 2 {
				sp := filepath.Join(t.TempDir(), "sp")
				run(t, cfg, Sinks{}, engine.RunOptions{Backend: c.backend, ProcessingTime: engine.DeterministicTime, StopAfter: 7001, SavepointDir: sp})
				dirs = append(dirs, sp)
			}
			sptest.SameFiles(t, dirs[0], dirs[1])
			r := sptest.Open(t, dirs[0])
			for _, name := range []string{OpenState, PendingState} {
				uid := AssembleUID
				if name == PendingState {
					uid = TenantCostUID
				}
				if len(sptest.Entries(t, r, uid, name)) == 0 {
					t.Errorf("the savepoint holds no %q entries: it does not exercise them", name)
				}
			}
		})
	}
}

// The heap and Pebble backends write the same bytes for the same state.
func TestBackendsWriteTheSameSavepoint(t *testing.T) {
	cfg := Config{Seed: 5, Events: 12000, Parallelism: 2, MaxParallelism: 128}
	var dirs []string
	for _, b := range []engine.BackendKind{engine.Heap, engine.Pebble} {
		sp := filepath.Join(t.TempDir(), "sp")
		run(t, cfg, Sinks{}, engine.RunOptions{Backend: b, ProcessingTime: engine.DeterministicTime, StopAfter: 7001, SavepointDir: sp})
		dirs = append(dirs, sp)
	}
	sptest.SameFiles(t, dirs[0], dirs[1])
}

// A savepoint holds the price table once, as every subtask built it, and
// the records waiting to be priced under their time.
func TestSavepointHoldsPricesAndPendingRecords(t *testing.T) {
	cfg := Config{Seed: 5, Events: 12000, Parallelism: 3, MaxParallelism: 128}
	src, err := NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sp := filepath.Join(t.TempDir(), "sp")
	run(t, cfg, Sinks{}, engine.RunOptions{Backend: engine.Heap, StopAfter: 7001, SavepointDir: sp})
	r := sptest.Open(t, sp)

	op, _ := r.Metadata().Operator(TenantCostUID)
	if len(op.BroadcastStates) != 1 {
		t.Fatalf("%d broadcast states", len(op.BroadcastStates))
	}
	want := map[string]ModelPrices{}
	for _, u := range src.PriceUpdates() {
		want[u.Model] = want[u.Model].with(u)
	}
	entries := op.BroadcastStates[0].Entries
	if len(entries) != len(want) {
		t.Fatalf("%d models in the price table, want %d", len(entries), len(want))
	}
	for _, e := range entries {
		got, err := ModelPricesSerializer().Decode(e.Value)
		if err != nil {
			t.Fatal(err)
		}
		if w := want[string(e.Key)]; got.Model != w.Model || fmt.Sprint(got.Versions) != fmt.Sprint(w.Versions) {
			t.Errorf("prices of %s: %+v, want %+v", e.Key, got, w)
		}
	}

	pending := sptest.Entries(t, r, TenantCostUID, PendingState)
	if len(pending) == 0 {
		t.Fatal("no pending records")
	}
	for _, e := range pending {
		rec, err := RequestRecordSerializer().Decode(e.Value)
		if err != nil {
			t.Fatal(err)
		}
		ts, err := serializers.Int64().Decode(e.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		if rec.TenantID != string(e.Key) || rec.TS != ts {
			t.Fatalf("pending record %+v under tenant %s, time %d", rec, e.Key, ts)
		}
	}
}
