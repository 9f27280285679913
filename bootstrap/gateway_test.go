package bootstrap_test

import (
	"bytes"
	"fmt"
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
	"github.com/stateproc/stateproc/serializers"
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

// A fix-up through a query engine: the export of a GatewayMeter savepoint
// is rewritten by DuckDB (its own Parquet types: timestamps in
// microseconds, enums as strings, key_group left out) with one tenant's
// usd_total corrected, and bootstrapped. The savepoint holds the same state
// but for that value.
func TestDuckDBFixUp(t *testing.T) {
	sp := "../testdata/savepoints/v2/gateway-p2-pebble"
	orig := sptest.Open(t, sp)
	exported := exportTo(t, sp, export.Options{})
	dump := filepath.Join(t.TempDir(), "dump")
	datasets, err := filepath.Glob(filepath.Join(exported, "*", "*"))
	if err != nil || len(datasets) == 0 {
		t.Fatalf("no datasets: %v", err)
	}
	const tenant = "tenant-100"
	m := orig.Metadata()
	keyed := 0
	for _, ds := range datasets {
		rel, _ := filepath.Rel(exported, ds)
		q := fmt.Sprintf("SELECT * FROM read_parquet('%s/*.parquet')", ds)
		// Only the keyed states and timer services have a key_group column;
		// the operator states (the engine's subtask-clock among them) and
		// the broadcast prices of the same operators do not.
		if hasKeyGroups(m, filepath.Dir(rel), filepath.Base(rel)) {
			q = fmt.Sprintf("SELECT * EXCLUDE (key_group) FROM read_parquet('%s/*.parquet')", ds)
			keyed++
		}
		if rel == gateway.TenantCostUID+"/"+gateway.USDTotalState {
			q = fmt.Sprintf("SELECT key, CASE WHEN key = '%s' THEN value + 1 ELSE value END AS value FROM (%s)", tenant, q)
		}
		duckParquet(t, dump, filepath.Join(rel, "part-0.parquet"), q)
	}
	if keyed == 0 {
		t.Fatal("no dataset with key groups: the fix-up does not exercise leaving them out")
	}
	out := filepath.Join(t.TempDir(), "fixed")
	if _, err := load(t, savepoint.NewManifest("gatewaymeter", m.Operators), dump, bootstrap.Options{Out: out, Now: m.CreatedAt}); err != nil {
		t.Fatal(err)
	}
	got, want := sptest.KeyedState(t, sptest.Open(t, out)), sptest.KeyedState(t, orig)
	usd := gateway.TenantCostUID + "/" + gateway.USDTotalState
	changed := 0
	for i, e := range want[usd] {
		g := got[usd][i]
		if string(e.Key) != string(g.Key) {
			t.Fatalf("usd_total entry %d: key %s, want %s", i, g.Key, e.Key)
		}
		if string(e.Key) == tenant {
			v, _ := serializers.Int64().Decode(e.Value)
			if w, _ := serializers.Int64().Decode(g.Value); w != v+1 {
				t.Errorf("%s: usd_total %d, want %d", tenant, w, v+1)
			}
			changed++
			continue
		}
		if !bytes.Equal(e.Value, g.Value) {
			t.Errorf("usd_total of %s changed", e.Key)
		}
	}
	if changed != 1 {
		t.Fatalf("%s found %d times", tenant, changed)
	}
	delete(got, usd)
	delete(want, usd)
	if !maps.EqualFunc(got, want, func(a, b []savepoint.Entry) bool {
		return slices.EqualFunc(a, b, func(x, y savepoint.Entry) bool {
			return bytes.Equal(x.Key, y.Key) && bytes.Equal(x.Namespace, y.Namespace) && bytes.Equal(x.MapKey, y.MapKey) && bytes.Equal(x.Value, y.Value) && x.Timestamp == y.Timestamp
		})
	}) {
		t.Fatal("the other states differ")
	}
	equalOperatorState(t, orig, sptest.Open(t, out))
}

// hasKeyGroups reports whether the dataset of operator uid called name is a
// keyed state or a timer service, the data that lives per key group.
func hasKeyGroups(m *savepoint.Metadata, uid, name string) bool {
	for i := range m.Operators {
		if m.Operators[i].UID == uid {
			_, ok := m.Find(i, name)
			return ok
		}
	}
	return false
}
