package gateway

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/engine/window"
	"github.com/stateproc/stateproc/internal/sptest"
)

// The windowed TenantCost emits each tenant's cost per minute, as computed
// without the engine, on both backends; stopped mid-window and restored
// at another parallelism on the other backend it emits the same.
func TestWindowedTenantCost(t *testing.T) {
	cfg := Config{Seed: 1, Events: 20000, Parallelism: 2, MaxParallelism: 128, Window: true}
	src, err := NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := src.ExpectedWindowTotals()
	if len(want) < 20 {
		t.Fatalf("%d windows expected: the input is too short to test windows", len(want))
	}
	for _, b := range []engine.BackendKind{engine.Heap, engine.Pebble} {
		t.Run(string(b), func(t *testing.T) {
			totals := engine.NewCollectSink[TenantTotal]()
			run(t, cfg, Sinks{Totals: totals}, engine.RunOptions{Backend: b})
			equalTotals(t, "uninterrupted", totals.Values(), want)

			other := engine.Pebble
			if b == engine.Pebble {
				other = engine.Heap
			}
			sp := filepath.Join(t.TempDir(), "sp")
			before, after := engine.NewCollectSink[TenantTotal](), engine.NewCollectSink[TenantTotal]()
			run(t, cfg, Sinks{Totals: before}, engine.RunOptions{Backend: b, StopAfter: cfg.Events / 2, SavepointDir: sp})
			r := sptest.Open(t, sp)
			open := sptest.Entries(t, r, TenantCostUID, window.ContentsState)
			if len(open) == 0 {
				t.Fatal("no window open in the savepoint")
			}
			for _, e := range open {
				if _, err := TenantMinuteSerializer().Decode(e.Value); err != nil {
					t.Fatalf("window of %q: %v", e.Key, err)
				}
			}
			restored := cfg
			restored.Parallelism = 3
			run(t, restored, Sinks{Totals: after}, engine.RunOptions{Backend: other, RestoreFrom: sp})
			equalTotals(t, fmt.Sprintf("stopped on %s, restored on %s", b, other), append(before.Values(), after.Values()...), want)
		})
	}
}

// BenchmarkGatewayMeterWindow is BenchmarkGatewayMeter's wall-clock runs
// for the windowed variant: input records processed per second.
func BenchmarkGatewayMeterWindow(b *testing.B) {
	const events = 200_000
	for _, backend := range []engine.BackendKind{engine.Heap, engine.Pebble} {
		b.Run(string(backend), func(b *testing.B) {
			cfg := Config{Seed: 1, Events: events, Parallelism: 2, MaxParallelism: 128, Window: true}
			for b.Loop() {
				run(b, cfg, Sinks{}, engine.RunOptions{Backend: backend})
			}
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
