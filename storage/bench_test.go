package storage_test

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/stateproc/stateproc/storage"
	"github.com/stateproc/stateproc/storage/internal/storetest"
)

// BenchmarkRangedReads reads a 64 MiB object from versitygw in ranges of
// the size a segment has, with 1 to 16 requests in flight, through
// Prefetch: the baseline for reading savepoints from a bucket. Run it with
//
//	go test ./storage -run '^$' -bench RangedReads
func BenchmarkRangedReads(b *testing.B) {
	srv := storetest.Start(b)
	srv.Env(b)
	srv.Bucket(b, "state")
	const size = 64 << 20
	ctx := context.Background()
	tg, err := storage.OpenTarget(ctx, storetest.URL(srv.Endpoint(), "state", "bench"), storage.TargetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	w, _ := tg.Create(ctx, "data-000")
	w.Write(randomBytes(1, size))
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	tg.Close()
	d, err := storage.OpenDir(ctx, storetest.URL(srv.Endpoint(), "state", "bench"), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	f, err := d.Open(ctx, "data-000")
	if err != nil {
		b.Fatal(err)
	}
	for _, rangeSize := range []int64{256 << 10, 4 << 20} {
		var ranges []storage.Range
		for off := int64(0); off < size; off += rangeSize {
			ranges = append(ranges, storage.Range{File: f, Off: off, Len: min(rangeSize, size-off)})
		}
		for _, inFlight := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("range=%dKiB/inflight=%d", rangeSize>>10, inFlight), func(b *testing.B) {
				b.SetBytes(size)
				before := storage.CountersOf(d).Requests.Load()
				for b.Loop() {
					p := storage.Prefetch(ctx, ranges, storage.PrefetchOptions{InFlight: inFlight, ChunkSize: rangeSize, Budget: int64(inFlight+1) * rangeSize})
					for {
						if _, err := p.Next(); err == io.EOF {
							break
						} else if err != nil {
							b.Fatal(err)
						}
					}
					p.Close()
				}
				b.ReportMetric(float64(storage.CountersOf(d).Requests.Load()-before)/float64(b.N), "GETs/op")
			})
		}
	}
}
