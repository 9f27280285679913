package gateway

import (
	"testing"

	"github.com/stateproc/stateproc/engine"
)

// BenchmarkGatewayMeter runs the whole job at parallelism 2 over 200,000
// events per iteration, to the end of its input, and reports the input
// records processed per second.
func BenchmarkGatewayMeter(b *testing.B) {
	const events = 200_000
	for _, backend := range []engine.BackendKind{engine.Heap, engine.Pebble} {
		b.Run(string(backend), func(b *testing.B) {
			cfg := Config{Seed: 1, Events: events, Parallelism: 2, MaxParallelism: 128}
			for b.Loop() {
				run(b, cfg, Sinks{}, engine.RunOptions{Backend: backend})
			}
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
