package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/stateproc/stateproc/compat"
	"github.com/stateproc/stateproc/engine/internal/coord"
	"github.com/stateproc/stateproc/engine/internal/flow"
	"github.com/stateproc/stateproc/engine/pebblebackend"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// task is one subtask of one operator in one run attempt.
type task struct {
	ctx     context.Context
	att     *attempt
	n       *node
	subtask int
	// op is the operator's index in the savepoint metadata, -1 when the
	// operator is not part of savepoints (stateless, no uid).
	op      int
	backend state.Backend
	clock   *subtaskClock
	// control carries the coordinator's commands to a source subtask.
	control chan sourceCmd

	// watermark is the subtask's event-time watermark: the combined
	// watermark of its inputs, or, for a source, the last it emitted.
	watermark   int64
	inBroadcast bool
	opened      map[state.Descriptor]bool
	bcast       map[string]*broadcastStore
	// restoredOp holds, per operator state name, the elements this subtask
	// gets from the savepoint it was restored from.
	restoredOp map[string][][]byte
	// opLists holds, per name, the operator list states Open obtained.
	opLists map[string]operatorList
	// snapshotOp returns the operator state of this subtask at a barrier.
	snapshotOp func(cp *checkpoint) (map[string][][]byte, error)
}

// Role is what the subtask is to the coordinator.
func (t *task) Role() coord.Role {
	switch t.n.kind {
	case sourceNode:
		return coord.SourceRole
	case keyedNode:
		return coord.KeyedRole
	case sinkNode:
		return coord.SinkRole
	}
	return coord.OtherRole
}

// Commands is where a source subtask receives the coordinator's commands.
func (t *task) Commands() chan<- coord.Command { return t.control }

func (t *task) errorf(format string, args ...any) error {
	return fmt.Errorf("engine: operator %s subtask %d: %w", t.n.label(), t.subtask, fmt.Errorf(format, args...))
}

func (t *task) newGate() *gate {
	return flow.NewGate[*checkpoint](t.ctx, nil)
}

// restoreKeyed registers the declared states that Open did not ask for
// (the savepoint may hold them) and loads this subtask's key groups.
func (t *task) restoreKeyed() error {
	for _, d := range t.n.states {
		if t.opened[d] {
			continue
		}
		spec := d.Spec()
		var err error
		switch spec.Kind {
		case savepoint.List:
			_, err = t.backend.RegisterList(spec)
		case savepoint.Map:
			_, err = t.backend.RegisterMap(spec)
		default:
			_, err = t.backend.RegisterValue(spec)
		}
		if err != nil {
			return t.errorf("%w", err)
		}
	}
	r := t.att.restore
	if r == nil {
		return nil
	}
	if r.ops[t.n] >= 0 {
		err := t.att.fault(faultRestore, t, nil)
		if err == nil {
			err = t.backend.Restore(t.ctx, r.src, r.ops[t.n], state.RestoreOptions{
				AllowNonRestoredState: t.att.opts.AllowNonRestoredState,
				Now:                   t.clock.Now(),
			})
		}
		if err != nil {
			err = t.errorf("restore: %w", err)
			if unrestorable(err) {
				return permanent(err)
			}
			return err
		}
	}
	if err := r.restored(); err != nil {
		return t.errorf("restore: %w", err)
	}
	return nil
}

// unrestorable reports whether a restore failed because of what the
// savepoint holds, which no restart can change, rather than, say, a read
// that failed.
func unrestorable(err error) bool {
	for _, e := range []error{snapshotfmt.ErrCorrupt, snapshotfmt.ErrNotSavepoint, snapshotfmt.ErrNewerVersion, snapshotfmt.ErrUnsupportedVersion,
		ErrCorruptCheckpoint, ErrRestore, compat.ErrIncompatible, state.ErrNotRestored} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// snapshot writes this subtask's part of checkpoint cp and acknowledges it.
func (t *task) snapshot(cp *checkpoint) error {
	t.clock.sample()
	if t.backend != nil {
		if err := t.att.fault(faultSnapshot, t, cp); err != nil {
			return t.errorf("checkpoint %d: %w", cp.ID, err)
		}
	}
	if t.op >= 0 {
		if t.backend != nil {
			if err := t.snapshotKeyed(cp); err != nil {
				return t.errorf("checkpoint %d: %w", cp.ID, err)
			}
		}
		if err := t.snapshotOperatorState(cp); err != nil {
			return t.errorf("checkpoint %d: %w", cp.ID, err)
		}
	}
	return t.att.coord.Send(t.ctx, message{Kind: coord.AckMsg, Task: t, ID: cp.ID, Watermark: t.watermark, Now: t.clock.Now()})
}

// snapshotKeyed writes the keyed state: natively into an incremental
// checkpoint, into a canonical data file otherwise.
func (t *task) snapshotKeyed(cp *checkpoint) error {
	if b, ok := t.backend.(*pebblebackend.Backend); ok && cp.Incremental {
		return t.att.store.SnapshotNative(t.ctx, cp.Files, t.n.uid, t.op, t.subtask, b)
	}
	f, err := cp.Files.Writer.CreateDataFile(t.ctx, dataFileName(t.op, t.subtask))
	if err != nil {
		return err
	}
	// Full-snapshot cleanup runs at this subtask's own time: what it drops
	// no read of this subtask could still return. The TTL histograms are
	// anchored there too, since the checkpoint's creation time is known
	// only once every subtask has acknowledged it.
	now := t.clock.Now()
	f.AnchorAt(now)
	if err := t.backend.Snapshot(t.ctx, f, t.op, &cp.Meta.Operators[t.op], now); err != nil {
		return err
	}
	return f.Close()
}

func (t *task) snapshotOperatorState(cp *checkpoint) error {
	var lists map[string][][]byte
	if t.snapshotOp != nil {
		var err error
		if lists, err = t.snapshotOp(cp); err != nil {
			return err
		}
	}
	var bcast []savepoint.BroadcastState
	if t.subtask == 0 {
		// Every subtask holds the same broadcast state; the savepoint
		// stores it once.
		for _, spec := range t.n.bcast {
			bs, err := t.bcast[spec.name].snapshot()
			if err != nil {
				return err
			}
			bcast = append(bcast, bs)
		}
	}
	var names []string
	for _, spec := range t.n.opState {
		names = append(names, spec.name)
	}
	cp.PutOperatorState(t.op, t.n.parallelism, t.subtask, names, lists, bcast)
	return nil
}

// dataFileName names the file holding one subtask's keyed state: fixed by
// position, so that the same job writes the same names.
func dataFileName(op, subtask int) string {
	return fmt.Sprintf("op%03d-%05d.data", op, subtask)
}

// operatorStateSpec declares non-keyed list state of an operator.
type operatorStateSpec struct {
	name         string
	distribution savepoint.Distribution
	element      serializers.Serializer
	// desc is the job's descriptor; nil for the state the engine keeps
	// for sources and sinks.
	desc OperatorStateDescriptor
}

// redistribute hands out operator list state to the subtasks of a new run:
// even-split concatenates every old subtask's list in order and gives each
// new subtask a contiguous share; union gives every subtask everything.
func redistribute(mode savepoint.Distribution, old [][][]byte, parallelism int) [][][]byte {
	var all [][]byte
	for _, l := range old {
		all = append(all, l...)
	}
	out := make([][][]byte, parallelism)
	for i := range out {
		if mode == savepoint.Union {
			out[i] = all
			continue
		}
		lo, hi := i*len(all)/parallelism, (i+1)*len(all)/parallelism
		out[i] = all[lo:hi]
	}
	return out
}
