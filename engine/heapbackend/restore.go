package heapbackend

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// Restore reads the owned key groups of every state and timer service that
// state.PlanRestore matches with a declared one. Entries are streamed one at
// a time from the source; only the decoded state stays in memory.
func (b *Backend) Restore(ctx context.Context, src savepoint.Source, op int, opts state.RestoreOptions) error {
	if b.closed {
		return errClosed
	}
	meta := src.Metadata()
	if op < 0 || op >= len(meta.Operators) {
		return fmt.Errorf("heapbackend: restore: no operator %d in a savepoint of %d operators", op, len(meta.Operators))
	}
	o := &meta.Operators[op]
	switch {
	case o.KeyHash != keygroup.Murmur3:
		return fmt.Errorf("heapbackend: restore: operator %q uses key hash %v, the engine %v", o.UID, o.KeyHash, keygroup.Murmur3)
	case o.MaxParallelism != b.maxP:
		return fmt.Errorf("heapbackend: restore: operator %q has max parallelism %d, the job %d (rescale the savepoint first)", o.UID, o.MaxParallelism, b.maxP)
	}
	timers := make(map[string]serializers.Serializer, len(b.timers))
	for name, t := range b.timers {
		timers[name] = t.ns
	}
	plan, err := state.PlanRestore(op, o, b.declared, timers, opts)
	if err != nil {
		return err
	}
	for _, p := range plan {
		var what string
		var add func(gi int, e *savepoint.Entry) error
		if p.Spec != nil {
			what = fmt.Sprintf("state %q", p.Spec.Name)
			add = b.stateInserter(p)
		} else {
			what = fmt.Sprintf("timer service %q", p.Timers)
			t := b.timers[p.Timers]
			add = func(gi int, e *savepoint.Entry) error {
				t.insert(gi, e.Timestamp, e.Key, e.Namespace)
				return nil
			}
		}
		if err := b.restoreState(src.Entries(ctx, p.Ref, b.kgs), add); err != nil {
			return fmt.Errorf("heapbackend: restore of operator %q %s: %w", o.UID, what, err)
		}
	}
	return nil
}

func (b *Backend) restoreState(it savepoint.EntryIterator, add func(gi int, e *savepoint.Entry) error) error {
	defer it.Close()
	for it.Next() {
		e := it.Entry()
		if !b.kgs.Contains(e.KeyGroup) {
			return fmt.Errorf("the source gave an entry of key group %d, outside the requested %v", e.KeyGroup, b.kgs)
		}
		if err := add(e.KeyGroup-b.kgs.Start, e); err != nil {
			return fmt.Errorf("key group %d: %w", e.KeyGroup, err)
		}
	}
	return it.Err()
}

// stateInserter returns the function that converts, decodes and stores one
// entry of the planned state.
func (b *Backend) stateInserter(p state.Restored) func(gi int, e *savepoint.Entry) error {
	s := b.stores[p.Spec.Name]
	var buf []byte
	return func(gi int, e *savepoint.Entry) error {
		v := e.Value
		if p.Convert != nil {
			var err error
			if buf, err = p.Convert(buf[:0], v); err != nil {
				return err
			}
			v = buf
		}
		c, err := decodeCell(p.Spec, v)
		if err != nil {
			return err
		}
		return s.restore(gi, e, c)
	}
}

// decodeCell splits a stored value into its TTL timestamp, when the state
// has TTL, and the decoded value.
func decodeCell(spec *state.Spec, v []byte) (state.Cell, error) {
	var c state.Cell
	if spec.TTL != nil {
		if len(v) < 8 {
			return c, fmt.Errorf("%w: a TTL value of %d bytes lacks its timestamp", serializers.ErrDecode, len(v))
		}
		c.Timestamp = int64(binary.BigEndian.Uint64(v))
		v = v[8:]
	}
	var err error
	c.Value, err = spec.Value.DecodeAny(v)
	return c, err
}
