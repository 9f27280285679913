package diff_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/diff"
	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/evolve"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway/gatewaytest"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
)

// Migrating GatewayMeter's `open` from OpenRequest v1 to v2 rewrites every
// value of it: every key and entry of `open` is changed, each keeping its
// fields and gaining cached_tokens, and nothing else differs.
func TestMigratedCopy(t *testing.T) {
	dir := t.TempDir()
	sp, migrated := filepath.Join(dir, "sp"), filepath.Join(dir, "migrated")
	cfg := gateway.Config{Seed: 11, Events: 6000, Parallelism: 2, MaxParallelism: 128}
	gatewaytest.Run(t, cfg, gateway.Sinks{}, engine.RunOptions{Backend: engine.Pebble, StopAfter: 3500, SavepointDir: sp})
	f, err := os.Open("../examples/gatewaymeter/testdata/job-v2.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := savepoint.ReadManifest(f)
	if err != nil {
		t.Fatal(err)
	}
	target, err := evolve.JobTarget(m)
	if err != nil {
		t.Fatal(err)
	}
	mrep, err := evolve.Migrate(context.Background(), open(t, sp).Source, sp, target, evolve.MigrateOptions{}, rewrite.Options{Out: migrated})
	if err != nil {
		t.Fatal(err)
	}
	var rewritten uint64
	for _, it := range mrep.Items {
		if it.Migrated != nil && it.Migrated.Rewritten {
			if it.Operator != gateway.AssembleUID || it.Name != gateway.OpenState || rewritten != 0 {
				t.Fatalf("the migration rewrote %s/%s", it.Operator, it.Name)
			}
			rewritten = it.Migrated.Entries
		}
	}
	if rewritten == 0 {
		t.Fatal("the migration rewrote nothing")
	}
	rep := compare(t, sp, migrated, diff.Options{Examples: 2})
	if !rep.Differ {
		t.Fatal("the migrated copy does not differ")
	}
	for _, s := range rep.States {
		if s.Operator == gateway.AssembleUID && s.Name == gateway.OpenState {
			if *s.Keys != (diff.Counts{Changed: s.A.Keys}) || s.Entries != (diff.Counts{Changed: s.A.Entries}) || s.A.Entries != rewritten {
				t.Errorf("open: keys %+v entries %+v, %d values migrated", *s.Keys, s.Entries, rewritten)
			}
			if !s.SerializersChanged {
				t.Error("open: the serializers did not change")
			}
			ex := s.Examples.Changed[0]
			va, _ := ex.A[0].Get("value")
			vb, _ := ex.B[0].Get("value")
			ja, jb := jsonFields(t, va), jsonFields(t, vb)
			if _, ok := jb["cached_tokens"]; !ok || len(jb) != len(ja)+1 || ja["request_id"] != ex.Key || jb["request_id"] != ex.Key {
				t.Errorf("a migrated value: %v -> %v", ja, jb)
			}
			continue
		}
		if s.Entries.Differ() || s.Entries.Unchanged != s.A.Entries || s.SerializersChanged {
			t.Errorf("%s/%s: %+v", s.Operator, s.Name, s.Entries)
		}
	}
	for _, s := range rep.OperatorStates {
		if s.Entries.Differ() || s.Entries.Unchanged == 0 {
			t.Errorf("%s/%s: %+v", s.Operator, s.Name, s.Entries)
		}
	}
	t.Logf("open: %d keys changed by the migration", rep.States[0].Keys.Changed)
}

// Two GatewayMeter savepoints at different source positions differ as the
// job's own outputs say. A request is open at a position when the source
// has started it and the job has emitted no record of it; a tenant's
// usd_total is the last running total it emitted. So `open` keys only in
// A are requests closed in between, only in B those opened and still open,
// and the rest unchanged (an open request is written once, and on
// deterministic time both runs stamp its TTL with the same watermark);
// usd_total has the tenants first billed in between only in B, and changed
// those billed again. On the wall clock the TTL stamps are when each run
// wrote them, so the requests open at both positions are changed instead:
// diff compares the stored entry, the stamp included.
func TestPositions(t *testing.T) {
	dir := t.TempDir()
	cfg := gateway.Config{Seed: 12, Events: 20000, Parallelism: 2, MaxParallelism: 128}
	src, err := gateway.NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	type position struct {
		dir    string
		open   map[string]bool
		totals map[string]int64
	}
	at := func(n int64, clock engine.ProcessingTimeMode) position {
		p := position{dir: filepath.Join(dir, fmt.Sprintf("at-%d-%v", n, clock == engine.WallClock)), totals: map[string]int64{}}
		totals, records := engine.NewCollectSink[gateway.TenantTotal](), engine.NewCollectSink[gateway.RequestRecord]()
		gatewaytest.Run(t, cfg, gateway.Sinks{Totals: totals, Records: records}, engine.RunOptions{Backend: engine.Heap, ProcessingTime: clock, StopAfter: n, SavepointDir: p.dir})
		p.open = gatewaytest.Started(t, src, n)
		for _, r := range records.Values() {
			delete(p.open, r.RequestID)
		}
		for _, tt := range totals.Values() {
			p.totals[tt.TenantID] = max(p.totals[tt.TenantID], tt.USDMicrosTotal)
		}
		return p
	}
	a, b := at(6001, engine.DeterministicTime), at(11000, engine.DeterministicTime)
	rep := compare(t, a.dir, b.dir, diff.Options{Examples: gateway.Tenants})
	if !rep.Differ {
		t.Fatal("no difference")
	}

	var want diff.Counts
	for id := range a.open {
		if b.open[id] {
			want.Unchanged++
		} else {
			want.OnlyA++
		}
	}
	for id := range b.open {
		if !a.open[id] {
			want.OnlyB++
		}
	}
	open := state(t, rep, gateway.AssembleUID, gateway.OpenState)
	if *open.Keys != want || open.Entries != want || want.OnlyA == 0 || want.OnlyB == 0 || want.Unchanged == 0 {
		t.Errorf("open: keys %+v, entries %+v, the outputs say %+v", *open.Keys, open.Entries, want)
	}
	wall := compare(t, at(6001, engine.WallClock).dir, at(11000, engine.WallClock).dir, diff.Options{})
	if w := state(t, wall, gateway.AssembleUID, gateway.OpenState); *w.Keys != (diff.Counts{OnlyA: want.OnlyA, OnlyB: want.OnlyB, Changed: want.Unchanged}) {
		t.Errorf("open on the wall clock: keys %+v, the outputs say %+v", *w.Keys, want)
	}
	for _, ex := range open.Examples.OnlyA {
		if id := ex.Key.(string); !a.open[id] || b.open[id] {
			t.Errorf("open: %s is listed as only in A", id)
		}
	}
	for _, ex := range open.Examples.OnlyB {
		if id := ex.Key.(string); a.open[id] || !b.open[id] {
			t.Errorf("open: %s is listed as only in B", id)
		}
	}

	want = diff.Counts{}
	for tenant, total := range b.totals {
		switch ta, ok := a.totals[tenant]; {
		case !ok:
			want.OnlyB++
		case ta != total:
			want.Changed++
		default:
			want.Unchanged++
		}
	}
	usd := state(t, rep, gateway.TenantCostUID, gateway.USDTotalState)
	if *usd.Keys != want || usd.Entries != want || want.Changed == 0 {
		t.Errorf("usd_total: keys %+v, entries %+v, the outputs say %+v", *usd.Keys, usd.Entries, want)
	}
	got := map[string][2]any{}
	for _, ex := range usd.Examples.Changed {
		va, _ := ex.A[0].Get("value")
		vb, _ := ex.B[0].Get("value")
		got[ex.Key.(string)] = [2]any{va, vb}
	}
	wantValues := map[string][2]any{}
	for tenant, total := range b.totals {
		if ta, ok := a.totals[tenant]; ok && ta != total {
			wantValues[tenant] = [2]any{ta, total}
		}
	}
	if !maps.Equal(got, wantValues) {
		t.Errorf("usd_total: the changed totals are %v, the outputs say %v", got, wantValues)
	}
	// Timers and pending records are counted consistently with each side.
	for _, s := range rep.States {
		if s.Entries.OnlyA+s.Entries.Changed+s.Entries.Unchanged != s.A.Entries || s.Entries.OnlyB+s.Entries.Changed+s.Entries.Unchanged != s.B.Entries {
			t.Errorf("%s/%s: %+v against %d and %d entries", s.Operator, s.Name, s.Entries, s.A.Entries, s.B.Entries)
		}
	}
	t.Logf("open: %+v; usd_total: %+v", *open.Keys, *usd.Keys)
}

// jsonFields renders a decoded record as its JSON members.
func jsonFields(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return out
}
