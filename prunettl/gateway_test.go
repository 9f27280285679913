package prunettl_test

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway/gatewaytest"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/prunettl"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/ttl"
)

// keyedEntry is an entry of a keyed state, rendered for comparison, with
// what its first 8 bytes say, which is its last-modified time in a TTL
// state.
type keyedEntry struct {
	s            string
	lastModified int64
}

// keyedEntries returns every entry of one keyed state, sorted.
func keyedEntries(t *testing.T, r *snapshotfmt.Reader, uid, name string) []keyedEntry {
	t.Helper()
	var out []keyedEntry
	for _, e := range sptest.Entries(t, r, uid, name) {
		out = append(out, keyedEntry{fmt.Sprintf("%q %x %x %x", e.Key, e.Namespace, e.MapKey, e.Value), int64(binary.BigEndian.Uint64(e.Value))})
	}
	slices.SortFunc(out, func(a, b keyedEntry) int { return cmp.Compare(a.s, b.s) })
	return out
}

// The leak variant's savepoint holds the `open` entries of abandoned
// requests long past their TTL. prune-ttl removes exactly those; the job
// restored from the pruned savepoint and run to the end gives the outputs
// of the job restored from the savepoint as it was (nothing ever read the
// leaked entries, so removing them at runtime would not have changed an
// output either), and ends with its state minus the pruned entries.
func TestLeakPrunedRunEqualsCleanedRun(t *testing.T) {
	dir := t.TempDir()
	cfg := gateway.Config{Seed: 21, Events: 20000, Parallelism: 2, Leak: true}
	src, err := gateway.NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mid, pruned := filepath.Join(dir, "mid"), filepath.Join(dir, "pruned")
	// The leak variant's input ends with each split's last request, an hour
	// after the others: stopped before their completions, the job has
	// every abandoned request's entry past its TTL and still work to do.
	gatewaytest.Run(t, cfg, gateway.Sinks{},
		engine.RunOptions{Backend: engine.Pebble, ProcessingTime: engine.DeterministicTime, StopAfter: src.Events() - gateway.Splits, SavepointDir: mid})
	in := sptest.Open(t, mid)
	now := in.Metadata().CreatedAt
	rep, err := prunettl.Run(context.Background(), in, mid, prunettl.Options{Now: now}, rewrite.Options{Out: pruned})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.States) != 1 || rep.States[0].State != gateway.OpenState || rep.States[0].Dropped == 0 {
		t.Fatalf("report: %+v", rep.States)
	}

	// No entry past its TTL remains; what went is exactly what was expired.
	out := sptest.Open(t, pruned)
	ttlMillis := gateway.OpenTTL.Milliseconds()
	var expired []keyedEntry
	for _, e := range keyedEntries(t, in, gateway.AssembleUID, gateway.OpenState) {
		if ttl.Expired(e.lastModified, ttlMillis, now) {
			expired = append(expired, e)
		}
	}
	kept := keyedEntries(t, out, gateway.AssembleUID, gateway.OpenState)
	if uint64(len(expired)) != rep.States[0].Dropped || uint64(len(kept)) != rep.States[0].After {
		t.Fatalf("%d expired, %d dropped; %d kept, %d reported", len(expired), rep.States[0].Dropped, len(kept), rep.States[0].After)
	}
	for _, e := range kept {
		if slices.Contains(expired, e) {
			t.Fatalf("an expired entry remains: %s", e.s)
		}
	}

	wholeTotals, wholeRecords := engine.NewCollectSink[gateway.TenantTotal](), engine.NewCollectSink[gateway.RequestRecord]()
	gatewaytest.Run(t, cfg, gateway.Sinks{Totals: wholeTotals, Records: wholeRecords},
		engine.RunOptions{Backend: engine.Heap, ProcessingTime: engine.DeterministicTime, RestoreFrom: mid, StopAfter: src.Events(), SavepointDir: filepath.Join(dir, "whole-final")})
	secondTotals, secondRecords := engine.NewCollectSink[gateway.TenantTotal](), engine.NewCollectSink[gateway.RequestRecord]()
	gatewaytest.Run(t, cfg, gateway.Sinks{Totals: secondTotals, Records: secondRecords},
		engine.RunOptions{Backend: engine.Heap, ProcessingTime: engine.DeterministicTime, RestoreFrom: pruned, StopAfter: src.Events(), SavepointDir: filepath.Join(dir, "restored-final")})
	if got, want := gatewaytest.Sorted(secondTotals.Values()), gatewaytest.Sorted(wholeTotals.Values()); !slices.Equal(got, want) {
		t.Fatalf("tenant totals: %d, want %d", len(got), len(want))
	}
	if got, want := gatewaytest.Sorted(secondRecords.Values()), gatewaytest.Sorted(wholeRecords.Values()); !slices.Equal(got, want) {
		t.Fatalf("request records: %d, want %d", len(got), len(want))
	}
	final, whole := sptest.Open(t, filepath.Join(dir, "restored-final")), sptest.Open(t, filepath.Join(dir, "whole-final"))
	wantOpen := slices.DeleteFunc(keyedEntries(t, whole, gateway.AssembleUID, gateway.OpenState), func(e keyedEntry) bool { return slices.Contains(expired, e) })
	if got := keyedEntries(t, final, gateway.AssembleUID, gateway.OpenState); !slices.Equal(got, wantOpen) {
		t.Fatalf("open after the restored run: %d entries, want the unpruned run's %d less the %d pruned", len(got), len(wantOpen)+len(expired), len(expired))
	}
	if got, want := keyedEntries(t, final, gateway.TenantCostUID, gateway.USDTotalState), keyedEntries(t, whole, gateway.TenantCostUID, gateway.USDTotalState); !slices.Equal(got, want) {
		t.Fatal("usd_total differs from the unpruned run's")
	}
}
