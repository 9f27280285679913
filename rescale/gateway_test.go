package rescale_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway"
	"github.com/stateproc/stateproc/rescale"
)

// runGateway builds GatewayMeter over its generated input and runs it.
func runGateway(t *testing.T, cfg gateway.Config, sinks gateway.Sinks, opts engine.RunOptions) {
	t.Helper()
	src, err := gateway.NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	j, err := gateway.Build(cfg, src, src.Prices(), sinks)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Run(context.Background(), j, opts); err != nil {
		t.Fatal(err)
	}
}

// sorted renders outputs as a sorted multiset: several subtasks feed the
// sinks, so only the order within a key is fixed.
func sorted[T any](vs ...[]T) []string {
	var out []string
	for _, v := range vs {
		for _, x := range v {
			out = append(out, fmt.Sprintf("%+v", x))
		}
	}
	slices.SortFunc(out, cmp.Compare)
	return out
}

// GatewayMeter stopped without draining, with a savepoint at max
// parallelism 128, rescaled to 720, restored at parallelism 7 and run to
// the end, gives the outputs and the final state of an uninterrupted run;
// the rescale keeps the number of entries of every state and timer
// service.
func TestGatewayRescaledRunEqualsUninterrupted(t *testing.T) {
	dir := t.TempDir()
	cfg := gateway.Config{Seed: 8, Events: 16000, Parallelism: 2, MaxParallelism: 128}
	src, err := gateway.NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wholeTotals, wholeRecords := engine.NewCollectSink[gateway.TenantTotal](), engine.NewCollectSink[gateway.RequestRecord]()
	runGateway(t, cfg, gateway.Sinks{Totals: wholeTotals, Records: wholeRecords},
		engine.RunOptions{Backend: engine.Pebble, StopAfter: src.Events(), Drain: true, SavepointDir: filepath.Join(dir, "whole-final")})

	firstTotals, firstRecords := engine.NewCollectSink[gateway.TenantTotal](), engine.NewCollectSink[gateway.RequestRecord]()
	mid := filepath.Join(dir, "mid")
	runGateway(t, cfg, gateway.Sinks{Totals: firstTotals, Records: firstRecords},
		engine.RunOptions{Backend: engine.Pebble, StopAfter: 9001, SavepointDir: mid})

	mid720 := filepath.Join(dir, "mid-720")
	run(t, mid, rescale.Options{MaxParallelism: 720}, mid720)
	before, after := open(t, mid), open(t, mid720)
	if a, b := counts(t, before), counts(t, after); !maps.Equal(a, b) {
		t.Fatalf("entries per state before and after the rescale differ:\n%v\n%v", a, b)
	}
	if n := counts(t, before)[gateway.AssembleUID+"/"+engine.EventTimeTimers]; n == 0 {
		t.Fatal("the savepoint has no pending timers: the test does not move any")
	}
	for _, op := range after.Metadata().Operators {
		if op.Keyed() && op.MaxParallelism != 720 {
			t.Fatalf("operator %s at max parallelism %d", op.UID, op.MaxParallelism)
		}
	}

	restored := cfg
	restored.Parallelism, restored.MaxParallelism = 7, 0
	secondTotals, secondRecords := engine.NewCollectSink[gateway.TenantTotal](), engine.NewCollectSink[gateway.RequestRecord]()
	runGateway(t, restored, gateway.Sinks{Totals: secondTotals, Records: secondRecords},
		engine.RunOptions{Backend: engine.Heap, RestoreFrom: mid720, StopAfter: src.Events(), Drain: true, SavepointDir: filepath.Join(dir, "restored-final")})

	if got, want := sorted(firstTotals.Values(), secondTotals.Values()), sorted(wholeTotals.Values()); !slices.Equal(got, want) {
		t.Fatalf("tenant totals: %d, want %d", len(got), len(want))
	}
	if got, want := sorted(firstRecords.Values(), secondRecords.Values()), sorted(wholeRecords.Values()); !slices.Equal(got, want) {
		t.Fatalf("request records: %d, want %d", len(got), len(want))
	}
	if got, want := sorted(wholeRecords.Values()), sorted(src.Records()); !slices.Equal(got, want) {
		t.Fatal("the uninterrupted run is not what the generator expects")
	}
	final, whole := open(t, filepath.Join(dir, "restored-final")), open(t, filepath.Join(dir, "whole-final"))
	if got, want := contents(t, final), contents(t, whole); !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatal("the final state differs from the uninterrupted run's")
	}
	if len(contents(t, whole)[gateway.TenantCostUID+"/"+gateway.USDTotalState]) == 0 {
		t.Fatal("the final savepoint holds no usd_total")
	}
}

// Rescaling the savepoint of a job run at max parallelism 128 gives, byte
// for byte, the data files and index of the savepoint the engine writes when
// the same job runs at max parallelism 720 to the same position, at the
// same parallelism or at the one the rescale sets.
func TestGatewayRescaledEqualsEngineSavepoint(t *testing.T) {
	dir := t.TempDir()
	at128 := filepath.Join(dir, "at128")
	cfg := gateway.Config{Seed: 5, Events: 12000, Parallelism: 3, MaxParallelism: 128}
	runGateway(t, cfg, gateway.Sinks{}, engine.RunOptions{Backend: engine.Pebble, StopAfter: 7000, SavepointDir: at128})
	for _, p := range []int{3, 7} {
		t.Run(fmt.Sprintf("parallelism %d", p), func(t *testing.T) {
			at720, rescaled := filepath.Join(t.TempDir(), "at720"), filepath.Join(t.TempDir(), "rescaled")
			c := cfg
			c.MaxParallelism, c.Parallelism = 720, p
			runGateway(t, c, gateway.Sinks{}, engine.RunOptions{Backend: engine.Heap, StopAfter: 7000, SavepointDir: at720})
			run(t, at128, rescale.Options{MaxParallelism: 720, Parallelism: p}, rescaled)
			got, want := files(t, rescaled), files(t, at720)
			delete(got, "_metadata")
			delete(want, "_metadata")
			if !maps.EqualFunc(got, want, bytes.Equal) {
				t.Fatalf("data files differ: %v vs %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
			}
			a, b := open(t, rescaled), open(t, at720)
			for op := range b.Metadata().Operators {
				if !slices.Equal(a.Segments(op), b.Segments(op)) {
					t.Fatalf("operator %d: the index differs", op)
				}
			}
		})
	}
}
