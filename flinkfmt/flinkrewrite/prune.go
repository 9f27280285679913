package flinkrewrite

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/storage"
	"github.com/stateproc/stateproc/ttl"
)

// PruneOptions say what is expired.
type PruneOptions struct {
	// Now is the time, in epoch milliseconds, at which entries are judged.
	// A Flink savepoint records no creation time to default to.
	Now int64
	// TTL gives the time to live of the states to prune, by
	// "OPERATOR/STATE", the operator as Reader.Operator finds it (hex id,
	// uid or name). Flink records a state's TTL in the job, not in the
	// savepoint, which holds only the last-access time of every value;
	// states with TTL not named here are kept whole.
	TTL map[string]time.Duration
	Options
}

// StateReport is what pruning does to one state with TTL.
type StateReport struct {
	Operator string        `json:"operator"`
	UID      string        `json:"uid,omitempty"`
	State    string        `json:"state"`
	TTL      time.Duration `json:"-"`
	// TTLMillis is 0 for a state no TTL was given for: it is kept whole,
	// and its entries are not counted.
	TTLMillis int64  `json:"ttl_millis"`
	Before    uint64 `json:"before"`
	Dropped   uint64 `json:"dropped"`
	After     uint64 `json:"after"`
}

// PruneReport lists every state with TTL of the operators that can be
// read, in operator and state order.
type PruneReport struct {
	Now    int64         `json:"now"`
	DryRun bool          `json:"dry_run"`
	States []StateReport `json:"states"`
}

// errNoTTL is wrapped by the refusal of a prune that names no state.
var errNoTTL = errors.New("flinkrewrite: a Flink savepoint does not record the TTL of its states")

type prunePlan struct {
	op    *flinkfmt.Operator
	keyed *flinkfmt.Keyed
	// millis maps the indexes of the states to prune to their TTLs.
	millis  map[int]int64
	streams []streamPlan
	// lines are the report's lines of the pruned states, by state index.
	lines map[int]int
}

