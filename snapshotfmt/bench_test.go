package snapshotfmt

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// benchState is about 100,000 small map entries with TTL, like
// SessionFeatures' category-counts: 10,000 users with 10 categories each,
// in the key groups of a max parallelism of 128.
func benchState() (*savepoint.Metadata, []segData) {
	week := ttl.New(7 * 24 * time.Hour)
	meta := &savepoint.Metadata{Operators: []savepoint.Operator{{
		UID: "features", Parallelism: 2, MaxParallelism: 128,
		KeyHash: keygroup.Murmur3, Key: snap(serializers.KindString),
		States: []savepoint.KeyedState{{
			Name: "category-counts", Kind: savepoint.Map, Namespace: snap(serializers.KindVoid),
			MapKey: snap(serializers.KindString), Value: snap(serializers.KindInt64), TTL: &week,
		}},
	}}}
	byKG := map[int][]string{}
	for i := range 10_000 {
		k := fmt.Sprintf("user-%07d", i)
		kg := keygroup.Of([]byte(k), 128)
		byKG[kg] = append(byKG[kg], k)
	}
	var data []segData
	for _, kg := range slices.Sorted(maps.Keys(byKG)) {
		keys := byKG[kg]
		slices.Sort(keys)
		sd := segData{op: 0, ref: 0, kg: kg}
		for i, k := range keys {
			for c := range 10 {
				v := append(ts(int64(1_700_000_000_000+i*1000+c)), ts(int64(i*c))...)
				sd.entries = append(sd.entries, savepoint.Entry{Key: []byte(k), MapKey: []byte(fmt.Sprintf("category-%02d", c)), Value: v})
			}
		}
		data = append(data, sd)
	}
	return meta, data
}

// rawBytes is the size of the serialized entries before compression: what
// MB/s is measured against.
func rawBytes(b *testing.B, d *memDir) int64 {
	r, err := Open(context.Background(), d)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, seg := range opSegments(r, 0) {
		n += int64(seg.Bytes)
	}
	return n
}

var benchCodecs = []struct {
	name string
	opts Options
}{{"none", Options{}}, {"zstd", Options{Compression: CodecZstd}}}

func BenchmarkWrite(b *testing.B) {
	meta, data := benchState()
	for _, c := range benchCodecs {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(rawBytes(b, writeOneFile(b, meta, data, c.opts)))
			b.ReportAllocs()
			for b.Loop() {
				writeOneFile(b, meta, data, c.opts)
			}
		})
	}
}

func BenchmarkRead(b *testing.B) {
	meta, data := benchState()
	ctx := context.Background()
	for _, c := range benchCodecs {
		b.Run(c.name, func(b *testing.B) {
			d := writeOneFile(b, meta, data, c.opts)
			b.SetBytes(rawBytes(b, d))
			r, err := Open(ctx, d)
			if err != nil {
				b.Fatal(err)
			}
			segs := opSegments(r, 0)
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				for _, seg := range segs {
					it := r.iterate(ctx, seg)
					for it.Next() {
						n++
					}
					if err := it.Err(); err != nil {
						b.Fatal(err)
					}
					it.Close()
				}
				if n != 100_000 {
					b.Fatalf("read %d entries", n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100_000), "ns/entry")
		})
	}
}

// BenchmarkNextValues is the loop of inspect --scan: the value sizes and
// last-modified times of every entry, in batches, each segment checked
// against its index entry and histograms.
func BenchmarkNextValues(b *testing.B) {
	meta, data := benchState()
	ctx := context.Background()
	d := writeOneFile(b, meta, data, Options{})
	b.SetBytes(rawBytes(b, d))
	r, err := Open(ctx, d)
	if err != nil {
		b.Fatal(err)
	}
	segs := opSegments(r, 0)
	var sizes [512]int
	var times [512]int64
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, seg := range segs {
			it := r.iterate(ctx, seg)
			for {
				k := it.NextValues(sizes[:], times[:])
				n += k
				if k < len(sizes) {
					break
				}
			}
			if err := it.Err(); err != nil {
				b.Fatal(err)
			}
			it.Close()
		}
		if n != 100_000 {
			b.Fatalf("read %d entries", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100_000), "ns/entry")
}

// BenchmarkCopySegment copies every segment of a file as a rewrite that
// keeps them does (prune-ttl with nothing expired): into a savepoint of the
// same creation time, whose histograms carry over, and of another, whose
// last-modified histograms are counted again at the new anchor.
func BenchmarkCopySegment(b *testing.B) {
	meta, data := benchState()
	ctx := context.Background()
	src := writeOneFile(b, meta, data, Options{})
	r, err := Open(ctx, src)
	if err != nil {
		b.Fatal(err)
	}
	segs := opSegments(r, 0)
	for _, bc := range []struct {
		name  string
		shift int64
	}{{"same-anchor", 0}, {"reanchored", 1000}} {
		b.Run(bc.name, func(b *testing.B) {
			dst := *meta
			dst.CreatedAt += bc.shift
			b.SetBytes(rawBytes(b, src))
			b.ReportAllocs()
			for b.Loop() {
				w, err := NewWriter(newMemDir(), &dst, Options{})
				if err != nil {
					b.Fatal(err)
				}
				f, err := w.CreateDataFile(ctx, "data")
				if err != nil {
					b.Fatal(err)
				}
				for _, seg := range segs {
					if err := f.CopySegment(ctx, r, seg, seg.Ref, seg.KeyGroup); err != nil {
						b.Fatal(err)
					}
				}
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100_000), "ns/entry")
		})
	}
}
