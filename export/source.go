package export

import (
	"context"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// Source is what an export reads: the layout-independent model of a
// savepoint and its entries per key group. stateproc's own format provides
// it through SnapshotSource; a reader of another layout (Flink's) can
// provide it too.
type Source interface {
	Metadata() *savepoint.Metadata
	// Index returns the index numbers of keyed state or timer service ref
	// (as in snapshotfmt.Segment.Ref) of operator op, one per key group of
	// kgs that holds entries, in key-group order.
	Index(op, ref int, kgs keygroup.Range) []savepoint.Stats
	// Entries streams the entries of ref in key group kg in their stored
	// order.
	Entries(ctx context.Context, op, ref, kg int) Entries
}

// Entries is a stream of entries with a sticky error, as
// snapshotfmt.Iterator is.
type Entries interface {
	Next() bool
	// Entry is valid until the next call of Next.
	Entry() *savepoint.Entry
	Err() error
	Close() error
}

// SnapshotSource reads a savepoint in stateproc's format.
func SnapshotSource(r *snapshotfmt.Reader) Source { return snapshotSource{r} }

type snapshotSource struct{ r *snapshotfmt.Reader }

func (s snapshotSource) Metadata() *savepoint.Metadata { return s.r.Metadata() }

func (s snapshotSource) Index(op, ref int, kgs keygroup.Range) []savepoint.Stats {
	var out []savepoint.Stats
	for _, seg := range s.r.StateSegments(op, ref, kgs) {
		out = append(out, seg.Stats)
	}
	return out
}

func (s snapshotSource) Entries(ctx context.Context, op, ref, kg int) Entries {
	segs := s.r.StateSegments(op, ref, keygroup.Range{Start: kg, End: kg})
	if len(segs) == 0 {
		return emptyEntries{}
	}
	return s.r.Entries(ctx, segs[0])
}

type emptyEntries struct{}

func (emptyEntries) Next() bool              { return false }
func (emptyEntries) Entry() *savepoint.Entry { return nil }
func (emptyEntries) Err() error              { return nil }
func (emptyEntries) Close() error            { return nil }
