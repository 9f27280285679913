package rescale_test

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway/gatewaytest"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/rescale"
)

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
	gatewaytest.Run(t, cfg, gateway.Sinks{Totals: wholeTotals, Records: wholeRecords},
		engine.RunOptions{Backend: engine.Pebble, StopAfter: src.Events(), Drain: true, SavepointDir: filepath.Join(dir, "whole-final")})

	firstTotals, firstRecords := engine.NewCollectSink[gateway.TenantTotal](), engine.NewCollectSink[gateway.RequestRecord]()
	mid := filepath.Join(dir, "mid")
	gatewaytest.Run(t, cfg, gateway.Sinks{Totals: firstTotals, Records: firstRecords},
		engine.RunOptions{Backend: engine.Pebble, StopAfter: 9001, SavepointDir: mid})

	mid720 := filepath.Join(dir, "mid-720")
	run(t, mid, rescale.Options{MaxParallelism: 720}, mid720)
	before, after := sptest.Open(t, mid), sptest.Open(t, mid720)
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
	gatewaytest.Run(t, restored, gateway.Sinks{Totals: secondTotals, Records: secondRecords},
		engine.RunOptions{Backend: engine.Heap, RestoreFrom: mid720, StopAfter: src.Events(), Drain: true, SavepointDir: filepath.Join(dir, "restored-final")})

	if got, want := gatewaytest.Sorted(firstTotals.Values(), secondTotals.Values()), gatewaytest.Sorted(wholeTotals.Values()); !slices.Equal(got, want) {
		t.Fatalf("tenant totals: %d, want %d", len(got), len(want))
	}
	if got, want := gatewaytest.Sorted(firstRecords.Values(), secondRecords.Values()), gatewaytest.Sorted(wholeRecords.Values()); !slices.Equal(got, want) {
		t.Fatalf("request records: %d, want %d", len(got), len(want))
	}
	if got, want := gatewaytest.Sorted(wholeRecords.Values()), gatewaytest.Sorted(src.Records()); !slices.Equal(got, want) {
		t.Fatal("the uninterrupted run is not what the generator expects")
	}
	final, whole := sptest.Open(t, filepath.Join(dir, "restored-final")), sptest.Open(t, filepath.Join(dir, "whole-final"))
	if got, want := sptest.Contents(t, final), sptest.Contents(t, whole); !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatal("the final state differs from the uninterrupted run's")
	}
	if len(sptest.Contents(t, whole)[gateway.TenantCostUID+"/"+gateway.USDTotalState]) == 0 {
		t.Fatal("the final savepoint holds no usd_total")
	}
}

// Rescaling the savepoint of a job run at max parallelism 128 gives, byte
// for byte, the data files and index of the savepoint the engine writes when
// the same job runs at max parallelism 720 to the same position.
func TestGatewayRescaledEqualsEngineSavepoint(t *testing.T) {
	cfg := gateway.Config{Seed: 5, Events: 12000, Parallelism: 3, MaxParallelism: 128}
	for _, p := range []int{3, 7} {
		t.Run(fmt.Sprintf("parallelism %d", p), func(t *testing.T) {
			// Under DeterministicTime, processing time, and so every TTL
			// timestamp, depends on how the splits are shared out among the
			// source subtasks: both runs have the parallelism compared.
			at128 := filepath.Join(t.TempDir(), "at128")
			c := cfg
			c.Parallelism = p
			gatewaytest.Run(t, c, gateway.Sinks{}, engine.RunOptions{Backend: engine.Pebble, ProcessingTime: engine.DeterministicTime, StopAfter: 7000, SavepointDir: at128})
			at720, rescaled := filepath.Join(t.TempDir(), "at720"), filepath.Join(t.TempDir(), "rescaled")
			c.MaxParallelism = 720
			gatewaytest.Run(t, c, gateway.Sinks{}, engine.RunOptions{Backend: engine.Heap, ProcessingTime: engine.DeterministicTime, StopAfter: 7000, SavepointDir: at720})
			run(t, at128, rescale.Options{MaxParallelism: 720, Parallelism: p}, rescaled)
			got, want := sptest.DataFiles(t, rescaled), sptest.DataFiles(t, at720)
			if !maps.EqualFunc(got, want, bytes.Equal) {
				t.Fatalf("data files differ: %v vs %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
			}
			a, b := sptest.Open(t, rescaled), sptest.Open(t, at720)
			for op := range b.Metadata().Operators {
				if !reflect.DeepEqual(sptest.OperatorSegments(t, a, op), sptest.OperatorSegments(t, b, op)) {
					t.Fatalf("operator %d: the index differs", op)
				}
			}
		})
	}
}
