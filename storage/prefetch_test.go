package storage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
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

// countingFile counts the reads that have started.
type countingFile struct {
	memFile
	started atomic.Int32
	gate    chan struct{}
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.started.Add(1)
	if f.gate != nil {
		<-f.gate
	}
	return f.memFile.ReadAt(p, off)
}

// waitFor polls cond for up to ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestAheadReadsTheNextRangesAhead takes the first of several ranges,
// each shorter than a chunk, and holds its chunk: the next ranges' reads
// start all the same, up to the reads in flight allowed, and every range
// then reads back its own bytes, whichever goroutine takes it.
func TestAheadReadsTheNextRangesAhead(t *testing.T) {
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 13)
	}
	f := &countingFile{memFile: memFile{data}}
	ranges := []Range{{f, 0, 100}, {f, 100, 50}, {f, 900, 100}, {f, 150, 0}, {f, 300, 250}}
	a := ReadAhead(context.Background(), ranges, PrefetchOptions{InFlight: 3, ChunkSize: 128, Budget: 1 << 20})
	defer a.Close()
	p := a.Take(0)
	c, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.Data, data[:100]) || c.Range != 0 || c.Off != 0 {
		t.Fatalf("range 0: chunk of range %d at %d, %d bytes", c.Range, c.Off, len(c.Data))
	}
	// Range 4 is two chunks: five reads in all.
	waitFor(t, "the reads of the ranges after the first", func() bool { return f.started.Load() == 5 })
	if _, err := p.Next(); err != io.EOF {
		t.Fatalf("after range 0's only chunk: %v", err)
	}
	p.Close()
	var wg sync.WaitGroup
	for i := 1; i < len(ranges); i++ {
		p := a.Take(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer p.Close()
			var got []byte
			for {
				c, err := p.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Error(err)
					return
				}
				if c.Range != i || c.Off != ranges[i].Off+int64(len(got)) {
					t.Errorf("range %d: chunk of range %d at %d", i, c.Range, c.Off)
				}
				got = append(got, c.Data...)
			}
			if r := ranges[i]; !bytes.Equal(got, data[r.Off:r.Off+r.Len]) {
				t.Errorf("range %d: wrong bytes", i)
			}
		}()
	}
	wg.Wait()
}

// TestAheadBoundsReadsAndMemory holds every read until released: no more
// run at once than the reads in flight allowed, nor than the budget holds
// beside the chunk the consumer keeps, and more than one do.
func TestAheadBoundsReadsAndMemory(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inFlight int
		budget   int64
		most     int
	}{
		{"reads in flight", 2, 64 << 16, 2},
		{"budget", 8, 4 << 16, 4},
	} {
		f := &gatedFile{memFile: memFile{make([]byte, 1<<20)}, gate: make(chan struct{})}
		var ranges []Range
		for off := int64(0); off < 1<<20; off += 1 << 16 {
			ranges = append(ranges, Range{f, off, 1 << 16})
		}
		a := ReadAhead(context.Background(), ranges, PrefetchOptions{InFlight: tc.inFlight, Budget: tc.budget, ChunkSize: 1 << 16})
		go func() {
			// The first read is let through once a second one waits, or
			// after a while: the lower bound does not hang on the
			// scheduler of a busy machine.
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				f.mu.Lock()
				waiting := f.running
				f.mu.Unlock()
				if waiting >= 2 {
					break
				}
			}
			for range len(ranges) {
				time.Sleep(10 * time.Millisecond)
				f.gate <- struct{}{}
			}
		}()
		for i := range ranges {
			p := a.Take(i)
			if _, err := p.Next(); err != nil {
				t.Fatal(err)
			}
			p.Close()
		}
		a.Close()
		if f.peak > tc.most || f.peak < 2 {
			t.Errorf("%s: %d reads ran at once, want 2 to %d", tc.name, f.peak, tc.most)
		}
	}
}

