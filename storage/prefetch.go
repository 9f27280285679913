package storage

import (
	"context"
	"fmt"
	"io"

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
	Off  int64
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
	go p.dispatch(ranges, opts.ChunkSize)
	return p
}

func (p *Prefetcher) dispatch(ranges []Range, chunk int64) {
	defer close(p.queue)
	for i, r := range ranges {
		if r.Off < 0 || r.Len < 0 || r.Off > r.File.Size()-r.Len {
			p.dispatchErr = fmt.Errorf("storage: range %d+%d lies outside its file of %d bytes", r.Off, r.Len, r.File.Size())
			return
		}
		for off, end := r.Off, r.Off+r.Len; off < end; off += chunk {
			n := min(chunk, end-off)
			if err := p.budget.Acquire(p.ctx, n); err != nil {
				p.dispatchErr = err
				return
			}
			f := &future{chunk: Chunk{Range: i, Off: off}, done: make(chan struct{})}
			go func() {
				defer close(f.done)
				f.chunk.Data = make([]byte, n)
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
				p.budget.Release(n)
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
	}
}
