package storage

import (
	"context"
	"fmt"
	"io"
	"sync"

	"golang.org/x/sync/semaphore"
)

// Range is a byte range of a file: a segment whose offset and length come
// from a savepoint's index.
type Range struct {
	File     File
	Off, Len int64
}

// PrefetchOptions bound a Prefetcher. The zero value is ready to use.
type PrefetchOptions struct {
	// InFlight is how many reads run at once, to hide a bucket's latency;
	// 0 means 4.
	InFlight int
	// Budget bounds the bytes held at once: being read, read and waiting,
	// and the chunk the caller holds; 0 means 64 MiB.
	Budget int64
	// ChunkSize is the largest read; longer ranges are read in chunks of
	// this size. 0 means Budget / (InFlight + 1).
	ChunkSize int64
}

// Chunk is the bytes of a piece of one range.
type Chunk struct {
	// Range is the index of the range in the list given to Prefetch.
	Range int
	// Off is the file offset of Data[0].
	Off int64
	// Data may be given back with ReleaseChunk once it is no longer used.
	Data []byte
}

// Prefetcher reads a list of ranges ahead of its caller, several reads in
// flight, and hands their bytes over in order. It never holds more than
// its budget: a read waits until the caller has released enough.
type Prefetcher struct {
	ctx    context.Context
	cancel context.CancelFunc
	budget *semaphore.Weighted
	queue  chan *future
	// dispatchErr is the dispatcher's error, set before it closes queue.
	dispatchErr error
	held        int64
	closed      bool
}

type future struct {
	chunk Chunk
	err   error
	done  chan struct{}
}

// Prefetch starts reading ranges. Call Next until it returns io.EOF or an
// error, and Close in every case.
func Prefetch(ctx context.Context, ranges []Range, opts PrefetchOptions) *Prefetcher {
	if opts.InFlight <= 0 {
		opts.InFlight = 4
	}
	if opts.Budget <= 0 {
		opts.Budget = 64 << 20
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = max(1, opts.Budget/int64(opts.InFlight+1))
	}
	opts.ChunkSize = min(opts.ChunkSize, opts.Budget)
	ctx, cancel := context.WithCancel(ctx)
	p := &Prefetcher{ctx: ctx, cancel: cancel, budget: semaphore.NewWeighted(opts.Budget), queue: make(chan *future, opts.InFlight)}
	go p.dispatch(ranges, opts.ChunkSize, opts.Budget)
	return p
}

// Chunk buffers of a MiB or more are recycled: a scan of a bucket reads
// every segment into a buffer of a few MiB, and fresh ones made the
// garbage collector run every few segments. Their capacities are rounded
// up to a multiple of chunkClass so that a buffer serves the next
// segments of about the same size; those of each class share a pool.
const (
	chunkClass     = 256 << 10
	minPooledChunk = 1 << 20
	maxPooledChunk = 64 << 20
)

var chunkPools [maxPooledChunk/chunkClass + 1]sync.Pool

// chunkCap is the capacity of the buffer for a read of n bytes under the
// budget: rounded up to its class where it is pooled and fits.
func chunkCap(n, budget int64) int64 {
	if n < minPooledChunk || n > maxPooledChunk {
		return n
	}
	if c := (n + chunkClass - 1) / chunkClass * chunkClass; c <= budget {
		return c
	}
	return n
}

func newChunk(n, c int64) []byte {
	if c%chunkClass == 0 && c >= minPooledChunk && c <= maxPooledChunk {
		if b, ok := chunkPools[c/chunkClass].Get().(*[]byte); ok {
			return (*b)[:n]
		}
	}
	return make([]byte, n, c)
}

// ReleaseChunk gives the buffer of a Chunk's Data back for later reads,
// once its holder uses neither it nor anything read from it any more. A
// buffer of another capacity (one a caller grew by appending) is left to
// the garbage collector.
func ReleaseChunk(b []byte) {
	c := int64(cap(b))
	if c%chunkClass != 0 || c < minPooledChunk || c > maxPooledChunk {
		return
	}
	b = b[:0]
	chunkPools[c/chunkClass].Put(&b)
}

func (p *Prefetcher) dispatch(ranges []Range, chunk, budget int64) {
	defer close(p.queue)
	for i, r := range ranges {
		if r.Off < 0 || r.Len < 0 || r.Off > r.File.Size()-r.Len {
			p.dispatchErr = fmt.Errorf("storage: range %d+%d lies outside its file of %d bytes", r.Off, r.Len, r.File.Size())
			return
		}
		for off, end := r.Off, r.Off+r.Len; off < end; off += chunk {
			n := min(chunk, end-off)
			c := chunkCap(n, budget)
			if err := p.budget.Acquire(p.ctx, c); err != nil {
				p.dispatchErr = err
				return
			}
			f := &future{chunk: Chunk{Range: i, Off: off}, done: make(chan struct{})}
			go func() {
				defer close(f.done)
				f.chunk.Data = newChunk(n, c)
				m, err := r.File.ReadAt(f.chunk.Data, off)
				if m == int(n) {
					err = nil
				} else if err == nil || err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				f.err = err
			}()
			select {
			case p.queue <- f:
			case <-p.ctx.Done():
				<-f.done
				p.budget.Release(c)
				ReleaseChunk(f.chunk.Data)
				p.dispatchErr = p.ctx.Err()
				return
			}
		}
	}
}

// Next returns the next chunk, in the order of the ranges, or io.EOF after
// the last. The previous chunk's Data is released: it must not be used
// once Next is called again.
func (p *Prefetcher) Next() (Chunk, error) {
	p.release()
	f, ok := <-p.queue
	if !ok {
		if p.dispatchErr != nil {
			return Chunk{}, p.dispatchErr
		}
		return Chunk{}, io.EOF
	}
	<-f.done
	p.held = int64(cap(f.chunk.Data))
	if f.err != nil {
		return Chunk{}, f.err
	}
	return f.chunk, nil
}

func (p *Prefetcher) release() {
	if p.held > 0 {
		p.budget.Release(p.held)
		p.held = 0
	}
}

// Close stops the reads and waits for those in flight.
func (p *Prefetcher) Close() {
	if p.closed {
		return
	}
	p.closed = true
	p.cancel()
	p.release()
	for f := range p.queue {
		<-f.done
		p.budget.Release(int64(cap(f.chunk.Data)))
		ReleaseChunk(f.chunk.Data)
	}
}
