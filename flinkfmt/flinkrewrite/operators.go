package flinkrewrite

import (
	"context"
	"errors"
	"fmt"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/storage"
)

// OperatorChange says what a remove or rename changed.
type OperatorChange struct {
	Action string `json:"action"`
	// ID is the operator's id before the change, NewID after a rename (the
	// hash of the new uid).
	ID    string `json:"id"`
	NewID string `json:"new_id,omitempty"`
	// UID and Name are recorded from metadata version 5 on.
	UID     string `json:"uid,omitempty"`
	NewUID  string `json:"new_uid,omitempty"`
	Name    string `json:"name,omitempty"`
	NewName string `json:"new_name,omitempty"`
	DryRun  bool   `json:"dry_run"`
	// What the operator holds: its keyed states and timer services (from
	// the headers of its keyed state, where they can be read), its
	// operator and broadcast states, and the bytes of its state.
	KeyedStates     int   `json:"keyed_states"`
	TimerServices   int   `json:"timer_services"`
	OperatorStates  int   `json:"operator_states"`
	BroadcastStates int   `json:"broadcast_states"`
	Bytes           int64 `json:"bytes"`
	// Note says why the keyed states were not counted, when they were not.
	Note string `json:"note,omitempty"`
}

// RemoveOperator writes src without the operator ref (an id, uid or name
// as Reader.Operator finds it) into dst; a nil dst is a dry run. Every
// other operator's state is copied as it is.
func RemoveOperator(ctx context.Context, src *flinkfmt.Reader, dst storage.Target, ref string, opts Options) (*OperatorChange, error) {
	inputMeta, err := checkWritable(src.Metadata())
	if err != nil {
		return nil, err
	}
	op, err := src.Operator(ref)
	if err != nil {
		return nil, refused(err)
	}
	rep := describeChange(ctx, src, op, "remove", dst == nil)
	if dst == nil {
		return rep, nil
	}
	return rep, copyOperators(ctx, src, inputMeta, dst, fmt.Sprintf("operator remove %s", op.ID), opts, func(o *flinkfmt.Operator) *flinkfmt.Operator {
		if o == op {
			return nil
		}
		return o
	})
}

// RenameOptions say what an operator is renamed to.
type RenameOptions struct {
	// UID is the new uid: the operator's id becomes its hash, as Flink
	// derives the id of an operator that has a uid, and metadata version 5
	// records it too.
	UID string
	// Name, when set, is the operator's new name, recorded from metadata
	// version 5 on; otherwise the name stays.
	Name string
	Options
}

// RenameOperator writes src with the operator ref given the new uid (and
// name) into dst; a nil dst is a dry run. Flink matches the state of a
// savepoint to the operators of a job by id, so this is how an operator
// that had none gets its uid, or one whose uid changed keeps its state.
func RenameOperator(ctx context.Context, src *flinkfmt.Reader, dst storage.Target, ref string, opts RenameOptions) (*OperatorChange, error) {
	inputMeta, err := checkWritable(src.Metadata())
	if err != nil {
		return nil, err
	}
	op, err := src.Operator(ref)
	if err != nil {
		return nil, refused(err)
	}
	if opts.UID == "" {
		return nil, rewrite.Refusef("the new uid is empty")
	}
	m := src.Metadata()
	id := flinkfmt.UIDHash(opts.UID)
	for _, other := range m.Operators {
		switch {
		case other == op && op.ID == id && (m.Version < 5 || op.UID == opts.UID) && (opts.Name == "" || opts.Name == op.Name):
			return nil, rewrite.Refusef("operator %s already has uid %q", describeOperator(op), opts.UID)
		case other != op && other.ID == id:
			return nil, rewrite.Refusef("operator %s already has the id %s of uid %q", describeOperator(other), id, opts.UID)
		case other != op && m.Version >= 5 && other.UID == opts.UID:
			return nil, rewrite.Refusef("operator %s already has uid %q", describeOperator(other), opts.UID)
		}
	}
	rep := describeChange(ctx, src, op, "rename", dst == nil)
	rep.NewID = id.String()
	if m.Version >= 5 {
		rep.NewUID = opts.UID
		if opts.Name != "" {
			rep.NewName = opts.Name
		}
	}
	if dst == nil {
		return rep, nil
	}
	return rep, copyOperators(ctx, src, inputMeta, dst, fmt.Sprintf("operator rename %s to %q %q", op.ID, opts.UID, opts.Name), opts.Options, func(o *flinkfmt.Operator) *flinkfmt.Operator {
		if o != op {
			return o
		}
		c := *o
		c.ID = id
		if m.Version >= 5 {
			c.UID = opts.UID
			if opts.Name != "" {
				c.Name = opts.Name
			}
		}
		return &c
	})
}

// copyOperators writes every operator of src that change keeps (after
// changing what is not state) into dst, its state copied as it is.
func copyOperators(ctx context.Context, src *flinkfmt.Reader, inputMeta []byte, dst storage.Target, what string, opts Options,
	change func(*flinkfmt.Operator) *flinkfmt.Operator) error {
	var ops []*flinkfmt.Operator
	var total int64
	for _, op := range src.Metadata().Operators {
		if changed := change(op); changed != nil {
			ops = append(ops, changed)
			total += fileBytes(op, true)
		}
	}
	o, err := newOutput(ctx, src, inputMeta, dst, what, opts, rewrite.NewMeter(total, opts.Progress))
	if err != nil {
		return err
	}
	meta := outputMetadata(src.Metadata())
	for _, op := range ops {
		kept, err := o.keepOperator(op)
		if err != nil {
			return err
		}
		meta.Operators = append(meta.Operators, kept)
	}
	return o.finish(meta)
}

// describeChange counts what op holds, from the metadata and the headers
// of its keyed state.
func describeChange(ctx context.Context, src *flinkfmt.Reader, op *flinkfmt.Operator, action string, dryRun bool) *OperatorChange {
	rep := &OperatorChange{Action: action, ID: op.ID.String(), UID: op.UID, Name: op.Name, DryRun: dryRun}
	if k, err := src.Keyed(ctx, op); err == nil {
		for _, s := range k.States {
			if s.Kind == flinkfmt.Timers {
				rep.TimerServices++
			} else {
				rep.KeyedStates++
			}
		}
	} else if !errors.Is(err, flinkfmt.ErrNotKeyed) {
		rep.Note = fmt.Sprintf("keyed states not counted: %v", err)
	}
	names := map[string]flinkfmt.Distribution{}
	for _, st := range op.Subtasks {
		for _, h := range []*flinkfmt.OperatorStateHandle{st.ManagedOperator, st.RawOperator} {
			if h == nil {
				continue
			}
			for _, s := range h.States {
				names[s.Name] = s.Mode
			}
			if h.Stream != nil {
				rep.Bytes += h.Stream.Size
			}
		}
		rep.Bytes += st.ManagedKeyed.Size() + st.RawKeyed.Size()
	}
	for _, mode := range names {
		if mode == flinkfmt.Broadcast {
			rep.BroadcastStates++
		} else {
			rep.OperatorStates++
		}
	}
	return rep
}
