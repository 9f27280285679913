package pebblebackend

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// Restore loads the owned key groups of operator op of r into the database,
// which is expected to hold nothing yet for the restored states. Entries
// arrive in the format's order, which is the database's order within a
// (key group, state); segments are taken key group by key group and, within
// one, by state id, so the whole restore writes keys in ascending order and
// flushes produce sstables that do not overlap, which compaction can move
// down a level without rewriting them. Writes go through batches of bounded
// size, and values are copied as they are unless the plan converts them.
func (b *Backend) Restore(ctx context.Context, r *snapshotfmt.Reader, op int, opts state.RestoreOptions) error {
	if err := b.check(); err != nil {
		return err
	}
	meta := r.Metadata()
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
	plan, err := state.PlanRestore(sop, specs, timers, opts)
	if err != nil {
		return err
	}
	units := b.restoreUnits(r, op, plan)
	w := newBatchWriter(b.db)
	for kg := b.kgs.Start; kg <= b.kgs.End; kg++ {
		for _, u := range units {
			if len(u.segs) == 0 || u.segs[0].KeyGroup != kg {
				continue
			}
			if err := b.restoreSegment(ctx, r, u.segs[0], u, w); err != nil {
				w.abort()
				return fmt.Errorf("pebblebackend: restore of operator %q, key group %d, ref %d: %w", sop.UID, kg, u.p.Ref, err)
			}
			u.segs = u.segs[1:]
		}
	}
	if err := w.finish(); err != nil {
		return err
	}
	for i := range plan {
		if t := plan[i].Timers; t != "" {
			if err := b.timerByName[t].reloadAll(); err != nil {
				return err
			}
		}
	}
	return nil
}

// restoreUnit is one planned state or timer service with its segments in
// the owned key groups that are still to be restored.
type restoreUnit struct {
	p    *state.Restored
	id   uint16
	kind savepoint.Kind // zero for a timer service
	segs []snapshotfmt.Segment
}

// restoreUnits returns the plan's units in ascending state id order, the
// database order within a key group.
func (b *Backend) restoreUnits(r *snapshotfmt.Reader, op int, plan []state.Restored) []*restoreUnit {
	units := make([]*restoreUnit, len(plan))
	for i := range plan {
		u := &restoreUnit{p: &plan[i], segs: r.StateSegments(op, plan[i].Ref, b.kgs)}
		if s := plan[i].Spec; s != nil {
			st := b.stateByName[s.Name]
			u.id, u.kind = st.id, st.spec.Kind
		} else {
			u.id = b.timerByName[plan[i].Timers].id
		}
		units[i] = u
	}
	slices.SortFunc(units, func(a, b *restoreUnit) int { return cmp.Compare(a.id, b.id) })
	return units
}

func (b *Backend) restoreSegment(ctx context.Context, r *snapshotfmt.Reader, seg snapshotfmt.Segment, u *restoreUnit, w *batchWriter) (err error) {
	it := r.Entries(ctx, seg)
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	// A list's elements get sequences 0, 1, ... per (key, namespace), which
	// the entries of one segment bring one run after another.
	var seq uint64
	var prevKey, prevNS []byte
	first := true
	for it.Next() {
		e := it.Entry()
		k := appendPrefix(b.kbuf[:0], seg.KeyGroup, u.id)
		if u.p.Spec == nil {
			k = appendTime(k, e.Timestamp)
		}
		k = appendEscaped(k, e.Key)
		k = appendEscaped(k, e.Namespace)
		switch u.kind {
		case savepoint.List:
			if first || !bytes.Equal(prevKey, e.Key) || !bytes.Equal(prevNS, e.Namespace) {
				seq = 0
				prevKey = append(prevKey[:0], e.Key...)
				prevNS = append(prevNS[:0], e.Namespace...)
				first = false
			}
			k = binary.BigEndian.AppendUint64(k, seq)
			seq++
		case savepoint.Map:
			k = appendEscaped(k, e.MapKey)
		}
		b.kbuf = k
		v := e.Value
		if u.p.Convert != nil {
			if b.vbuf, err = u.p.Convert(b.vbuf[:0], e.Value); err != nil {
				return err
			}
			v = b.vbuf
		}
		if err := w.set(k, v); err != nil {
			return err
		}
	}
	return it.Err()
}
