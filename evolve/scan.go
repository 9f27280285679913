package evolve

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// unreadable is a value the new serializer has no reading of.
type unreadable struct {
	at  Location
	err error
}

// firstUnreadable reads every value of state ref through conv, segments in
// parallel, and returns the first value in key-group order that conv finds
// unreadable, or nil. Memory holds one block and one value per worker.
func firstUnreadable(ctx context.Context, r savepoint.Source, ref savepoint.StateRef, conv serializers.Migrate, n int) (*unreadable, error) {
	o := &r.Metadata().Operators[ref.Operator]
	segs, err := r.Segments(ctx, ref, keygroup.All(o.MaxParallelism))
	if err != nil {
		return nil, err
	}
	key := keyPrinter(o.Key)
	var (
		mu    sync.Mutex
		first = len(segs) // the index of the segment of found
		found *unreadable
	)
	bufs := make([][]byte, max(1, n))
	err = workers.Run(ctx, len(segs), max(1, n), func(ctx context.Context, w, i int) error {
		// Segments are taken in order: past the first that holds an
		// unreadable value, none can hold an earlier one.
		mu.Lock()
		done := i >= first
		mu.Unlock()
		if done {
			return nil
		}
		u, err := scanSegment(ctx, r, segs[i], conv, key, &bufs[w])
		if err != nil || u == nil {
			return err
		}
		mu.Lock()
		if i < first {
			first, found = i, u
		}
		mu.Unlock()
		return nil
	})
	return found, err
}

func scanSegment(ctx context.Context, r savepoint.Source, seg savepoint.Segment, conv serializers.Migrate, key func([]byte) string, buf *[]byte) (*unreadable, error) {
	it := savepoint.SegmentEntries(ctx, r, seg)
	defer it.Close()
	for n := uint64(0); it.Next(); n++ {
		e := it.Entry()
		var err error
		if *buf, err = conv((*buf)[:0], e.Value); err != nil {
			at := Location{File: seg.File, KeyGroup: seg.KeyGroup, Offset: seg.Offset, Entry: n, Key: key(e.Key)}
			if errors.Is(err, serializers.ErrUnreadable) {
				return &unreadable{at: at, err: err}, nil
			}
			return nil, &savepoint.Error{Reader: "evolve", File: seg.File, KeyGroup: seg.KeyGroup, Offset: seg.Offset,
				Err: fmt.Errorf("entry %d of the segment at this offset: %w", n, &badValue{key: at.Key, err: err})}
		}
	}
	return nil, it.Err()
}

// badValue is a stored value that its own serializer cannot decode: the
// framing is sound but the bytes are not what the snapshot says. It counts
// as corruption.
type badValue struct {
	key string
	err error
}

func (e *badValue) Error() string {
	return fmt.Sprintf("the value of key %s does not decode: %v", e.key, e.err)
}

func (e *badValue) Unwrap() []error { return []error{savepoint.ErrCorrupt, e.err} }
