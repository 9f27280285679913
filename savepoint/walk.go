package savepoint

import "context"

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
// ahead (a stateproc savepoint in a bucket), or one that iterates each
// segment with SegmentEntries. Close it in every case.
func WalkSegments(ctx context.Context, src Source, segs []Segment) Walk {
	if s, ok := src.(interface {
		WalkSegments(context.Context, []Segment) Walk
	}); ok {
		if w := s.WalkSegments(ctx, segs); w != nil {
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
