package gateway

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/compat"
	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/evolve"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/rewrite"
)

// OpenRequest v2: a savepoint of the v1 job restores into the v2 job both
// as it is, the engine migrating `open` values as it restores them, and
// after stateproc migrate; either way the job ends with the totals of an
// uninterrupted run.
func TestOpenSchemaV2(t *testing.T) {
	defer UseOpenSchema("v1")
	dir := t.TempDir()
	cfg := Config{Seed: 8, Events: 16000, Parallelism: 2, MaxParallelism: 128}
	src, err := NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	whole := engine.NewCollectSink[TenantTotal]()
	run(t, cfg, Sinks{Totals: whole}, engine.RunOptions{Backend: engine.Heap, StopAfter: src.Events(), Drain: true})
	first := engine.NewCollectSink[TenantTotal]()
	mid, migrated := filepath.Join(dir, "mid"), filepath.Join(dir, "migrated")
	run(t, cfg, Sinks{Totals: first}, engine.RunOptions{Backend: engine.Heap, StopAfter: 9001, SavepointDir: mid})

	if err := UseOpenSchema("v2"); err != nil {
		t.Fatal(err)
	}
	j, err := Build(cfg, src, src.Prices(), Sinks{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := j.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	tg, err := evolve.JobTarget(m)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := evolve.Migrate(context.Background(), sptest.Open(t, mid), mid, tg, evolve.MigrateOptions{}, rewrite.Options{Out: migrated})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range rep.Items {
		want := compat.AsIs
		if it.Name == OpenState {
			want = compat.AfterMigration
		}
		if it.Verdict != want {
			t.Fatalf("%s %s %s: %v: %s", it.Operator, it.What, it.Name, it.Verdict, it.Reason)
		}
		if it.Name == OpenState && (it.Migrated == nil || !it.Migrated.Rewritten || it.Migrated.Entries == 0) {
			t.Fatalf("open: %+v", it.Migrated)
		}
	}
	for _, e := range sptest.Entries(t, sptest.Open(t, migrated), AssembleUID, OpenState) {
		if _, err := OpenRequestSerializer().Decode(e.Value[8:]); err != nil {
			t.Fatalf("a migrated open value does not decode with v2: %v", err)
		}
	}
	for _, from := range []string{mid, migrated} {
		second := engine.NewCollectSink[TenantTotal]()
		run(t, cfg, Sinks{Totals: second}, engine.RunOptions{Backend: engine.Pebble, RestoreFrom: from, StopAfter: src.Events(), Drain: true})
		equalTotals(t, "restored into v2 from "+filepath.Base(from), append(first.Values(), second.Values()...), whole.Values())
	}
}
