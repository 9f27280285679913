package heapbackend

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// Snapshot writes, for each owned key group in ascending order, one segment
// per declared state and timer service in ascending ref order, which is the
// order the format requires of a data file.
func (b *Backend) Snapshot(ctx context.Context, f *snapshotfmt.DataFileWriter, op int, meta *savepoint.Operator, now int64) error {
	if b.closed {
		return errClosed
	}
	if meta.MaxParallelism != b.maxP {
		return fmt.Errorf("heapbackend: snapshot: operator %q has max parallelism %d, the backend %d", meta.UID, meta.MaxParallelism, b.maxP)
	}
	parts, err := b.parts(op, meta)
	if err != nil {
		return err
	}
	w := &entryWriter{ctx: ctx, now: now}
	for gi := range b.kgs.Len() {
		kg := b.kgs.Start + gi
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, p := range parts {
			if p.empty(gi) {
				continue
			}
			if w.seg, err = f.Segment(p.ref, kg); err != nil {
				return err
			}
			if err := p.write(w, gi); err != nil {
				return fmt.Errorf("heapbackend: snapshot of %s, key group %d: %w", p.what, kg, err)
			}
			if err := w.seg.Close(); err != nil {
				return err
			}
		}
	}
	return nil
}

// part is a declared state or timer service with its ref in the savepoint.
type part struct {
	ref   savepoint.StateRef
	what  string
	empty func(gi int) bool
	write func(w *entryWriter, gi int) error
}

// parts looks up the ref of every declared state and timer service and
// returns them in ref order. The metadata must describe the declared states
// as the backend stores them, or the data would not match it.
func (b *Backend) parts(op int, meta *savepoint.Operator) ([]part, error) {
	var parts []part
	for _, spec := range b.declared {
		ref, ok := state.Ref(op, meta, spec.Name)
		if !ok {
			return nil, fmt.Errorf("heapbackend: snapshot: operator %q does not list declared state %q", meta.UID, spec.Name)
		}
		saved := &meta.States[ref.State]
		if saved.Kind != spec.Kind || (saved.TTL == nil) != (spec.TTL == nil) {
			return nil, fmt.Errorf("heapbackend: snapshot: operator %q lists state %q as %s (TTL %t), declared as %s (TTL %t)",
				meta.UID, spec.Name, saved.Kind, saved.TTL != nil, spec.Kind, spec.TTL != nil)
		}
		s := b.stores[spec.Name]
		parts = append(parts, part{ref: ref, what: fmt.Sprintf("state %q", spec.Name), empty: s.empty, write: s.snapshot})
	}
	for name, t := range b.timers {
		ref, ok := state.TimerRef(op, meta, name)
		if !ok {
			return nil, fmt.Errorf("heapbackend: snapshot: operator %q does not list declared timer service %q", meta.UID, name)
		}
		parts = append(parts, part{ref: ref, what: fmt.Sprintf("timer service %q", name),
			empty: func(gi int) bool { return len(t.groups[gi]) == 0 }, write: t.snapshot})
	}
	slices.SortFunc(parts, func(a, b part) int { return a.ref.Compare(b.ref) })
	return parts, nil
}

// entryWriter turns records into savepoint entries of the current segment,
// reusing one entry and its buffers.
type entryWriter struct {
	ctx   context.Context
	now   int64
	seg   *snapshotfmt.SegmentWriter
	e     savepoint.Entry
	key   []byte
	ns    []byte
	mk    []byte
	value []byte
	added int
}

// record starts the entries of the record id.
func (w *entryWriter) record(id string) {
	var ns string
	w.key, ns = splitID(id, w.key[:0])
	w.ns = append(w.ns[:0], ns...)
	w.e = savepoint.Entry{Key: w.key, Namespace: w.ns}
}

// drops reports whether full-snapshot cleanup leaves c out.
func (w *entryWriter) drops(spec *state.Spec, c state.Cell) bool {
	return spec.TTL != nil && spec.TTL.CleanupFullSnapshot && spec.TTL.Expired(c.Timestamp, w.now)
}

// add writes one value, list element or map entry (mapKey is the serialized
// map key, used by map states only) of the current record.
func (w *entryWriter) add(spec *state.Spec, mapKey string, c state.Cell) error {
	w.value = w.value[:0]
	if spec.TTL != nil {
		w.value = binary.BigEndian.AppendUint64(w.value, uint64(c.Timestamp))
	}
	var err error
	if w.value, err = spec.Value.AppendAny(w.value, c.Value); err != nil {
		return err
	}
	w.e.Value = w.value
	w.e.MapKey = nil
	if spec.Kind == savepoint.Map {
		w.mk = append(w.mk[:0], mapKey...)
		w.e.MapKey = w.mk
	}
	return w.emit()
}

func (w *entryWriter) emit() error {
	// Checking the context every few thousand entries bounds the delay of a
	// cancellation without a cost per entry.
	if w.added++; w.added%4096 == 0 {
		if err := w.ctx.Err(); err != nil {
			return err
		}
	}
	return w.seg.Add(&w.e)
}

func (t *timerService) snapshot(w *entryWriter, gi int) error {
	for _, tm := range t.sorted(gi) {
		key, ns := splitID(tm.id[8:], w.key[:0])
		w.key = key
		w.ns = append(w.ns[:0], ns...)
		w.e = savepoint.Entry{Key: w.key, Namespace: w.ns, Timestamp: tm.ts}
		if err := w.emit(); err != nil {
			return err
		}
	}
	return nil
}
