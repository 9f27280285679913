package flinkrewrite

import (
	"context"
	"fmt"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/keyhash"
	"github.com/stateproc/stateproc/internal/workdir"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/storage"
)

// RescaleOptions say what to rescale to.
type RescaleOptions struct {
	// MaxParallelism is the new max parallelism, 1 to 32768.
	MaxParallelism int
	// Parallelism, when not 0, is the new parallelism of the rescaled
	// operators; otherwise each keeps its own. Flink restores a savepoint at
	// any parallelism up to its max parallelism, so it matters only where
	// the new max parallelism is below the old parallelism.
	Parallelism int
	// Operator, when set, is the one operator to rescale, by id, uid or name
	// as Reader.Operator finds it; otherwise every keyed operator is.
	Operator string
	// Memory is the sort budget of all workers together; 0 means
	// DefaultMemory.
	Memory int
	// SpillDir is where entries are spilled while they are sorted; empty
	// means the system's temporary directory. The CLI puts it beside the
	// target.
	SpillDir string
	Options
	// spillAlways re-buckets through the spill files even at the same max
	// parallelism, and sortBudget, when set, is each worker's sort budget
	// below the floor of the default: so that tests compare the two ways
	// and make the sort write runs.
	spillAlways bool
	sortBudget  int
}

// DefaultMemory is the default sort budget.
const DefaultMemory = 64 << 20

// Action is what a rescale does to one operator.
type Action string

const (
	// Rebucketed: the max parallelism changes and every keyed entry moves
	// to the key group of its key.
	Rebucketed Action = "re-bucketed"
	// Rewritten: the max parallelism stays, every key group is written
	// again where it was, in the canonical layout and RocksDB's order.
	Rewritten Action = "rewritten"
	// Unchanged: the operator is copied as it is.
	Unchanged Action = "unchanged"
)

// OperatorReport says what a rescale does to one operator.
type OperatorReport struct {
	ID                   string `json:"id"`
	UID                  string `json:"uid,omitempty"`
	Name                 string `json:"name,omitempty"`
	Keyed                bool   `json:"keyed"`
	Action               Action `json:"action"`
	MaxParallelismBefore int    `json:"max_parallelism_before"`
	MaxParallelism       int    `json:"max_parallelism"`
	ParallelismBefore    int    `json:"parallelism_before"`
	Parallelism          int    `json:"parallelism"`
	// KeyedBytes is the size of the operator's managed keyed state in the
	// input; Entries counts the entries written (values, list elements,
	// map entries, timers), none in a dry run.
	KeyedBytes int64  `json:"keyed_bytes"`
	Entries    uint64 `json:"entries"`
}

// RescaleReport lists every operator of the savepoint.
type RescaleReport struct {
	DryRun    bool             `json:"dry_run"`
	Operators []OperatorReport `json:"operators"`
}

type rescalePlan struct {
	op                *flinkfmt.Operator
	keyed             *flinkfmt.Keyed
	action            Action
	maxP, parallelism int
	streams           []streamPlan
}

// Rescale writes src rescaled to opts.MaxParallelism into dst; a nil dst
// is a dry run. See the package documentation for what is refused.
func Rescale(ctx context.Context, src *flinkfmt.Reader, dst storage.Target, opts RescaleOptions) (*RescaleReport, error) {
	inputMeta, err := checkWritable(src.Metadata())
	if err != nil {
		return nil, err
	}
	plans, err := planRescale(ctx, src, opts)
	if err != nil {
		return nil, err
	}
	rep := &RescaleReport{DryRun: dst == nil}
	for _, p := range plans {
		r := OperatorReport{ID: p.op.ID.String(), UID: p.op.UID, Name: p.op.Name, Keyed: hasKeyedState(p.op), Action: p.action,
			MaxParallelismBefore: p.op.MaxParallelism, MaxParallelism: p.maxP, ParallelismBefore: p.op.Parallelism, Parallelism: p.parallelism}
		for _, st := range p.op.Subtasks {
			r.KeyedBytes += st.ManagedKeyed.Size()
		}
		rep.Operators = append(rep.Operators, r)
	}
	if dst == nil {
		return rep, nil
	}
	// What the meter is told of: the files copied, the keyed state read
	// (twice when it is spilled and sorted).
	var total int64
	for i, p := range plans {
		switch p.action {
		case Unchanged:
			total += fileBytes(p.op, true)
		case Rewritten:
			total += fileBytes(p.op, false) + rep.Operators[i].KeyedBytes
		case Rebucketed:
			total += fileBytes(p.op, false) + 2*rep.Operators[i].KeyedBytes
		}
	}
	meter := rewrite.NewMeter(total, opts.Progress)
	what := fmt.Sprintf("rescale to max parallelism %d, parallelism %d, operator %q", opts.MaxParallelism, opts.Parallelism, opts.Operator)
	o, err := newOutput(ctx, src, inputMeta, dst, what, opts.Options, meter)
	if err != nil {
		return nil, err
	}
	meta := outputMetadata(src.Metadata())
	for i, p := range plans {
		if p.action == Unchanged {
			op, err := o.keepOperator(p.op)
			if err != nil {
				return nil, err
			}
			meta.Operators = append(meta.Operators, op)
			continue
		}
		op, n, err := rescaleOperator(ctx, o, p, opts)
		if err != nil {
			return nil, err
		}
		rep.Operators[i].Entries = n
		meta.Operators = append(meta.Operators, op)
	}
	if err := o.finish(meta); err != nil {
		return nil, err
	}
	return rep, nil
}