// PruneTTL writes src without the entries of the states opts.TTL names
// that are expired at opts.Now into dst; a nil dst is a dry run, which
// reads those states to count what it would drop.
func PruneTTL(ctx context.Context, src *flinkfmt.Reader, dst storage.Target, opts PruneOptions) (*PruneReport, error) {
	inputMeta, err := checkWritable(src.Metadata())
	if err != nil {
		return nil, err
	}
	rep := &PruneReport{Now: opts.Now, DryRun: dst == nil}
	plans, err := planPrune(ctx, src, opts, rep)
	if err != nil {
		return nil, err
	}
	var o *output
	if dst != nil {
		var total int64
		for _, op := range src.Metadata().Operators {
			if _, ok := plans[op]; ok {
				for _, st := range op.Subtasks {
					total += st.ManagedKeyed.Size()
				}
				total += fileBytes(op, false)
			} else {
				total += fileBytes(op, true)
			}
		}
		what := fmt.Sprintf("prune-ttl at %d of %v", opts.Now, describeTTLs(rep))
		if o, err = newOutput(ctx, src, inputMeta, dst, what, opts.Options, rewrite.NewMeter(total, opts.Progress)); err != nil {
			return nil, err
		}
	}
	meta := outputMetadata(src.Metadata())
	for _, op := range src.Metadata().Operators {
		p, ok := plans[op]
		if !ok {
			if o != nil {
				kept, err := o.keepOperator(op)
				if err != nil {
					return nil, err
				}
				meta.Operators = append(meta.Operators, kept)
			}
			continue
		}
		out, err := pruneOperator(ctx, o, p, opts, rep)
		if err != nil {
			return nil, err
		}
		if out != nil {
			meta.Operators = append(meta.Operators, out)
		}
	}
	if o != nil {
		if err := o.finish(meta); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// planPrune resolves the TTLs given, lists every TTL state in the report,
// and plans the operators to rewrite. Every refusal comes from here.
func planPrune(ctx context.Context, src *flinkfmt.Reader, opts PruneOptions, rep *PruneReport) (map[*flinkfmt.Operator]*prunePlan, error) {
	type given struct {
		op    *flinkfmt.Operator
		state string
		d     time.Duration
	}
	var ttls []given
	for ref, d := range opts.TTL {
		op, state, err := splitStateRef(src, ref)
		if err != nil {
			return nil, err
		}
		if d < time.Millisecond {
			return nil, rewrite.Refusef("--ttl %q: a TTL is at least a millisecond", ref)
		}
		ttls = append(ttls, given{op, state, d})
	}
	plans := map[*flinkfmt.Operator]*prunePlan{}
	var unnamed []string
	for _, op := range src.Metadata().Operators {
		k, kerr := src.Keyed(ctx, op)
		var mine []given
		for _, g := range ttls {
			if g.op == op {
				mine = append(mine, g)
			}
		}
		if kerr != nil {
			if len(mine) > 0 {
				return nil, refused(fmt.Errorf("operator %s: %w", describeOperator(op), kerr))
			}
			continue
		}
		p := &prunePlan{op: op, keyed: k, millis: map[int]int64{}, lines: map[int]int{}}
		for _, g := range mine {
			i := k.State(g.state)
			switch {
			case i < 0:
				return nil, rewrite.Refusef("--ttl %s/%s: operator %s has no keyed state %q", op.ID, g.state, describeOperator(op), g.state)
			case !k.States[i].TTL:
				return nil, rewrite.Refusef("--ttl %s/%s: state %q has no TTL, so its values carry no last-access time to judge", op.ID, g.state, g.state)
			}
			p.millis[i] = g.d.Milliseconds()
		}
		for i, m := range k.States {
			if !m.TTL {
				continue
			}
			line := StateReport{Operator: op.ID.String(), UID: op.UID, State: m.Name}
			if ms, ok := p.millis[i]; ok {
				line.TTL, line.TTLMillis = time.Duration(ms)*time.Millisecond, ms
				p.lines[i] = len(rep.States)
			} else {
				unnamed = append(unnamed, op.ID.String()+"/"+m.Name)
			}
			rep.States = append(rep.States, line)
		}
		if len(p.millis) == 0 {
			continue
		}
		parts := k.Parts()
		for _, pi := range managedParts(k) {
			part := parts[pi]
			switch part.Layout {
			case flinkfmt.LayoutCanonical, flinkfmt.LayoutHeap:
			default:
				return nil, refused(fmt.Errorf("%w: operator %s: subtask %d's keyed state is in the %s layout, which this rewrite does not write", flinkfmt.ErrUnsupported, describeOperator(op), part.Subtask, part.Layout))
			}
			p.streams = append(p.streams, streamPlan{kgs: part.Handle.KeyGroups, parts: []int{pi}, kind: partKind(part)})
		}
		plans[op] = p
	}
	if len(ttls) == 0 {
		sort.Strings(unnamed)
		return nil, refused(fmt.Errorf("%w: give the TTL of each state to prune as OPERATOR/STATE=DURATION (states with TTL: %s)", errNoTTL, strings.Join(unnamed, ", ")))
	}
	return plans, nil
}

// splitStateRef finds the operator and state that ref, "OPERATOR/STATE",
// names. Operator references and state names may hold slashes, so every
// split is tried; exactly one must name a state.
func splitStateRef(src *flinkfmt.Reader, ref string) (*flinkfmt.Operator, string, error) {
	var found []*flinkfmt.Operator
	var state string
	for i := 0; i < len(ref); i++ {
		if ref[i] != '/' {
			continue
		}
		op, err := src.Operator(ref[:i])
		if err != nil || slices.Contains(found, op) {
			continue
		}
		found, state = append(found, op), ref[i+1:]
	}
	switch len(found) {
	case 0:
		return nil, "", rewrite.Refusef("--ttl %q: want OPERATOR/STATE=DURATION with an operator's id, uid or name", ref)
	case 1:
		return found[0], state, nil
	}
	return nil, "", rewrite.Refusef("--ttl %q names %d operators; give the operator's id", ref, len(found))
}

// pruneOperator rewrites the keyed state of one operator without its
// expired entries, counts what it kept in rep, and returns the operator
// as the output's metadata holds it (nil in a dry run).
func pruneOperator(ctx context.Context, o *output, p *prunePlan, opts PruneOptions, rep *PruneReport) (*flinkfmt.Operator, error) {
	k := p.keyed
	j := newKeyGroupJob(k, p.streams)
	j.filter = func(state int, e *flinkfmt.Entry) (bool, error) {
		millis, ok := p.millis[state]
		if !ok || e.Null {
			return true, nil
		}
		if len(e.Value) < 8 {
			return false, fmt.Errorf("%w: a value of TTL state %q has %d bytes, less than its last-access time", flinkfmt.ErrCorrupt, k.States[state].Name, len(e.Value))
		}
		return !ttl.Expired(int64(binary.BigEndian.Uint64(e.Value)), millis, opts.Now), nil
	}
	handles, err := j.run(ctx, o, opts.workers())
	if err != nil {
		return nil, err
	}
	for state, line := range p.lines {
		s := &rep.States[line]
		s.Before, s.After = j.read[state].Load(), j.kept[state].Load()
		s.Dropped = s.Before - s.After
	}
	if o == nil {
		return nil, nil
	}
	bySubtask := map[int]*flinkfmt.KeyedHandle{}
	parts := k.Parts()
	for i, sp := range p.streams {
		bySubtask[parts[sp.parts[0]].Subtask] = handles[i]
	}
	out := *p.op
	if out.Coordinator, err = o.keepStream(p.op.Coordinator); err != nil {
		return nil, err
	}
	out.Subtasks = make([]flinkfmt.Subtask, len(p.op.Subtasks))
	for i, st := range p.op.Subtasks {
		if out.Subtasks[i], err = o.keepSubtask(st, false); err != nil {
			return nil, err
		}
		out.Subtasks[i].ManagedKeyed = bySubtask[st.Index]
	}
	return &out, nil
}

// describeTTLs is what a prune names its new files after.
func describeTTLs(rep *PruneReport) string {
	var parts []string
	for _, s := range rep.States {
		if s.TTLMillis > 0 {
			parts = append(parts, fmt.Sprintf("%s/%s=%dms", s.Operator, s.State, s.TTLMillis))
		}
	}
	return strings.Join(parts, ",")
}
