package snapshotfmt

import (
	"fmt"

	"github.com/stateproc/stateproc/savepoint"
)

// Tally gives the figures that the index of a savepoint would hold for a
// segment of the given entries: what a layout without such an index (the
// databases of an incremental checkpoint) reports for its segments, so
// that its figures read as a savepoint's would. It checks, as a writer
// does, that the entries come in the format's order and that every key
// lies in the key group.
type Tally struct {
	rw    *recordWriter
	where string
}

// NewTally starts the figures of the segment of ref in key group kg of a
// savepoint with metadata meta.
func NewTally(meta *savepoint.Metadata, ref savepoint.StateRef, kg int) (*Tally, error) {
	if err := meta.Check(ref); err != nil {
		return nil, fmt.Errorf("snapshotfmt: %w", err)
	}
	o := &meta.Operators[ref.Operator]
	if kg < 0 || kg >= o.MaxParallelism {
		return nil, fmt.Errorf("snapshotfmt: operator %q: key group %d not below max parallelism %d", o.UID, kg, o.MaxParallelism)
	}
	// The blocks are counted, not kept: the raw bytes depend on where
	// blocks are cut, which the default block size decides as a writer's.
	rw := newRecordWriter(DefaultBlockSize, func([]byte) error { return nil })
	rw.reset(shapeOf(o, ref, kg))
	if !ref.Timer {
		var ttlMillis int64
		if c := o.States[ref.State].TTL; c != nil {
			ttlMillis = c.Millis()
		}
		rw.hist = newHistCounts(shapeOf(o, ref, kg), ttlMillis, meta.CreatedAt)
	}
	return &Tally{rw: rw, where: fmt.Sprintf("%s key group %d", meta.Describe(ref), kg)}, nil
}

// Add counts one entry. An entry out of order or in the wrong key group is
// an error, and is not counted.
func (t *Tally) Add(e *savepoint.Entry) error {
	if err := t.rw.add(e); err != nil {
		return fmt.Errorf("snapshotfmt: %s: %w", t.where, err)
	}
	return nil
}

// Stats returns the figures of the entries added; no more may be added.
func (t *Tally) Stats() savepoint.Stats {
	t.rw.flush() // its emit cannot fail
	return t.rw.stats()
}
