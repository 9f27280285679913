package evolve

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// unreadable is a value the new serializer has no reading of.
type unreadable struct {
	at  Location
	err error
}

// firstUnreadable reads every value of state ref of operator op through
// conv, segments in parallel, and returns the first value in key-group
// order that conv finds unreadable, or nil. Memory holds one block and one
// value per worker.
func firstUnreadable(ctx context.Context, r *snapshotfmt.Reader, op, ref int, conv serializers.Migrate, workers int) (*unreadable, error) {
	o := &r.Metadata().Operators[op]
	segs := r.StateSegments(op, ref, keygroup.All(o.MaxParallelism))
	key := keyPrinter(o.Key)
	var (
		mu    sync.Mutex
		first = len(segs) // the index of the segment of found
		found *unreadable
		next  atomic.Int64
	)
	g, ctx := errgroup.WithContext(ctx)
	for range max(1, workers) {
		g.Go(func() error {
			var buf []byte
			for {
				// Segments are taken in order: past the first that holds an
				// unreadable value, none can hold an earlier one.
				i := int(next.Add(1) - 1)
				mu.Lock()
				done := i >= first
				mu.Unlock()
				if done {
					return nil
				}
				u, err := scanSegment(ctx, r, segs[i], conv, key, &buf)
				if err != nil {
					return err
				}
				if u != nil {
					mu.Lock()
					if i < first {
						first, found = i, u
					}
					mu.Unlock()
				}
			}
		})
	}
	return found, g.Wait()
}

func scanSegment(ctx context.Context, r *snapshotfmt.Reader, seg snapshotfmt.Segment, conv serializers.Migrate, key func([]byte) string, buf *[]byte) (*unreadable, error) {
	it := r.Entries(ctx, seg)
	defer it.Close()
	for n := uint64(0); it.Next(); n++ {
		e := it.Entry()
		var err error
		if *buf, err = conv((*buf)[:0], e.Value); err != nil {
			at := Location{File: seg.File, KeyGroup: seg.KeyGroup, Offset: seg.Offset, Entry: n, Key: key(e.Key)}
			if errors.Is(err, serializers.ErrUnreadable) {
				return &unreadable{at: at, err: err}, nil
			}
			return nil, &snapshotfmt.Error{File: seg.File, KeyGroup: seg.KeyGroup, Offset: seg.Offset,
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

func (e *badValue) Unwrap() []error { return []error{snapshotfmt.ErrCorrupt, e.err} }
