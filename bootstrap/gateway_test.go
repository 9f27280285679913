package bootstrap_test

import (
	"bytes"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/bootstrap"
	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway/gatewaytest"
	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/savepoint"
)

// gatewayManifest is the manifest of the GatewayMeter build of cfg.
func gatewayManifest(t *testing.T, cfg gateway.Config) savepoint.Manifest {
	t.Helper()
	src, err := gateway.NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	j, err := gateway.Build(cfg, src, src.Prices(), gateway.Sinks{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := j.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// GatewayMeter stopped mid-stream without draining, its savepoint exported
// to Parquet and bootstrapped from the export with the job's manifest,
// restores at another parallelism on the other backend; the outputs of the
// two runs are those of an uninterrupted run, and so is the final state.
// The bootstrapped savepoint's data files are the engine's, byte for byte.
func TestGatewayBootstrappedRestores(t *testing.T) {
	dir := t.TempDir()
	cfg := gateway.Config{Seed: 8, Events: 16000, Parallelism: 2, MaxParallelism: 128}
	src, err := gateway.NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wholeTotals, wholeRecords := engine.NewCollectSink[gateway.TenantTotal](), engine.NewCollectSink[gateway.RequestRecord]()
	gatewaytest.Run(t, cfg, gateway.Sinks{Totals: wholeTotals, Records: wholeRecords},
		engine.RunOptions{Backend: engine.Pebble, StopAfter: src.Events(), Drain: true, SavepointDir: filepath.Join(dir, "whole-final")})

	firstTotals, firstRecords := engine.NewCollectSink[gateway.TenantTotal](), engine.NewCollectSink[gateway.RequestRecord]()
	mid := filepath.Join(dir, "mid")
	gatewaytest.Run(t, cfg, gateway.Sinks{Totals: firstTotals, Records: firstRecords},
		engine.RunOptions{Backend: engine.Pebble, StopAfter: 9001, SavepointDir: mid})
	orig := sptest.Open(t, mid)
	if len(sptest.Timers(t, orig, gateway.AssembleUID, engine.EventTimeTimers)) == 0 || len(sptest.Entries(t, orig, gateway.TenantCostUID, "pending")) == 0 {
		t.Fatal("the savepoint has no pending timers or records: the restore does not exercise them")
	}

	exported := exportTo(t, mid, export.Options{})
	boot := filepath.Join(dir, "bootstrapped")
	m := orig.Metadata()
	sum, err := load(t, gatewayManifest(t, cfg), exported, bootstrap.Options{Out: boot, Now: m.CreatedAt, ID: m.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sptest.DataFiles(t, boot), sptest.DataFiles(t, mid); !maps.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("data files differ: %v vs %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	t.Logf("bootstrapped %d rows", sum.Rows)

	restored := cfg
	restored.Parallelism = 3
	secondTotals, secondRecords := engine.NewCollectSink[gateway.TenantTotal](), engine.NewCollectSink[gateway.RequestRecord]()
	gatewaytest.Run(t, restored, gateway.Sinks{Totals: secondTotals, Records: secondRecords},
		engine.RunOptions{Backend: engine.Heap, RestoreFrom: boot, StopAfter: src.Events(), Drain: true, SavepointDir: filepath.Join(dir, "restored-final")})
	if len(secondTotals.Values()) == 0 || len(secondRecords.Values()) == 0 {
		t.Fatal("the restored run emitted nothing")
	}
	if got, want := gatewaytest.Sorted(firstTotals.Values(), secondTotals.Values()), gatewaytest.Sorted(wholeTotals.Values()); !slices.Equal(got, want) {
		t.Fatalf("tenant totals: %d, want %d", len(got), len(want))
	}
	if got, want := gatewaytest.Sorted(firstRecords.Values(), secondRecords.Values()), gatewaytest.Sorted(wholeRecords.Values()); !slices.Equal(got, want) {
		t.Fatalf("request records: %d, want %d", len(got), len(want))
	}
	final, whole := sptest.Open(t, filepath.Join(dir, "restored-final")), sptest.Open(t, filepath.Join(dir, "whole-final"))
	if got, want := sptest.Contents(t, final), sptest.Contents(t, whole); !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatal("the final state differs from the uninterrupted run's")
	}
}
