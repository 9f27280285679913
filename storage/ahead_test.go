package storage_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stateproc/stateproc/storage"
)

// TestAheadReadsAdjacentRangesTogether reads ranges of an object in a
// bucket that follow each other, with one gap: those on either side of
// the gap are read in one GET each, up to a chunk, and not a byte more
// than the ranges; each range gets its own bytes, and appending to one
// range's chunk leaves the next range's bytes as they are.
func TestAheadReadsAdjacentRangesTogether(t *testing.T) {
	ctx := context.Background()
	want := randomBytes(7, 2<<20)
	p, d, f := proxiedObject(t, want)
	// Four ranges of 100,000 bytes, a gap of one byte, then three more:
	// two GETs with a chunk of 400,000 bytes.
	var ranges []storage.Range
	var total int64
	for off := int64(5); len(ranges) < 7; off += 100_000 {
		if len(ranges) == 4 {
			off++
		}
		ranges = append(ranges, storage.Range{File: f, Off: off, Len: 100_000})
		total += 100_000
	}
	c := storage.CountersOf(d)
	gets, read := p.Ops("GetObject"), c.BytesRead.Load()
	a := storage.ReadAhead(ctx, ranges, storage.PrefetchOptions{InFlight: 2, ChunkSize: 400_000, Budget: 1 << 20})
	defer a.Close()
	for i, r := range ranges {
		pf := a.Take(i)
		ch, err := pf.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ch.Data, want[r.Off:r.Off+r.Len]) {
			t.Fatalf("range %d: wrong bytes", i)
		}
		if _, err := pf.Next(); err != io.EOF {
			t.Fatalf("range %d after its chunk: %v", i, err)
		}
		// An append to a chunk read with the next range's must not
		// write into that range's part of the buffer.
		_ = append(ch.Data, bytes.Repeat([]byte{0xff}, 1000)...)
		pf.Close()
	}
	if g, n := p.Ops("GetObject")-gets, c.BytesRead.Load()-read; g != 2 || n != total {
		t.Fatalf("%d GETs, %d bytes read; want 2 and %d", g, n, total)
	}
}
