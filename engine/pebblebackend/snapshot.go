package pebblebackend

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// ctxCheckEvery is how many entries a long scan handles between checks of
// its context.
const ctxCheckEvery = 4096

// snapshotUnit is one declared state or timer service with its ref in the
// savepoint operator.
type snapshotUnit struct {
	ref    savepoint.StateRef
	id     uint16
	state  *stateInfo
	timers *timerService
}

func (u *snapshotUnit) what() string {
	if u.state != nil {
		return fmt.Sprintf("state %q", u.state.spec.Name)
	}
	return fmt.Sprintf("timer service %q", u.timers.name)
}

// units resolves the refs of every declared state and timer service in op,
// in ascending ref order, the order segments are written in.
func (b *Backend) units(opIdx int, op *savepoint.Operator) ([]snapshotUnit, error) {
	var us []snapshotUnit
	for _, s := range b.states {
		ref, ok := state.Ref(opIdx, op, s.spec.Name)
		if !ok {
			return nil, fmt.Errorf("pebblebackend: state %q is not in the savepoint's operator %q", s.spec.Name, op.UID)
		}
		us = append(us, snapshotUnit{ref: ref, id: s.id, state: s})
	}
	for _, t := range b.timers {
		ref, ok := state.TimerRef(opIdx, op, t.name)
		if !ok {
			return nil, fmt.Errorf("pebblebackend: timer service %q is not in the savepoint's operator %q", t.name, op.UID)
		}
		us = append(us, snapshotUnit{ref: ref, id: t.id, timers: t})
	}
	slices.SortFunc(us, func(a, b snapshotUnit) int { return a.ref.Compare(b.ref) })
	return us, nil
}

// Snapshot streams every owned key group of every declared state and timer
// service into f from one consistent view of the database. Each (key group,
// state) is one range scan whose order is already the format's, and values
// are copied as stored.
func (b *Backend) Snapshot(ctx context.Context, f *snapshotfmt.DataFileWriter, op int, meta *savepoint.Operator, now int64) (err error) {
	if err := b.check(); err != nil {
		return err
	}
	us, err := b.units(op, meta)
	if err != nil {
		return err
	}
	snap := b.db.NewSnapshot()
	defer func() {
		if cerr := snap.Close(); err == nil {
			err = cerr
		}
	}()
	it, err := snap.NewIter(&pebble.IterOptions{
		LowerBound: keyGroupStart(b.kgs.Start),
		UpperBound: keyGroupStart(b.kgs.End + 1),
	})
	if err != nil {
		return err
	}
	defer closeIter(it, &err)
	sw := segmentScan{ctx: ctx, f: f, now: now, it: it}
	for kg := b.kgs.Start; kg <= b.kgs.End; kg++ {
		for i := range us {
			if err := sw.scan(kg, &us[i]); err != nil {
				return fmt.Errorf("pebblebackend: snapshot of key group %d, %s: %w", kg, us[i].what(), err)
			}
		}
	}
	return nil
}

// segmentScan writes the segments of one snapshot; its buffers are reused
// from entry to entry.
type segmentScan struct {
	ctx context.Context
	f   *snapshotfmt.DataFileWriter
	now int64
	it  *pebble.Iterator
	n   int
	dec entryDecoder
}

// scan writes one (key group, state) segment. The segment is opened at its
// first entry, so an empty one is never written.
func (sc *segmentScan) scan(kg int, u *snapshotUnit) (err error) {
	p := appendPrefix(nil, kg, u.id)
	var seg *snapshotfmt.SegmentWriter
	defer func() {
		if seg != nil {
			if cerr := seg.Close(); err == nil {
				err = cerr
			}
		}
	}()
	kind := savepoint.Kind(0)
	if u.state != nil {
		kind = u.state.spec.Kind
	}
	for ok := sc.it.SeekGE(p); ok && bytes.HasPrefix(sc.it.Key(), p); ok = sc.it.Next() {
		if sc.n++; sc.n%ctxCheckEvery == 0 {
			if err := sc.ctx.Err(); err != nil {
				return err
			}
		}
		e, err := sc.dec.decode(kind, sc.it)
		if err != nil {
			return err
		}
		if u.state != nil {
			if t := u.state.spec.TTL; t != nil && t.CleanupFullSnapshot && u.state.expiredAt(e.Value, sc.now) {
				continue
			}
		}
		if seg == nil {
			if seg, err = sc.f.Segment(u.ref, kg); err != nil {
				return err
			}
		}
		if err := seg.Add(e); err != nil {
			return err
		}
	}
	return sc.it.Error()
}
