package gateway

import (
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/serializers"
)

// A job stopped mid-stream with a savepoint at parallelism 2 on the heap and
// restored at parallelism 5 on Pebble produces, in its two runs, what an
// uninterrupted run produces (the same totals and the same request records),
// and ends with the same state.
func TestRescaleOnRestore(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Seed: 8, Events: 16000, Parallelism: 2, MaxParallelism: 128}
	src, err := NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}

	whole, wholeRecords := engine.NewCollectSink[TenantTotal](), engine.NewCollectSink[RequestRecord]()
	run(t, cfg, Sinks{Totals: whole, Records: wholeRecords}, engine.RunOptions{Backend: engine.Heap, StopAfter: src.Events(), Drain: true,
		SavepointDir: filepath.Join(dir, "whole-final")})

	first, second := engine.NewCollectSink[TenantTotal](), engine.NewCollectSink[TenantTotal]()
	firstRecords, secondRecords := engine.NewCollectSink[RequestRecord](), engine.NewCollectSink[RequestRecord]()
	mid := filepath.Join(dir, "mid")
	run(t, cfg, Sinks{Totals: first, Records: firstRecords}, engine.RunOptions{Backend: engine.Heap, StopAfter: 9001, SavepointDir: mid})
	if len(sptest.Timers(t, sptest.Open(t, mid), AssembleUID, engine.EventTimeTimers)) == 0 {
		t.Fatal("the mid-stream savepoint has no pending timers: the restore does not exercise them")
	}
	rescaled := cfg
	rescaled.Parallelism = 5
	run(t, rescaled, Sinks{Totals: second, Records: secondRecords}, engine.RunOptions{Backend: engine.Pebble, RestoreFrom: mid, StopAfter: src.Events(), Drain: true,
		SavepointDir: filepath.Join(dir, "restored-final")})

	equalTotals(t, "stop and restore", append(first.Values(), second.Values()...), whole.Values())
	equalTotals(t, "uninterrupted", whole.Values(), src.ExpectedTotals())
	if len(firstRecords.Values()) == 0 || len(secondRecords.Values()) == 0 {
		t.Fatalf("%d records before the savepoint and %d after: both runs must emit some", len(firstRecords.Values()), len(secondRecords.Values()))
	}
	equalRecords(t, "stop and restore", append(firstRecords.Values(), secondRecords.Values()...), wholeRecords.Values())
	if n := int64(len(wholeRecords.Values())); n != src.Requests() {
		t.Fatalf("uninterrupted: %d records for %d requests", n, src.Requests())
	}
	a, b := sptest.Open(t, filepath.Join(dir, "whole-final")), sptest.Open(t, filepath.Join(dir, "restored-final"))
	sptest.EqualKeyedState(t, a, b)

	// Each tenant's usd_total is its last running total.
	want := map[string]int64{}
	for _, tt := range src.ExpectedTotals() {
		want[tt.TenantID] = tt.USDMicrosTotal
	}
	got := map[string]int64{}
	for _, e := range sptest.Entries(t, b, TenantCostUID, USDTotalState) {
		v, err := serializers.Int64().Decode(e.Value)
		if err != nil {
			t.Fatal(err)
		}
		got[string(e.Key)] = v
	}
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("usd_total for %d tenants, want %d", len(got), len(want))
	}
	for tenant, v := range want {
		if got[tenant] != v {
			t.Errorf("usd_total of %s: %d, want %d", tenant, got[tenant], v)
		}
	}
}
