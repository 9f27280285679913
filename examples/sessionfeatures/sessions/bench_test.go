package sessions

import (
	"testing"

	"github.com/stateproc/stateproc/engine"
)

// BenchmarkSessionFeatures runs the whole job at parallelism 2 over 5,000
// users (160,000 clicks) per iteration, to the end of its input, and
// reports the clicks processed per second.
func BenchmarkSessionFeatures(b *testing.B) {
	cfg := Config{Seed: 1, Users: 5000, Parallelism: 2, MaxParallelism: 128}
	for _, backend := range []engine.BackendKind{engine.Heap, engine.Pebble} {
		b.Run(string(backend), func(b *testing.B) {
			for b.Loop() {
				run(b, cfg, nil, engine.RunOptions{Backend: backend})
			}
			b.ReportMetric(float64(cfg.Users*ClicksPerUser)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
