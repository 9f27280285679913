package chkstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// Canonical is the checkpoint's canonical part.
func (cs *Reader) Canonical() *snapshotfmt.Reader { return cs.canonical }

// Native reports whether operator op's keyed state lies in native
// databases.
func (cs *Reader) Native(op int) bool {
	_, ok := cs.native[op]
	return ok
}

// Layout says what an incremental checkpoint is.
func (cs *Reader) Layout() savepoint.Layout {
	return savepoint.Layout{Name: "stateproc incremental checkpoint", Version: chkdir.Version,
		Details: []string{strconv.Itoa(len(cs.native)) + " operators in native Pebble databases"}}
}

// Segments counts the segments of ref in kgs from its entries when a
// native database holds it.
func (cs *Reader) Segments(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) ([]savepoint.Segment, error) {
	if _, ok := cs.native[ref.Operator]; !ok {
		return cs.canonical.Segments(ctx, ref, kgs)
	}
	meta := cs.Metadata()
	if err := meta.Check(ref); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	it := cs.Entries(ctx, ref, kgs)
	defer it.Close()
	var out []savepoint.Segment
	var t *snapshotfmt.Tally
	kg := -1
	end := func() {
		if t != nil {
			st := t.Stats()
			out = append(out, savepoint.Segment{Ref: ref, Stats: st, Length: int64(st.Bytes)})
		}
	}
	for it.Next() {
		e := it.Entry()
		if e.KeyGroup != kg {
			if e.KeyGroup < kg {
				return nil, Corrupt(fmt.Errorf("engine: %s: key group %d after key group %d", meta.Describe(ref), e.KeyGroup, kg))
			}
			end()
			var err error
			if t, err = snapshotfmt.NewTally(meta, ref, e.KeyGroup); err != nil {
				return nil, Corrupt(err)
			}
			kg = e.KeyGroup
		}
		if err := t.Add(e); err != nil {
			return nil, Corrupt(err)
		}
	}
	if err := it.Err(); err != nil {
		return nil, Corrupt(err)
	}
	end()
	return slices.Clip(out), nil
}

// CorruptEntries marks what goes wrong reading a native database through
// it as corruption of the checkpoint.
func CorruptEntries(it savepoint.EntryIterator) savepoint.EntryIterator {
	return &checkpointEntries{EntryIterator: it}
}

type checkpointEntries struct{ savepoint.EntryIterator }

func (c *checkpointEntries) Err() error { return Corrupt(c.EntryIterator.Err()) }

// Corrupt makes an error about the checkpoint's content match
// savepoint.ErrCorrupt, unless it already says what it is: a context's
// end, or bad input of the canonical part.
func Corrupt(err error) error {
	if err == nil || savepoint.BadInput(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &checkpointError{err}
}

type checkpointError struct{ err error }

func (e *checkpointError) Error() string   { return e.err.Error() }
func (e *checkpointError) Unwrap() []error { return []error{e.err, savepoint.ErrCorrupt} }