// planRescale checks the request against the savepoint and decides what
// happens to every operator. Every refusal comes from here, before
// anything is written.
func planRescale(ctx context.Context, src *flinkfmt.Reader, opts RescaleOptions) ([]rescalePlan, error) {
	maxP := opts.MaxParallelism
	switch {
	case maxP < 1 || maxP > keygroup.MaxParallelismLimit:
		return nil, rewrite.Refusef("--max-parallelism %d outside 1..%d", maxP, keygroup.MaxParallelismLimit)
	case opts.Parallelism < 0:
		return nil, rewrite.Refusef("--parallelism %d below 1", opts.Parallelism)
	case opts.Parallelism > maxP:
		return nil, rewrite.Refusef("--parallelism %d above --max-parallelism %d", opts.Parallelism, maxP)
	}
	var only *flinkfmt.Operator
	if opts.Operator != "" {
		op, err := src.Operator(opts.Operator)
		if err != nil {
			return nil, refused(err)
		}
		only = op
	}
	m := src.Metadata()
	plans := make([]rescalePlan, len(m.Operators))
	keyedSelected := 0
	for i, op := range m.Operators {
		p := &plans[i]
		*p = rescalePlan{op: op, action: Unchanged, maxP: op.MaxParallelism, parallelism: op.Parallelism}
		if only != nil && op != only || !hasKeyedState(op) {
			continue
		}
		keyedSelected++
		if err := p.retarget(ctx, src, maxP, opts); err != nil {
			return nil, refused(fmt.Errorf("operator %s: %w", describeOperator(op), err))
		}
	}
	switch {
	case only != nil && keyedSelected == 0:
		return nil, rewrite.Refusef("operator %s has no keyed state: it has no key groups to rescale", describeOperator(only))
	case keyedSelected == 0:
		return nil, rewrite.Refusef("the savepoint has no operator with keyed state to rescale")
	}
	return plans, nil
}

func hasKeyedState(op *flinkfmt.Operator) bool {
	for _, st := range op.Subtasks {
		if st.ManagedKeyed != nil || st.RawKeyed != nil {
			return true
		}
	}
	return false
}

func describeOperator(op *flinkfmt.Operator) string {
	switch {
	case op.UID != "":
		return fmt.Sprintf("%q (%s)", op.UID, op.ID)
	case op.Name != "":
		return fmt.Sprintf("%s (%q)", op.ID, op.Name)
	}
	return op.ID.String()
}

