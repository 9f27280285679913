package flinkfmt_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/internal/flinkgen"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

// BenchmarkCanonicalWalk reads a canonical savepoint of the shape of
// flink-sessions-large at 20,000 users (about 400,000 entries) written by
// the generator: "entries" walks every state entry by entry, splitting
// every composite key, as counting them does; "sizes" reads the sizes of
// category-counts' values once a walk has mapped the key groups, as
// inspect --scan does. Uncompressed and as Snappy streams.
func BenchmarkCanonicalWalk(b *testing.B) {
	for _, compressed := range []bool{false, true} {
		name := "plain"
		if compressed {
			name = "snappy"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			c := flinkgen.SessionsLarge()
			c.Users, c.Compressed = 20_000, compressed
			target := filepath.Join(b.TempDir(), "sp")
			stats, err := flinkgen.WriteDir(ctx, target, false, c)
			if err != nil {
				b.Fatal(err)
			}
			r, err := flinkfmt.Open(ctx, storage.LocalDir(target), flinkfmt.Options{})
			if err != nil {
				b.Fatal(err)
			}
			k, err := r.Keyed(ctx, r.Metadata().Operators[0])
			if err != nil {
				b.Fatal(err)
			}
			all := keygroup.All(k.Operator.MaxParallelism)
			counts := k.State(flinkgen.CountsState)
			b.Run("entries", func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					it := k.Entries(ctx, -1, all)
					n := uint64(0)
					for it.Next() {
						n++
					}
					if it.Err() != nil || n != stats.Entries {
						b.Fatalf("%d entries of %d: %v", n, stats.Entries, it.Err())
					}
					it.Close()
				}
				b.ReportMetric(float64(stats.Entries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
			})
			b.Run("sizes", func(b *testing.B) {
				sizes := make([]int, 512)
				b.ReportAllocs()
				for range b.N {
					it := k.Entries(ctx, counts, all)
					n := uint64(0)
					for {
						got := it.NextValueSizes(sizes)
						n += uint64(got)
						if got < len(sizes) {
							break
						}
					}
					if it.Err() != nil || n != stats.CountEntries {
						b.Fatalf("%d values of %d: %v", n, stats.CountEntries, it.Err())
					}
					it.Close()
				}
				b.ReportMetric(float64(stats.CountEntries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
			})
		})
	}
}
