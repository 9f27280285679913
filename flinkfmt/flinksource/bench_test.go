package flinksource_test

import (
	"context"
	"hash/maphash"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/flinksource"
	"github.com/stateproc/stateproc/internal/flinkgen"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// generate writes the savepoint c describes into a directory of the
// benchmark's and returns where, with what the generator wrote.
func generate(b *testing.B, c flinkgen.Config) (string, *flinkgen.Stats) {
	ctx := context.Background()
	target := filepath.Join(b.TempDir(), "sp")
	stats, err := flinkgen.WriteDir(ctx, target, false, c)
	if err != nil {
		b.Fatal(err)
	}
	return target, stats
}

// BenchmarkCountSegments walks a canonical savepoint of the shape of
// flink-sessions-large at 50,000 users (about a million entries) written by
// the generator, as inspect --scan walks it: every segment counted, the
// sizes of the values read in batches, every timer's key hashed. Workers
// are 1 (the cost per core) and 2; uncompressed and as Snappy streams.
func BenchmarkCountSegments(b *testing.B) {
	for _, compressed := range []bool{false, true} {
		name := "plain"
		if compressed {
			name = "snappy"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			c := flinkgen.SessionsLarge()
			c.Users, c.Compressed = 50_000, compressed
			target, stats := generate(b, c)
			for _, workers := range []int{1, 2} {
				b.Run(map[int]string{1: "workers=1", 2: "workers=2"}[workers], func(b *testing.B) {
					b.ReportAllocs()
					seed := maphash.MakeSeed()
					for range b.N {
						src, err := flinksource.Open(ctx, storage.LocalDir(target), flinkfmt.Options{})
						if err != nil {
							b.Fatal(err)
						}
						var sink [2]uint64
						var sizes [2][512]int
						var times [2][512]int64
						segs, err := src.CountSegments(ctx, workers, func(w int, ref savepoint.StateRef, it savepoint.EntryIterator) error {
							if ref.Timer {
								for it.Next() {
									sink[w] += maphash.Bytes(seed, it.Entry().Key)
								}
								return it.Err()
							}
							for {
								n := savepoint.NextValues(it, false, sizes[w][:], times[w][:])
								for _, s := range sizes[w][:n] {
									sink[w] += uint64(s)
								}
								if n < len(sizes[w]) {
									return it.Err()
								}
							}
						}, nil)
						if err != nil {
							b.Fatal(err)
						}
						var entries, keys uint64
						for _, s := range segs {
							entries += s.Entries
							if s.Ref.State == 0 && !s.Ref.Timer {
								keys += s.Keys
							}
						}
						if entries != stats.Entries || keys != stats.Users {
							b.Fatalf("%d entries and %d keys, want %d and %d", entries, keys, stats.Entries, stats.Users)
						}
					}
					b.ReportMetric(float64(stats.Entries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
				})
			}
		})
	}
}

// BenchmarkSegmentsAtTheLargestMaxParallelism lists and walks, segment by
// segment, a small canonical savepoint at Flink's largest max parallelism,
// 32768: the cost of a segment must not grow with the number of key
// groups.
func BenchmarkSegmentsAtTheLargestMaxParallelism(b *testing.B) {
	ctx := context.Background()
	c := flinkgen.SessionsLarge()
	c.Users, c.MaxParallelism, c.Parallelism = 20_000, 32768, 4
	target, stats := generate(b, c)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		src, err := flinksource.Open(ctx, storage.LocalDir(target), flinkfmt.Options{})
		if err != nil {
			b.Fatal(err)
		}
		var refs []savepoint.StateRef
		for i, op := range src.Metadata().Operators {
			for j := range op.States {
				refs = append(refs, savepoint.StateRef{Operator: i, State: j})
			}
			for j := range op.Timers {
				refs = append(refs, savepoint.StateRef{Operator: i, State: j, Timer: true})
			}
		}
		var entries uint64
		for _, ref := range refs {
			segs, err := src.Segments(ctx, ref, keygroup.All(c.MaxParallelism))
			if err != nil {
				b.Fatal(err)
			}
			for _, s := range segs {
				it := src.Entries(ctx, ref, keygroup.Range{Start: s.KeyGroup, End: s.KeyGroup})
				for it.Next() {
					entries++
				}
				if err := it.Err(); err != nil {
					b.Fatal(err)
				}
				it.Close()
			}
		}
		if entries != stats.Entries {
			b.Fatalf("%d entries, want %d", entries, stats.Entries)
		}
	}
}