// TestAheadErrorsStayWithTheirRange fails the reads of one range: its
// consumer gets the error, the other ranges read on.
func TestAheadErrorsStayWithTheirRange(t *testing.T) {
	f := &failingFile{memFile{make([]byte, 1000)}}
	ranges := []Range{{f, 0, 100}, {f, 400, 100}, {f, 100, 100}, {f, 950, 100}, {f, 200, 50}}
	a := ReadAhead(context.Background(), ranges, PrefetchOptions{InFlight: 2, ChunkSize: 64, Budget: 1 << 10})
	defer a.Close()
	for i, wantErr := range []bool{false, true, false, true, false} {
		p := a.Take(i)
		var err error
		for err == nil {
			_, err = p.Next()
		}
		p.Close()
		if (err != io.EOF) != wantErr {
			t.Errorf("range %d: %v", i, err)
		}
		if i == 1 && !errors.Is(err, errBroken) {
			t.Errorf("range 1: %v, want the read's error", err)
		}
	}
}

// TestAheadCloseLeavesNothingRunning closes an Ahead in every state: ranges
// taken and not, read and not, and a context cancelled while reads wait
// for the budget. Close waits for the reads in flight, so no goroutine of
// its own is left, and a consumer of a cancelled Ahead gets the context's
// error.
func TestAheadCloseLeavesNothingRunning(t *testing.T) {
	before := runtime.NumGoroutine()
	f := &countingFile{memFile: memFile{make([]byte, 10<<20)}, gate: make(chan struct{})}
	close(f.gate)
	var ranges []Range
	for off := int64(0); off < 10<<20; off += 1 << 20 {
		ranges = append(ranges, Range{f, off, 1 << 20})
	}
	for _, taken := range []int{0, 1, 3} {
		a := ReadAhead(context.Background(), ranges, PrefetchOptions{InFlight: 4, ChunkSize: 1 << 18, Budget: 1 << 20})
		for i := range taken {
			p := a.Take(i)
			if _, err := p.Next(); err != nil {
				t.Fatal(err)
			}
			p.Close()
		}
		a.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := ReadAhead(ctx, ranges, PrefetchOptions{InFlight: 4, ChunkSize: 1 << 18, Budget: 1 << 19})
	p := a.Take(0)
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
	cancel()
	p.Close()
	p = a.Take(5)
	if _, err := p.Next(); !errors.Is(err, context.Canceled) {
		t.Fatalf("a range after the cancellation: %v", err)
	}
	p.Close()
	a.Close()
	waitFor(t, "the goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

// TestAdjacentRanges checks which ranges of a bucket's objects are read
// in one request: those that follow each other without a gap in one
// object, up to a chunk; a range of a length the chunk pool keeps, or of
// a local file, is read alone.
func TestAdjacentRanges(t *testing.T) {
	f, g := &bucketFile{size: 10 << 20}, &bucketFile{size: 10 << 20}
	local := &memFile{make([]byte, 1000)}
	for _, tc := range []struct {
		name string
		rs   []Range
		want int
	}{
		{"three that fit", []Range{{f, 10, 100}, {f, 110, 50}, {f, 160, 40}, {f, 200, 1 << 20}}, 3},
		{"a gap", []Range{{f, 10, 100}, {f, 111, 50}}, 1},
		{"another object", []Range{{f, 10, 100}, {g, 110, 50}}, 1},
		{"a poolable length", []Range{{f, 0, 1 << 20}, {f, 1 << 20, 10}}, 1},
		{"after a poolable length", []Range{{f, 0, 10}, {f, 10, 1 << 20}}, 1},
		{"a range past the end", []Range{{f, 0, 10}, {f, 10, 10 << 20}}, 1},
		{"local", []Range{{local, 0, 10}, {local, 10, 10}}, 1},
		{"empty", []Range{{f, 0, 0}, {f, 0, 10}}, 1},
	} {
		if got := adjacent(tc.rs, 1<<10+200); got != tc.want {
			t.Errorf("%s: %d ranges in one read, want %d", tc.name, got, tc.want)
		}
	}
}
