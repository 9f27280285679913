package savepoint

import (
	"context"
	"fmt"
	"sync"
)

// Walk iterates a list of segments for workers that take them in the
// list's order, each the next one when done with its last (as
// internal/workers runs them). A source in a bucket reads the next
// segments ahead while the workers decode the current ones, so that a
// worker seldom waits for a request at a segment's start.
type Walk interface {
	// Entries iterates the entries of segment i of the list, as
	// SegmentEntries does. Each segment is iterated once, in the list's
	// order, and each iterator closed.
	Entries(ctx context.Context, i int) EntryIterator
	// Close stops the reads ahead once every iterator is closed.
	Close()
}

// WalkSegments returns a Walk over segs of src: src's own, if it reads
// ahead (a savepoint in a bucket), or one that iterates each segment with
// SegmentEntries. Close it in every case.
func WalkSegments(ctx context.Context, src Source, segs []Segment) Walk {
	return WalkSegmentsShared(ctx, src, segs, 1)
}

// WalkSegmentsShared is WalkSegments for one of share walks that run at
// once (the runs of an export, one per worker): each reads ahead within a
// share-th of what one walk may hold and keep in flight, so that together
// they hold what one does.
func WalkSegmentsShared(ctx context.Context, src Source, segs []Segment, share int) Walk {
	if s, ok := src.(interface {
		WalkSegments(ctx context.Context, segs []Segment, share int) Walk
	}); ok {
		if w := s.WalkSegments(ctx, segs, max(share, 1)); w != nil {
			return w
		}
	}
	return plainWalk{src, segs}
}

type plainWalk struct {
	src  Source
	segs []Segment
}

func (w plainWalk) Entries(ctx context.Context, i int) EntryIterator {
	return SegmentEntries(ctx, w.src, w.segs[i])
}

func (plainWalk) Close() {}

// Primer is implemented by the iterators that can make their first read
// before they are asked for an entry. An error of that read is the
// iterator's: its Next returns false and Err returns it.
type Primer interface {
	Prime()
}

// StartAhead returns a Walk over segs of src that starts the iterators of
// up to depth segments ahead of the one asked for, each on a goroutine of
// its own that makes its first read: for a source in a bucket whose reads
// cannot be listed up front (an Apache Flink savepoint, whose segments
// are parts of key groups the reader locates itself), so that a worker
// seldom waits for a request at a segment's start. An iterator that is a
// Primer is primed and given to the worker as it is, with the batch
// methods it has (ValueBatcher); any other makes its first Next ahead.
// The segments started and not taken yet are at most depth, and their
// stored lengths at most budget, beyond the one a worker asks for. The
// iterators read with ctx, and Close closes those no worker took.
func StartAhead(ctx context.Context, src Source, segs []Segment, depth int, budget int64) Walk {
	return &aheadWalk{ctx: ctx, src: src, segs: segs, depth: max(depth, 1), budget: budget, started: make([]*startedSegment, len(segs))}
}

type aheadWalk struct {
	ctx    context.Context
	src    Source
	segs   []Segment
	depth  int
	budget int64
	mu     sync.Mutex
	// started holds the segments whose iterators were started, until a
	// worker takes them, pending their lengths; next is the first not
	// started yet.
	started []*startedSegment
	pending int64
	next    int
	wg      sync.WaitGroup
}

// startedSegment is a segment's iterator after its first read: primed,
// or after its first Next, whose result first is.
type startedSegment struct {
	done   chan struct{}
	it     EntryIterator
	primed bool
	first  bool
}

func (w *aheadWalk) Entries(_ context.Context, i int) EntryIterator {
	w.mu.Lock()
	for ; w.next < len(w.segs) && w.next <= i+w.depth && (w.next <= i || w.pending+w.segs[w.next].Length <= w.budget); w.next++ {
		s := &startedSegment{done: make(chan struct{})}
		w.started[w.next] = s
		w.pending += w.segs[w.next].Length
		w.wg.Add(1)
		go func(seg Segment) {
			defer w.wg.Done()
			s.it = SegmentEntries(w.ctx, w.src, seg)
			if p, ok := s.it.(Primer); ok {
				p.Prime()
				s.primed = true
			} else {
				s.first = s.it.Next()
			}
			close(s.done)
		}(w.segs[w.next])
	}
	s := w.started[i]
	w.started[i] = nil
	if s != nil {
		w.pending -= w.segs[i].Length
	}
	w.mu.Unlock()
	if s == nil {
		return Failed(fmt.Errorf("savepoint: segment %d of the walk taken twice", i))
	}
	<-s.done
	if s.primed {
		return s.it
	}
	return &startedIterator{EntryIterator: s.it, pending: true, first: s.first}
}

// Close waits for the iterators started ahead and closes those that no
// worker took.
func (w *aheadWalk) Close() {
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, s := range w.started {
		if s != nil {
			s.it.Close()
			w.started[i] = nil
		}
	}
}

// startedIterator gives the result of the first Next, made ahead, and
// then those of the iterator's own.
type startedIterator struct {
	EntryIterator
	pending, first bool
}

func (it *startedIterator) Next() bool {
	if it.pending {
		it.pending = false
		return it.first
	}
	return it.EntryIterator.Next()
}
