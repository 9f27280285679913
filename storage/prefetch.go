package storage

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

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
	// lane is set for the reader of one range of an Ahead, whose
	// dispatcher it shares; shared is the buffer its last chunk is a part
	// of, if it is.
	lane   *lane
	shared *sharedRead
}

type future struct {
	chunk Chunk
	err   error
	done  chan struct{}
	// shared is set when chunk.Data is a part of a buffer read for
	// several ranges (see Ahead).
	shared *sharedRead
}

// sharedRead is a buffer read for several adjacent ranges of an Ahead,
// which goes back to the chunk pool once each range's reader is done
// with its part. The parts hold the budget of their lengths; excess, what
// the buffer's class adds to them, is given back with the buffer.
type sharedRead struct {
	buf    []byte
	parts  atomic.Int32
	budget *semaphore.Weighted
	excess int64
}

func (s *sharedRead) done() {
	if s.parts.Add(-1) == 0 {
		s.budget.Release(s.excess)
		ReleaseChunk(s.buf)
	}
}

// orDefault is o with the defaults its fields' comments give.
func (o PrefetchOptions) orDefault() PrefetchOptions {
	if o.InFlight <= 0 {
		o.InFlight = 4
	}
	if o.Budget <= 0 {
		o.Budget = 64 << 20
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = max(1, o.Budget/int64(o.InFlight+1))
	}
	o.ChunkSize = min(o.ChunkSize, o.Budget)
	return o
}

// Prefetch starts reading ranges. Call Next until it returns io.EOF or an
// error, and Close in every case.
func Prefetch(ctx context.Context, ranges []Range, opts PrefetchOptions) *Prefetcher {
	opts = opts.orDefault()
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
				f.err = readChunk(r.File, f.chunk.Data, off)
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
		err := p.dispatchErr
		if p.lane != nil {
			err = p.lane.err
		}
		if err != nil {
			return Chunk{}, err
		}
		return Chunk{}, io.EOF
	}
	<-f.done
	p.held = int64(cap(f.chunk.Data))
	p.shared = f.shared
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
	p.release()
	if p.lane != nil {
		if p.shared != nil {
			p.shared.done()
		}
		p.lane.drop(p.budget)
		return
	}
	p.cancel()
	for f := range p.queue {
		<-f.done
		p.budget.Release(int64(cap(f.chunk.Data)))
		ReleaseChunk(f.chunk.Data)
	}
}

// Ahead reads a list of ranges ahead of several consumers that each take
// one range at a time, in the order of the list, as the workers of a scan
// take the next segment when done with one. The reads run on across the
// ranges' ends, so that the next ranges are in flight while the current
// ones are decoded, within one budget for all of them: what is being
// read, what waits to be taken, and the chunk each consumer holds.
// Ranges of an object in a bucket that follow each other without a gap
// are read together, up to a chunk, so that short segments do not cost a
// request each; no byte outside the ranges is read.
//
// A range's consumer takes it with Take and reads it with the Prefetcher
// that Take returns. The ranges must be taken in order (each once, by
// goroutines that each take the next one when they are done with theirs)
// and every one taken must be closed: the budget then never waits on a
// range nobody reads. Close the Ahead once the consumers are done; it
// gives back what was read of the ranges never taken.
type Ahead struct {
	ctx    context.Context
	cancel context.CancelFunc
	budget *semaphore.Weighted
	// reads holds a token per read in flight.
	reads chan struct{}
	lanes []lane
	done  chan struct{}
}

// lane is what Ahead has read of one range: its chunks in order, in a
// queue long enough for all of them, so that the dispatcher never waits on
// its consumer, only on the budget.
type lane struct {
	mu    sync.Mutex
	queue chan *future
	// err is why the range was not read to its end, set before queue is
	// closed.
	err error
	// dropped is set once the consumer is done: the dispatcher reads no
	// more of the range.
	dropped bool
}

