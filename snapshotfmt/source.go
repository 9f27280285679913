package snapshotfmt

import (
	"context"
	"fmt"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
)

// Source returns r as a savepoint.Source, the layout-independent view that
// the engine restores from. It shares r's files: it is valid until r is
// closed.
func (r *Reader) Source() savepoint.Source { return source{r} }

type source struct{ r *Reader }

func (s source) Metadata() *savepoint.Metadata { return s.r.meta }

// Entries chains the iterators of the state's segments in kgs, which the
// index keeps sorted by key group.
func (s source) Entries(ctx context.Context, op, ref int, kgs keygroup.Range) savepoint.EntryIterator {
	ops := s.r.meta.Operators
	if op < 0 || op >= len(ops) {
		return savepoint.Failed(fmt.Errorf("snapshotfmt: no operator %d in a savepoint of %d operators", op, len(ops)))
	}
	if _, ok := ops[op].RefName(ref); !ok {
		return savepoint.Failed(fmt.Errorf("snapshotfmt: operator %q has no state or timer service %d", ops[op].UID, ref))
	}
	segs := s.r.StateSegments(op, ref, kgs)
	return savepoint.Chain(func() savepoint.EntryIterator {
		if len(segs) == 0 {
			return nil
		}
		it := s.r.Entries(ctx, segs[0])
		segs = segs[1:]
		return it
	})
}
