package storage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"
)

// memFile is a File over bytes.
type memFile struct {
	b []byte
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(f.b)) {
		return 0, io.EOF
	}
	n := copy(p, f.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
func (f *memFile) Size() int64  { return int64(len(f.b)) }
func (f *memFile) Close() error { return nil }

// gatedFile blocks its reads until released, to see how many run at once.
type gatedFile struct {
	memFile
	mu            sync.Mutex
	running, peak int
	gate          chan struct{}
}

func (f *gatedFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	f.running++
	f.peak = max(f.peak, f.running)
	f.mu.Unlock()
	<-f.gate
	f.mu.Lock()
	f.running--
	f.mu.Unlock()
	return f.memFile.ReadAt(p, off)
}

func TestPrefetchDeliversRangesInOrder(t *testing.T) {
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	f := &memFile{data}
	ranges := []Range{{f, 0, 100}, {f, 500, 333}, {f, 100, 0}, {f, 990, 10}}
	p := Prefetch(context.Background(), ranges, PrefetchOptions{InFlight: 3, Budget: 64})
	defer p.Close()
	var got [4][]byte
	last := -1
	for {
		c, err := p.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if c.Range < last || len(c.Data) > 64 {
			t.Fatalf("chunk of range %d after range %d, %d bytes (budget 64)", c.Range, last, len(c.Data))
		}
		last = c.Range
		if c.Off != ranges[c.Range].Off+int64(len(got[c.Range])) {
			t.Fatalf("chunk at %d, want %d", c.Off, ranges[c.Range].Off+int64(len(got[c.Range])))
		}
		got[c.Range] = append(got[c.Range], c.Data...)
	}
	for i, r := range ranges {
		if !bytes.Equal(got[i], data[r.Off:r.Off+r.Len]) {
			t.Fatalf("range %d: wrong bytes", i)
		}
	}
}

// TestPrefetchBoundsReadsAndMemory holds every read until several are
// waiting: no more may run than the budget allows.
func TestPrefetchBoundsReadsAndMemory(t *testing.T) {
	f := &gatedFile{memFile: memFile{make([]byte, 1<<20)}, gate: make(chan struct{})}
	var ranges []Range
	for off := int64(0); off < 1<<20; off += 1 << 16 {
		ranges = append(ranges, Range{f, off, 1 << 16})
	}
	// Room for three chunks of 64 KiB: two in flight and the one held.
	p := Prefetch(context.Background(), ranges, PrefetchOptions{InFlight: 8, Budget: 3 << 16, ChunkSize: 1 << 16})
	defer p.Close()
	// Each read is let go only after a pause in which the prefetcher
	// starts every read its budget allows.
	go func() {
		for range len(ranges) {
			time.Sleep(20 * time.Millisecond)
			f.gate <- struct{}{}
		}
	}()
	for n := 0; ; n++ {
		_, err := p.Next()
		if err == io.EOF {
			if n != len(ranges) {
				t.Fatalf("%d chunks, want %d", n, len(ranges))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if f.peak > 3 || f.peak < 2 {
		t.Fatalf("%d reads ran at once, want 2 or 3 within a budget of three chunks", f.peak)
	}
}

type failingFile struct{ memFile }

var errBroken = errors.New("broken")

func (f *failingFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= 300 {
		return 0, errBroken
	}
	return f.memFile.ReadAt(p, off)
}

func TestPrefetchStopsAtTheFirstError(t *testing.T) {
	f := &failingFile{memFile{make([]byte, 1000)}}
	p := Prefetch(context.Background(), []Range{{f, 0, 1000}}, PrefetchOptions{ChunkSize: 100, Budget: 400, InFlight: 2})
	defer p.Close()
	var n int
	for {
		_, err := p.Next()
		if errors.Is(err, errBroken) {
			break
		}
		if err != nil {
			t.Fatalf("after %d chunks: %v", n, err)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("%d good chunks before the error, want 3", n)
	}
	bad := Prefetch(context.Background(), []Range{{f, 900, 200}}, PrefetchOptions{})
	defer bad.Close()
	if _, err := bad.Next(); err == nil {
		t.Fatal("a range past the end of its file was read")
	}
}

func TestPrefetchCloseStopsEarly(t *testing.T) {
	f := &memFile{make([]byte, 10<<20)}
	p := Prefetch(context.Background(), []Range{{f, 0, 10 << 20}}, PrefetchOptions{ChunkSize: 1 << 10, Budget: 4 << 10})
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
	p.Close()
	p.Close()
}

// A read of a MiB or more gets a buffer of its 256 KiB class, so that a
// buffer given back serves the next reads of about its size, unless the
// class would not fit the budget; smaller reads get what they ask for.
func TestChunkCapacity(t *testing.T) {
	for _, c := range []struct{ n, budget, want int64 }{
		{1000, 1 << 30, 1000},
		{1 << 20, 1 << 30, 1 << 20},
		{1<<20 + 1, 1 << 30, 1<<20 + 256<<10},
		{4_000_000, 8 << 20, 4 << 20},
		{4_000_000, 4_000_000, 4_000_000},
		{65<<20 + 5, 1 << 30, 65<<20 + 5},
	} {
		if got := chunkCap(c.n, c.budget); got != c.want {
			t.Errorf("chunkCap(%d, budget %d) = %d, want %d", c.n, c.budget, got, c.want)
		}
	}
	b := newChunk(4_000_000, 4<<20)
	if len(b) != 4_000_000 || cap(b) != 4<<20 {
		t.Fatalf("newChunk: len %d cap %d", len(b), cap(b))
	}
}