// retarget plans the rescale of one keyed operator to maxP; its error is
// the reason the request cannot succeed.
func (p *rescalePlan) retarget(ctx context.Context, src *flinkfmt.Reader, maxP int, opts RescaleOptions) error {
	op := p.op
	parallelism := op.Parallelism
	if opts.Parallelism > 0 {
		parallelism = opts.Parallelism
	}
	same := maxP == op.MaxParallelism && !opts.spillAlways
	k, err := src.Keyed(ctx, op)
	if err == nil && len(managedParts(k)) == 0 {
		err = fmt.Errorf("%w: it holds only raw keyed state", flinkfmt.ErrUnsupported)
	}
	if err == nil {
		for _, part := range k.Parts() {
			if part.Layout == flinkfmt.LayoutRocksDBNative || part.Layout == flinkfmt.LayoutChangelog {
				err = fmt.Errorf("%w: its keyed state is in the %s layout, which this rewrite does not write", flinkfmt.ErrUnsupported, part.Layout)
			}
		}
	}
	if err != nil {
		if same && parallelism == op.Parallelism {
			// Nothing moves: the operator is copied as it is.
			return nil
		}
		return err
	}
	switch {
	case parallelism > maxP:
		return fmt.Errorf("--max-parallelism %d is below its parallelism %d (give --parallelism too)", maxP, parallelism)
	case op.Finished:
		return fmt.Errorf("the operator had finished; it has no state to rescale")
	}
	for _, st := range op.Subtasks {
		switch {
		case st.Finished:
			return fmt.Errorf("subtask %d had finished: a partly finished operator is not rescaled", st.Index)
		case st.Index >= parallelism && (st.ManagedOperator != nil || st.RawOperator != nil || st.RawKeyed != nil ||
			len(st.InputChannels) > 0 || len(st.ResultSubpartitions) > 0):
			return fmt.Errorf("subtask %d holds operator, raw keyed or channel state, which %d subtasks cannot hold: keep its parallelism", st.Index, parallelism)
		case !same && st.RawKeyed != nil:
			return fmt.Errorf("subtask %d holds raw keyed state (the timers of Flink before 1.10, or the operator's own), which only the job can move to new key groups", st.Index)
		}
	}
	p.keyed, p.maxP, p.parallelism = k, maxP, parallelism
	ranges := make([]keygroup.Range, parallelism)
	for i := range ranges {
		ranges[i] = keygroup.ForSubtask(i, parallelism, maxP)
	}
	if same {
		p.action = Rewritten
		p.streams, err = planStreams(k, maxP, ranges)
		return err
	}
	p.action = Rebucketed
	if err := keyhash.Hashable(k.Key); err != nil {
		return fmt.Errorf("%w; Flink would look for every moved key in another key group than the one this rewrite computes, and lose it on restore", err)
	}
	if _, err := k.CanonicalHeader(managedParts(k)); err != nil {
		return err
	}
	return nil
}

// rescaleOperator writes the keyed state of one planned operator and
// returns the operator as the output's metadata holds it.
func rescaleOperator(ctx context.Context, o *output, p rescalePlan, opts RescaleOptions) (*flinkfmt.Operator, uint64, error) {
	k := p.keyed
	var handles []*flinkfmt.KeyedHandle
	var entries uint64
	switch p.action {
	case Rewritten:
		j := newKeyGroupJob(k, p.streams)
		j.sortKeys = true
		var err error
		if handles, err = j.run(ctx, o, opts.workers()); err != nil {
			return nil, 0, err
		}
		for i := range j.kept {
			entries += j.kept[i].Load()
		}
	case Rebucketed:
		header, err := k.CanonicalHeader(managedParts(k))
		if err != nil {
			return nil, 0, err
		}
		work, err := workdir.Create(opts.SpillDir, storage.TempPrefix+"flink-rescale-")
		if err != nil {
			return nil, 0, err
		}
		defer work.Remove()
		memory := opts.Memory
		if memory <= 0 {
			memory = DefaultMemory
		}
		j := &rebucketJob{k: k, maxP: p.maxP, parallelism: p.parallelism, kind: outputKind(k), header: header,
			workers: opts.workers(), memory: memory, sortBudget: opts.sortBudget, dir: work.Path}
		if handles, err = j.run(ctx, o); err != nil {
			return nil, 0, err
		}
		entries = j.entries.Load()
	}
	out := *p.op
	out.MaxParallelism, out.Parallelism = p.maxP, p.parallelism
	var err error
	if out.Coordinator, err = o.keepStream(p.op.Coordinator); err != nil {
		return nil, 0, err
	}
	out.Subtasks = make([]flinkfmt.Subtask, p.parallelism)
	for i := range out.Subtasks {
		out.Subtasks[i] = flinkfmt.Subtask{Index: i}
	}
	for _, st := range p.op.Subtasks {
		if st.Index >= p.parallelism {
			continue
		}
		kept, err := o.keepSubtask(st, false)
		if err != nil {
			return nil, 0, err
		}
		out.Subtasks[st.Index] = kept
	}
	for i, h := range handles {
		out.Subtasks[i].ManagedKeyed = h
	}
	return &out, entries, nil
}