// ReadAhead starts reading ranges for consumers that take them with Take.
// opts bound the reads in flight (InFlight), across all ranges, and the
// bytes held (Budget).
func ReadAhead(ctx context.Context, ranges []Range, opts PrefetchOptions) *Ahead {
	opts = opts.orDefault()
	ctx, cancel := context.WithCancel(ctx)
	a := &Ahead{ctx: ctx, cancel: cancel, budget: semaphore.NewWeighted(opts.Budget),
		reads: make(chan struct{}, opts.InFlight), lanes: make([]lane, len(ranges)), done: make(chan struct{})}
	for i, r := range ranges {
		chunks := 0
		if r.Len > 0 {
			chunks = int((r.Len + opts.ChunkSize - 1) / opts.ChunkSize)
		}
		a.lanes[i].queue = make(chan *future, chunks)
	}
	go a.dispatch(ranges, opts.ChunkSize, opts.Budget)
	return a
}

func (a *Ahead) dispatch(ranges []Range, chunk, budget int64) {
	defer close(a.done)
	for i := 0; i < len(ranges); {
		var err error
		n := adjacent(ranges[i:], chunk)
		if n > 1 {
			err = a.dispatchAdjacent(i, ranges[i:i+n], budget)
		} else {
			err = a.dispatchRange(&a.lanes[i], i, ranges[i], chunk, budget)
		}
		for j := i; j < i+n; j++ {
			a.lanes[j].finish(err)
		}
		i += n
		if a.ctx.Err() != nil {
			for j := i; j < len(ranges); j++ {
				a.lanes[j].finish(a.ctx.Err())
			}
			return
		}
	}
}

// finish ends what l will get, with err if it was not read to its end.
func (l *lane) finish(err error) {
	l.mu.Lock()
	l.err = err
	close(l.queue)
	l.mu.Unlock()
}

// adjacent is how many ranges from the start of rs are read in one
// request: ranges of one object in a bucket, each following the one
// before without a gap, that fit one chunk together. A segment shorter
// than a read costs a request of its own otherwise, and a server spends
// about as much on a request as on a MiB of its body. A range of a length
// that the chunk pool keeps is read alone: its part of a shared buffer
// must not be pooled (see ReleaseChunk).
func adjacent(rs []Range, chunk int64) int {
	alone := func(r Range) bool {
		f, ok := r.File.(*bucketFile)
		return !ok || r.Len <= 0 || r.Off < 0 || r.Off > f.size-r.Len || r.Len >= minPooledChunk && r.Len%chunkClass == 0
	}
	if alone(rs[0]) {
		return 1
	}
	n, total := 1, rs[0].Len
	for n < len(rs) && !alone(rs[n]) && rs[n].File == rs[0].File && rs[n].Off == rs[n-1].Off+rs[n-1].Len && total+rs[n].Len <= chunk {
		total += rs[n].Len
		n++
	}
	return n
}

// dispatchAdjacent reads rs, ranges that adjacent joined, with one
// request into one buffer, and hands each lane its part, whose capacity
// is its length: appending to a part never writes into another, and
// ReleaseChunk never pools a part (adjacent leaves out the lengths it
// pools). Each part gives back its length of the budget as any chunk
// does, and the buffer goes back to the pool once every range's reader
// is closed.
func (a *Ahead) dispatchAdjacent(first int, rs []Range, budget int64) error {
	off, end := rs[0].Off, rs[len(rs)-1].Off+rs[len(rs)-1].Len
	// The buffer's class may exceed the ranges: s holds that excess of
	// the budget.
	c := chunkCap(end-off, budget)
	if err := a.acquire(c); err != nil {
		return err
	}
	s := &sharedRead{budget: a.budget, excess: c - (end - off)}
	parts := make([]*future, len(rs))
	var unused int64
	for i, r := range rs {
		l := &a.lanes[first+i]
		l.mu.Lock()
		if !l.dropped {
			parts[i] = &future{chunk: Chunk{Range: first + i, Off: r.Off}, done: make(chan struct{}), shared: s}
			s.parts.Add(1)
			l.queue <- parts[i]
		} else {
			unused += r.Len
		}
		l.mu.Unlock()
	}
	if s.parts.Load() == 0 {
		<-a.reads
		a.budget.Release(c)
		return nil
	}
	a.budget.Release(unused)
	go func() {
		s.buf = newChunk(end-off, c)
		err := readChunk(rs[0].File, s.buf, off)
		<-a.reads
		for i, f := range parts {
			if f != nil {
				lo := rs[i].Off - off
				f.chunk.Data, f.err = s.buf[lo:lo+rs[i].Len:lo+rs[i].Len], err
				close(f.done)
			}
		}
	}()
	return nil
}

