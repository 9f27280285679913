package prunettl

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/shard"
	"github.com/stateproc/stateproc/ttl"
)

// Options say what is expired.
type Options struct {
	// Now is the time, in epoch milliseconds, at which entries are judged.
	Now int64
	// TTL overrides the recorded TTL of states, by "uid/state".
	TTL map[string]time.Duration
	// Workers is how many files are rewritten at once; 0 means one per core.
	Workers int
	// Shard, when set, rewrites only that shard of the segments (see
	// package shard): the output is a part that the commit step
	// (rewrite.Assemble) puts together with the other shards' parts. The
	// report counts the shard's segments.
	Shard shard.Spec
}

// StateReport is what pruning did to one TTL state.
type StateReport struct {
	Operator   string        `json:"operator"`
	State      string        `json:"state"`
	TTL        time.Duration `json:"-"`
	TTLMillis  int64         `json:"ttl_ms"`
	Overridden bool          `json:"overridden"`
	Before     uint64        `json:"before"`
	Dropped    uint64        `json:"dropped"`
	After      uint64        `json:"after"`
}

// Report lists every state with TTL, in operator and state order.
type Report struct {
	Now    jsonvalue.Instant `json:"now"`
	DryRun bool              `json:"dry_run"`
	States []StateReport     `json:"states"`
}

// prunedState is a TTL state to prune: the TTL that applies, and its line
// in the report.
type prunedState struct {
	millis int64
	line   int
}

// Run prunes src, the savepoint read from input, into out.Out.
func Run(ctx context.Context, src savepoint.Source, input string, opts Options, out rewrite.Options) (*Report, error) {
	m := src.Metadata()
	rep := &Report{Now: jsonvalue.Instant(opts.Now), DryRun: out.DryRun}
	states, err := resolve(m, opts.TTL, rep)
	if err != nil {
		return nil, err
	}
	plans, err := rewrite.SameLayout(ctx, src, func(seg savepoint.Segment) (rewrite.SegmentPlan, bool) {
		p := rewrite.SegmentPlan{Src: seg, Dst: seg.Ref}
		if s, ok := states[seg.Ref]; ok {
			decide(&p, s.millis, opts.Now)
		}
		return p, true
	})
	if err != nil {
		return nil, err
	}
	plans = shard.Files(plans, opts.Shard)
	meta := rewrite.DeriveMetadata(input, m, describe(rep))
	size := rewrite.PlannedBytes(plans)
	if !out.DryRun {
		if out.Writer, err = rewrite.PlanOptions(ctx, src, plans); err != nil {
			return nil, err
		}
		out.Need = size
	}
	meter := rewrite.NewMeter(size, out.Progress)
	err = rewrite.Execute(ctx, input, meta, out, func(ctx context.Context, o *rewrite.Output) error {
		return rewrite.WriteFiles(ctx, src, o, plans, opts.Workers, meter)
	})
	if err != nil {
		return nil, err
	}
	for _, fp := range plans {
		for _, p := range fp.Segments {
			if s, ok := states[p.Src.Ref]; ok {
				rep.States[s.line].Before += p.Src.Entries
				rep.States[s.line].After += p.Kept
			}
		}
	}
	for i := range rep.States {
		rep.States[i].Dropped = rep.States[i].Before - rep.States[i].After
	}
	return rep, nil
}

// decide settles a segment of a TTL state from the index's times where it
// can: the rule is monotonic in the last-modified time, so if the oldest
// entry is alive every entry is, and if the newest is expired every one is.
func decide(p *rewrite.SegmentPlan, millis, now int64) {
	switch {
	case !ttl.Expired(p.Src.MinTimestamp, millis, now):
	case ttl.Expired(p.Src.MaxTimestamp, millis, now):
		p.Drop = true
	default:
		p.KeepModified = func(lastModified int64) bool { return !ttl.Expired(lastModified, millis, now) }
	}
}

// resolve lists every TTL state with the TTL that applies, checks the
// overrides, and adds a line per state to the report.
func resolve(m *savepoint.Metadata, overrides map[string]time.Duration, rep *Report) (map[savepoint.StateRef]prunedState, error) {
	for name, d := range overrides {
		uid, state, ok := strings.Cut(name, "/")
		if !ok {
			return nil, rewrite.Refusef("--ttl %q: want UID/STATE=DURATION", name)
		}
		op, found := m.Operator(uid)
		if !found {
			return nil, rewrite.Refusef("--ttl %q: no operator %q in the savepoint", name, uid)
		}
		s, found := op.State(state)
		switch {
		case !found:
			return nil, rewrite.Refusef("--ttl %q: operator %q has no keyed state %q", name, uid, state)
		case s.TTL == nil:
			return nil, rewrite.Refusef("--ttl %q: state %q has no TTL, so its values carry no last-modified time to judge", name, state)
		case d < time.Millisecond:
			return nil, rewrite.Refusef("--ttl %q: a TTL is at least a millisecond", name)
		}
	}
	states := map[savepoint.StateRef]prunedState{}
	for oi := range m.Operators {
		op := &m.Operators[oi]
		for ref := range op.States {
			s := &op.States[ref]
			if s.TTL == nil {
				continue
			}
			d, over := overrides[op.UID+"/"+s.Name]
			if !over {
				d = s.TTL.TTL
			}
			states[savepoint.StateRef{Operator: oi, State: ref}] = prunedState{millis: d.Milliseconds(), line: len(rep.States)}
			rep.States = append(rep.States, StateReport{Operator: op.UID, State: s.Name, TTL: d, TTLMillis: d.Milliseconds(), Overridden: over})
		}
	}
	return states, nil
}

// describe is the lineage entry: the time, and each state with its TTL.
func describe(rep *Report) string {
	var parts []string
	for _, s := range rep.States {
		p := fmt.Sprintf("%s/%s (TTL %s", s.Operator, s.State, shortDuration(s.TTL))
		if s.Overridden {
			p += ", overridden"
		}
		parts = append(parts, p+")")
	}
	sort.Strings(parts)
	what := "no TTL state"
	if len(parts) > 0 {
		what = "expired entries of " + strings.Join(parts, ", ")
	}
	return fmt.Sprintf("prune-ttl at %s dropped %s", time.UnixMilli(int64(rep.Now)).UTC().Format("2006-01-02T15:04:05.000Z"), what)
}

// shortDuration drops the zero minutes and seconds of whole hours and
// minutes: 1h rather than 1h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	s, _ = strings.CutSuffix(s, "m0s")
	if strings.HasSuffix(s, "h0") {
		s = s[:len(s)-1]
	} else if !strings.HasSuffix(s, "s") {
		s += "m"
	}
	return s
}
