package sptest

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// Write writes a savepoint to dir, which must not exist: meta, and the
// entries of each state and timer service in a single data file, each
// segment's entries sorted as the format demands. The sort is stable, so
// that a list's elements keep their order.
func Write(dir string, meta *savepoint.Metadata, entries map[savepoint.StateRef][]savepoint.Entry, opts snapshotfmt.Options) error {
	ctx := context.Background()
	staging, err := storage.Stage(dir, false)
	if err != nil {
		return err
	}
	w, err := snapshotfmt.NewWriter(staging, meta, opts)
	if err != nil {
		staging.Abort()
		return err
	}
	if err := writeSegments(ctx, w, meta, entries); err != nil {
		w.Abort()
		return err
	}
	return w.Finish(ctx)
}

func writeSegments(ctx context.Context, w *snapshotfmt.Writer, meta *savepoint.Metadata, entries map[savepoint.StateRef][]savepoint.Entry) error {
	f, err := w.CreateDataFile(ctx, "data-000")
	if err != nil {
		return err
	}
	type segKey struct {
		ref savepoint.StateRef
		kg  int
	}
	segs := map[segKey][]savepoint.Entry{}
	for ref, es := range entries {
		op := &meta.Operators[ref.Operator]
		for _, e := range es {
			sk := segKey{ref, keygroup.Of(e.Key, op.MaxParallelism)}
			segs[sk] = append(segs[sk], e)
		}
	}
	keys := slices.SortedFunc(maps.Keys(segs), func(a, b segKey) int {
		return cmp.Or(cmp.Compare(a.ref.Operator, b.ref.Operator), cmp.Compare(a.kg, b.kg), a.ref.Compare(b.ref))
	})
	for _, k := range keys {
		es := segs[k]
		if k.ref.Timer {
			slices.SortStableFunc(es, func(a, b savepoint.Entry) int {
				return cmp.Or(cmp.Compare(a.Timestamp, b.Timestamp), bytes.Compare(a.Key, b.Key), bytes.Compare(a.Namespace, b.Namespace))
			})
		} else {
			slices.SortStableFunc(es, func(a, b savepoint.Entry) int {
				return cmp.Or(bytes.Compare(a.Key, b.Key), bytes.Compare(a.Namespace, b.Namespace), bytes.Compare(a.MapKey, b.MapKey))
			})
		}
		sw, err := f.Segment(k.ref, k.kg)
		if err != nil {
			return err
		}
		for i := range es {
			if err := sw.Add(&es[i]); err != nil {
				return fmt.Errorf("%s key group %d: %w", meta.Describe(k.ref), k.kg, err)
			}
		}
		if err := sw.Close(); err != nil {
			return err
		}
	}
	return f.Close()
}
