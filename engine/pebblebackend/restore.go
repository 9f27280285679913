package pebblebackend

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// Restore loads the owned key groups of operator op of src into the
// database, which is expected to hold nothing yet for the restored states.
// Entries arrive key group by key group in the format's order, which is the
// database's order within a (key group, state); the restore takes one key
// group at a time from every state's iterator in ascending state id order,
// so the whole restore writes keys in ascending order. It writes them
// straight into sstables that the database then ingests (see
// restoreWriter): the restored state never passes through a memtable or a
// flush, and lands in the bottom level. A source in another order has what
// follows its first key out of order written through batches of bounded
// size instead. Values are copied as they are unless the plan converts
// them.
func (b *Backend) Restore(ctx context.Context, src savepoint.Source, op int, opts state.RestoreOptions) (err error) {
	if err := b.check(); err != nil {
		return err
	}
	meta := src.Metadata()
	if op < 0 || op >= len(meta.Operators) {
		return fmt.Errorf("pebblebackend: restore: the savepoint has no operator %d", op)
	}
	sop := &meta.Operators[op]
	if sop.MaxParallelism != b.maxP {
		return fmt.Errorf("pebblebackend: restore: operator %q has max parallelism %d, the backend %d; rescale the savepoint first", sop.UID, sop.MaxParallelism, b.maxP)
	}
	if sop.KeyHash != keygroup.Murmur3 {
		return fmt.Errorf("pebblebackend: restore: operator %q uses key hash %v, the backend %v", sop.UID, sop.KeyHash, keygroup.Murmur3)
	}
	specs := make([]*state.Spec, len(b.states))
	for i, s := range b.states {
		specs[i] = s.spec
	}
	timers := make(map[string]serializers.Serializer, len(b.timers))
	for _, t := range b.timers {
		timers[t.name] = t.ns
	}
	plan, err := state.PlanRestore(op, sop, specs, timers, opts)
	if err != nil {
		return err
	}
	units := b.restoreUnits(ctx, src, plan)
	defer func() {
		for _, u := range units {
			if cerr := u.it.Close(); err == nil {
				err = cerr
			}
		}
	}()
	// The restore writes around the write batch, which must not hold older
	// writes of the same keys.
	if err := b.commitWrites(); err != nil {
		return err
	}
	// It writes list elements the list memo does not see.
	if err := b.forgetListEnds(); err != nil {
		return err
	}
	// Restored entries bring times the sweeper has not seen.
	for _, s := range b.states {
		s.lowTime, s.pass = math.MinInt64, false
	}
	w := b.newRestoreWriter(ctx)
	for kg := b.kgs.Start; kg <= b.kgs.End; kg++ {
		for _, u := range units {
			if err := b.restoreKeyGroup(kg, u, w); err != nil {
				w.abort()
				return fmt.Errorf("pebblebackend: restore of %s, key group %d: %w", meta.Describe(u.p.Ref), kg, err)
			}
		}
	}
	for _, u := range units {
		if u.valid {
			w.abort()
			return fmt.Errorf("pebblebackend: restore of %s: the source gave an entry of key group %d, outside the requested %v", meta.Describe(u.p.Ref), u.it.Entry().KeyGroup, b.kgs)
		}
	}
	if err := w.finish(); err != nil {
		return err
	}
	// The restore wrote around the kept iterator's view.
	b.dropKept()
	for i := range plan {
		if t := plan[i].Timers; t != "" {
			if err := b.timerByName[t].reloadAll(); err != nil {
				return err
			}
		}
	}
	return nil
}

// restoreUnit is one planned state or timer service with the iterator over
// its entries in the owned key groups; valid says whether the iterator
// stands on an entry not restored yet.
type restoreUnit struct {
	p     *state.Restored
	id    uint16
	kind  savepoint.Kind // zero for a timer service
	it    savepoint.EntryIterator
	valid bool
	// seq numbers the elements of the list being restored: a list's elements
	// get sequences 0, 1, ... per (key, namespace), which the entries bring
	// one run after another.
	seq             uint64
	prevKey, prevNS []byte
	listStarted     bool
}

// restoreUnits returns the plan's units in ascending state id order, the
// database order within a key group, each positioned on its first entry.
func (b *Backend) restoreUnits(ctx context.Context, src savepoint.Source, plan []state.Restored) []*restoreUnit {
	units := make([]*restoreUnit, len(plan))
	for i := range plan {
		u := &restoreUnit{p: &plan[i], it: src.Entries(ctx, plan[i].Ref, b.kgs)}
		if s := plan[i].Spec; s != nil {
			st := b.stateByName[s.Name]
			u.id, u.kind = st.id, st.spec.Kind
		} else {
			u.id = b.timerByName[plan[i].Timers].id
		}
		u.valid = u.it.Next()
		units[i] = u
	}
	slices.SortFunc(units, func(a, b *restoreUnit) int { return cmp.Compare(a.id, b.id) })
	return units
}

// restoreKeyGroup writes the entries of u in key group kg and leaves u on
// the first entry of a later key group, or at its end.
func (b *Backend) restoreKeyGroup(kg int, u *restoreUnit, w *restoreWriter) error {
	for ; u.valid; u.valid = u.it.Next() {
		e := u.it.Entry()
		if e.KeyGroup < kg {
			return fmt.Errorf("the source gave an entry of key group %d after key group %d", e.KeyGroup, kg)
		}
		if e.KeyGroup > kg {
			return nil
		}
		if err := b.restoreEntry(u, e, w); err != nil {
			return err
		}
	}
	return u.it.Err()
}

func (b *Backend) restoreEntry(u *restoreUnit, e *savepoint.Entry, w *restoreWriter) error {
	k := appendPrefix(b.kbuf[:0], e.KeyGroup, u.id)
	if u.p.Spec == nil {
		k = appendTime(k, e.Timestamp)
	}
	k = appendEscaped(k, e.Key)
	k = appendEscaped(k, e.Namespace)
	switch u.kind {
	case savepoint.List:
		if !u.listStarted || !bytes.Equal(u.prevKey, e.Key) || !bytes.Equal(u.prevNS, e.Namespace) {
			u.seq = 0
			u.prevKey = append(u.prevKey[:0], e.Key...)
			u.prevNS = append(u.prevNS[:0], e.Namespace...)
			u.listStarted = true
		}
		if u.seq == 0 {
			b.lists.add(k)
		}
		k = binary.BigEndian.AppendUint64(k, u.seq)
		u.seq++
	case savepoint.Map:
		k = appendEscaped(k, e.MapKey)
	}
	b.kbuf = k
	v := e.Value
	if u.p.Convert != nil {
		var err error
		if b.vbuf, err = u.p.Convert(b.vbuf[:0], e.Value); err != nil {
			return err
		}
		v = b.vbuf
	}
	return w.set(k, v)
}
