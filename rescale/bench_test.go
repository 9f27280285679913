package rescale_test

import (
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/rescale"
)

// BenchmarkRescale rescales a synthetic savepoint of 100,000 users from max
// parallelism 128 to 720.
func BenchmarkRescale(b *testing.B) {
	in := generate(b, spgen.Config{Seed: 1, Users: 100_000, Accounts: 20_000, Parallelism: 2, MaxParallelism: 128, Now: now, Pad: 50})
	var entries uint64
	for _, n := range counts(b, sptest.Open(b, in)) {
		entries += n
	}
	b.ResetTimer()
	for range b.N {
		run(b, in, rescale.Options{MaxParallelism: 720}, filepath.Join(b.TempDir(), "out"))
	}
	b.ReportMetric(float64(entries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}