// dispatchRange starts the reads of r into l, as the budget and the reads
// in flight allow. A range that does not lie within its file is an error
// of its own lane only.
func (a *Ahead) dispatchRange(l *lane, i int, r Range, chunk, budget int64) error {
	if r.Off < 0 || r.Len < 0 || r.Off > r.File.Size()-r.Len {
		return fmt.Errorf("storage: range %d+%d lies outside its file of %d bytes", r.Off, r.Len, r.File.Size())
	}
	for off, end := r.Off, r.Off+r.Len; off < end; off += chunk {
		n := min(chunk, end-off)
		c := chunkCap(n, budget)
		l.mu.Lock()
		dropped := l.dropped
		l.mu.Unlock()
		if dropped {
			return nil
		}
		if err := a.acquire(c); err != nil {
			return err
		}
		f := &future{chunk: Chunk{Range: i, Off: off}, done: make(chan struct{})}
		l.mu.Lock()
		if l.dropped {
			l.mu.Unlock()
			<-a.reads
			a.budget.Release(c)
			return nil
		}
		l.queue <- f
		l.mu.Unlock()
		go func() {
			defer close(f.done)
			f.chunk.Data = newChunk(n, c)
			f.err = readChunk(r.File, f.chunk.Data, off)
			<-a.reads
		}()
	}
	return nil
}

// acquire takes c bytes of the budget and a read in flight, waiting for
// both.
func (a *Ahead) acquire(c int64) error {
	if err := a.budget.Acquire(a.ctx, c); err != nil {
		return err
	}
	select {
	case a.reads <- struct{}{}:
		return nil
	case <-a.ctx.Done():
		a.budget.Release(c)
		return a.ctx.Err()
	}
}

// readChunk fills p from f at off.
func readChunk(f File, p []byte, off int64) error {
	m, err := f.ReadAt(p, off)
	if m == len(p) {
		return nil
	} else if err == nil || err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Take returns the reader of range i, whose chunks' Range is i. Close it
// once done, whether or not it was read to its end. Its last chunk's Data
// must not be used after Close, which may give it back to the pool.
func (a *Ahead) Take(i int) *Prefetcher {
	return &Prefetcher{budget: a.budget, lane: &a.lanes[i], queue: a.lanes[i].queue}
}

// Close stops the reads, waits for those in flight, and gives back what
// was read of ranges that were never taken or never closed; it must not
// be called while a consumer still reads.
func (a *Ahead) Close() {
	a.cancel()
	<-a.done
	for i := range a.lanes {
		a.lanes[i].drop(a.budget)
	}
}

// drop stops the reads of l and gives back what was read of it and not
// taken.
func (l *lane) drop(budget *semaphore.Weighted) {
	l.mu.Lock()
	l.dropped = true
	var left []*future
	for {
		select {
		case f, ok := <-l.queue:
			if ok {
				left = append(left, f)
				continue
			}
		default:
		}
		break
	}
	l.mu.Unlock()
	for _, f := range left {
		<-f.done
		budget.Release(int64(cap(f.chunk.Data)))
		if f.shared != nil {
			f.shared.done()
		} else {
			ReleaseChunk(f.chunk.Data)
		}
	}
}
