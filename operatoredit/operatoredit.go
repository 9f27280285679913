package operatoredit

import (
	"context"
	"fmt"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
)

// Report says what a remove or rename changed.
type Report struct {
	Action string `json:"action"`
	UID    string `json:"uid"`
	// NewUID is set by a rename.
	NewUID string `json:"new_uid,omitempty"`
	DryRun bool   `json:"dry_run"`
	// What the operator holds: keyed states and timer services, with their
	// data in the index, and operator and broadcast states.
	KeyedStates     int    `json:"keyed_states"`
	TimerServices   int    `json:"timer_services"`
	OperatorStates  int    `json:"operator_states"`
	BroadcastStates int    `json:"broadcast_states"`
	Segments        int    `json:"segments"`
	Entries         uint64 `json:"entries"`
	Bytes           int64  `json:"bytes"`
}

// Remove writes src without the operator uid.
func Remove(ctx context.Context, src savepoint.Source, input, uid string, out rewrite.Options) (*Report, error) {
	m := src.Metadata()
	idx, err := find(m, uid)
	if err != nil {
		return nil, err
	}
	rep, err := describe(ctx, src, idx, "remove", out.DryRun)
	if err != nil {
		return nil, err
	}
	meta := rewrite.DeriveMetadata(input, m, fmt.Sprintf("operator remove %q", uid))
	meta.Operators = append(meta.Operators[:idx:idx], meta.Operators[idx+1:]...)
	plans, err := rewrite.SameLayout(ctx, src, func(seg savepoint.Segment) (rewrite.SegmentPlan, bool) {
		dst := seg.Ref
		switch {
		case dst.Operator == idx:
			return rewrite.SegmentPlan{}, false
		case dst.Operator > idx:
			dst.Operator--
		}
		return rewrite.SegmentPlan{Src: seg, Dst: dst}, true
	})
	if err != nil {
		return nil, err
	}
	return rep, write(ctx, src, input, meta, plans, out)
}

// Rename writes src with the operator uid renamed to newUID. Everything
// else, the operator's name included, stays as it is.
func Rename(ctx context.Context, src savepoint.Source, input, uid, newUID string, out rewrite.Options) (*Report, error) {
	m := src.Metadata()
	idx, err := find(m, uid)
	if err != nil {
		return nil, err
	}
	switch _, taken := m.Operator(newUID); {
	case newUID == "":
		return nil, rewrite.Refusef("the new uid is empty")
	case newUID == uid:
		return nil, rewrite.Refusef("operator %q already has that uid", uid)
	case taken:
		return nil, rewrite.Refusef("the savepoint already has an operator %q", newUID)
	}
	rep, err := describe(ctx, src, idx, "rename", out.DryRun)
	if err != nil {
		return nil, err
	}
	rep.NewUID = newUID
	meta := rewrite.DeriveMetadata(input, m, fmt.Sprintf("operator rename %q to %q", uid, newUID))
	meta.Operators[idx].UID = newUID
	plans, err := rewrite.SameLayout(ctx, src, func(seg savepoint.Segment) (rewrite.SegmentPlan, bool) {
		return rewrite.SegmentPlan{Src: seg, Dst: seg.Ref}, true
	})
	if err != nil {
		return nil, err
	}
	return rep, write(ctx, src, input, meta, plans, out)
}

// write copies the planned segments, as opaque bytes where the input keeps
// them in its data files. A dry run reads nothing: the index says all the
// report needs.
func write(ctx context.Context, src savepoint.Source, input string, meta *savepoint.Metadata, plans []rewrite.FilePlan, out rewrite.Options) error {
	out.Need = rewrite.PlannedBytes(plans)
	if !out.DryRun {
		// Segments copied as bytes keep their blocks; those streamed, from
		// a source that keeps them elsewhere, get the input's compression.
		var err error
		if out.Writer, err = rewrite.PlanOptions(ctx, src, plans); err != nil {
			return err
		}
	}
	return rewrite.Execute(ctx, input, meta, out, func(ctx context.Context, o *rewrite.Output) error {
		if o == nil {
			return nil
		}
		return rewrite.WriteFiles(ctx, src, o, plans, 0, rewrite.NewMeter(out.Need, out.Progress))
	})
}

// describe counts what operator idx holds, from the metadata and index.
func describe(ctx context.Context, src savepoint.Source, idx int, action string, dryRun bool) (*Report, error) {
	m := src.Metadata()
	op := &m.Operators[idx]
	rep := &Report{Action: action, UID: op.UID, DryRun: dryRun, KeyedStates: len(op.States), TimerServices: len(op.Timers),
		OperatorStates: len(op.OperatorStates), BroadcastStates: len(op.BroadcastStates)}
	for _, ref := range m.Refs(idx) {
		segs, err := src.Segments(ctx, ref, keygroup.All(op.MaxParallelism))
		if err != nil {
			return nil, err
		}
		for _, s := range segs {
			rep.Segments++
			rep.Entries += s.Entries
			rep.Bytes += s.Length
		}
	}
	return rep, nil
}

func find(m *savepoint.Metadata, uid string) (int, error) {
	var uids []string
	for i := range m.Operators {
		if m.Operators[i].UID == uid {
			return i, nil
		}
		uids = append(uids, m.Operators[i].UID)
	}
	return 0, rewrite.Refusef("no operator %q in the savepoint (operators: %v)", uid, uids)
}
