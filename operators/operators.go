package operators

import (
	"context"
	"fmt"
	"runtime"

	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
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
func Remove(ctx context.Context, src *snapshotfmt.Reader, input, uid string, out rewrite.Options) (*Report, error) {
	m := src.Metadata()
	idx, err := find(m, uid)
	if err != nil {
		return nil, err
	}
	rep := describe(src, idx, "remove", out.DryRun)
	meta := rewrite.DeriveMetadata(input, m, fmt.Sprintf("operator remove %q", uid))
	meta.Operators = append(meta.Operators[:idx:idx], meta.Operators[idx+1:]...)
	plans := rewrite.SameLayout(src, func(seg snapshotfmt.Segment) (rewrite.SegmentPlan, bool) {
		op := seg.Operator
		switch {
		case op == idx:
			return rewrite.SegmentPlan{}, false
		case op > idx:
			op--
		}
		return rewrite.SegmentPlan{Src: seg, Op: op, Ref: seg.Ref}, true
	})
	return rep, write(ctx, src, input, meta, plans, out)
}

// Rename writes src with the operator uid renamed to newUID. Everything
// else, the operator's name included, stays as it is.
func Rename(ctx context.Context, src *snapshotfmt.Reader, input, uid, newUID string, out rewrite.Options) (*Report, error) {
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
	rep := describe(src, idx, "rename", out.DryRun)
	rep.NewUID = newUID
	meta := rewrite.DeriveMetadata(input, m, fmt.Sprintf("operator rename %q to %q", uid, newUID))
	meta.Operators[idx].UID = newUID
	plans := rewrite.SameLayout(src, func(seg snapshotfmt.Segment) (rewrite.SegmentPlan, bool) {
		return rewrite.SegmentPlan{Src: seg, Op: seg.Operator, Ref: seg.Ref}, true
	})
	return rep, write(ctx, src, input, meta, plans, out)
}

// write copies the planned segments, all as opaque bytes. A dry run reads
// nothing: the index says all the report needs.
func write(ctx context.Context, src *snapshotfmt.Reader, input string, meta *savepoint.Metadata, plans []rewrite.FilePlan, out rewrite.Options) error {
	out.Need = rewrite.PlannedBytes(plans)
	return rewrite.Execute(ctx, src, input, meta, out, func(ctx context.Context, o *rewrite.Output) error {
		if o == nil {
			return nil
		}
		return rewrite.WriteFiles(ctx, src, o.Writer(), plans, runtime.GOMAXPROCS(0), rewrite.NewMeter(out.Need, out.Progress))
	})
}

// describe counts what operator idx holds, from the metadata and index.
func describe(src *snapshotfmt.Reader, idx int, action string, dryRun bool) *Report {
	op := &src.Metadata().Operators[idx]
	rep := &Report{Action: action, UID: op.UID, DryRun: dryRun, KeyedStates: len(op.States), TimerServices: len(op.Timers),
		OperatorStates: len(op.OperatorStates), BroadcastStates: len(op.BroadcastStates)}
	for _, s := range src.Segments(idx) {
		rep.Segments++
		rep.Entries += s.Entries
		rep.Bytes += s.Length
	}
	return rep
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
