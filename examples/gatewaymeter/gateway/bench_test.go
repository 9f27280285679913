package gateway

import (
	"testing"

	"github.com/stateproc/stateproc/engine"
)

// BenchmarkGatewayMeter runs the whole job at parallelism 2 over 200,000
// events per iteration, to the end of its input, and reports the input
// records processed per second: on the wall clock (the default) and, in
// the deterministic sub-benchmarks, under DeterministicTime, where a keyed
// subtask reads its inputs in watermark order.
func BenchmarkGatewayMeter(b *testing.B) {
	const events = 200_000
	for _, backend := range []engine.BackendKind{engine.Heap, engine.Pebble} {
		for _, pt := range []engine.ProcessingTimeMode{engine.WallClock, engine.DeterministicTime} {
			name := string(backend)
			if pt == engine.DeterministicTime {
				name += "/deterministic"
			}
			b.Run(name, func(b *testing.B) {
				cfg := Config{Seed: 1, Events: events, Parallelism: 2, MaxParallelism: 128}
				for b.Loop() {
					run(b, cfg, Sinks{}, engine.RunOptions{Backend: backend, ProcessingTime: pt})
				}
				b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}
