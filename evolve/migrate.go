package evolve

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stateproc/stateproc/compat"
	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// MigrateOptions configure Migrate.
type MigrateOptions struct {
	Options
	// Now, in epoch milliseconds, is the last-modified time given to every
	// value of a state that gains TTL. There is no default: HasNow says it
	// was given, and without it such a migration is refused.
	Now    int64
	HasNow bool
}

// Migrate rewrites the savepoint src, read from the directory input, into
// out.Out for the target, so that the target's job restores it as it is.
// It refuses, before writing anything, a savepoint that Check does not find
// restorable (compat.ErrIncompatible, with the report), and a state that gains TTL
// without opts.HasNow (rewrite.ErrRefused). What the target does not
// declare, which opts.AllowNonRestoredState lets pass, is left out; what
// only the target declares is not added, since it starts empty.
func Migrate(ctx context.Context, src savepoint.Source, input string, t Target, opts MigrateOptions, out rewrite.Options) (*Report, error) {
	meta := src.Metadata()
	// The cheap refusals first: the schemas, the flags, the target; then
	// the reading of the states whose migration depends on their values.
	rep := decide(meta, t, opts.Options)
	if !rep.Restorable {
		return rep, notRestorable(rep)
	}
	if gains := gainTTL(meta, t, rep); len(gains) > 0 {
		if !opts.HasNow {
			return nil, rewrite.Refusef("TTL is turned on for %s: give --now, the last-modified time of the values", strings.Join(gains, ", "))
		}
		rep.Now = jsonvalue.Instant(opts.Now)
	}
	if out.Out != "" {
		if err := rewrite.CheckTarget(input, out.Out, out.Force); err != nil {
			return nil, err
		}
	}
	if err := settleAll(ctx, src, t, rep, opts.workers()); err != nil {
		return nil, err
	}
	if !rep.Restorable {
		return rep, notRestorable(rep)
	}
	m, err := newMapping(meta, t, rep, opts.Now)
	if err != nil {
		return nil, err
	}
	plans, err := rewrite.SameLayout(ctx, src, m.place)
	if err != nil {
		return nil, err
	}
	size := rewrite.PlannedBytes(plans)
	if !out.DryRun {
		if out.Writer, err = rewrite.PlanOptions(ctx, src, plans); err != nil {
			return nil, err
		}
		out.Need = size
	}
	meter := rewrite.NewMeter(size, out.Progress)
	err = rewrite.Execute(ctx, input, m.metadata(input, t, rep), out, func(ctx context.Context, o *rewrite.Output) error {
		return rewrite.WriteFiles(ctx, src, o, plans, opts.workers(), meter)
	})
	if err != nil {
		return nil, err
	}
	m.count(rep, plans)
	return rep, nil
}

func notRestorable(rep *Report) error {
	return fmt.Errorf("evolve: the job cannot restore the savepoint: %w: %d items", compat.ErrIncompatible, len(rep.Incompatible()))
}

// gainTTL names the states that gain TTL in the migration.
func gainTTL(meta *savepoint.Metadata, t Target, rep *Report) []string {
	var names []string
	for _, it := range rep.Items {
		if it.What != compat.KeyedState || it.Verdict != compat.AfterMigration {
			continue
		}
		if _, saved, declared := pair(meta, t, &it.finding); saved.TTL == nil && declared.TTL != nil {
			names = append(names, it.Operator+"/"+it.Name)
		}
	}
	return names
}

// mapping is where the input's operators and states go in the output, and
// how the values of the migrated states are rewritten.
type mapping struct {
	in  *savepoint.Metadata
	ops []savepoint.Operator // the output's
	// ref maps an input state or timer service to its ref in the output;
	// what is not there is left out.
	ref map[savepoint.StateRef]savepoint.StateRef
	// conv holds the rewrites of the migrated states, by input ref, with
	// what they count.
	conv map[savepoint.StateRef]*conversion
}

type conversion struct {
	migrate           serializers.Migrate
	key               func([]byte) string
	bytesIn, bytesOut atomic.Uint64
}

func newMapping(meta *savepoint.Metadata, t Target, rep *Report, now int64) (*mapping, error) {
	m := &mapping{in: meta, ref: map[savepoint.StateRef]savepoint.StateRef{}, conv: map[savepoint.StateRef]*conversion{}}
	for i := range meta.Operators {
		if d := declaredOperator(t, meta.Operators[i].UID); d != nil {
			m.ops = append(m.ops, m.operator(i, len(m.ops), d))
		}
	}
	for _, it := range rep.Items {
		if it.What != compat.KeyedState || it.Verdict != compat.AfterMigration {
			continue
		}
		op, saved, declared := pair(meta, t, &it.finding)
		conv, err := compat.Converter(saved, declared, now)
		if err != nil {
			return nil, err
		}
		m.conv[savepoint.StateRef{Operator: op, State: it.finding.Saved}] = &conversion{migrate: conv, key: keyPrinter(meta.Operators[op].Key)}
	}
	return m, nil
}

// operator is input operator i as the output holds it, at index out: the
// states, timer services, operator states and broadcast states that d
// declares, with d's serializers and TTL; the rest, and the operator's
// parallelism and max parallelism, as they were.
func (m *mapping) operator(i, out int, d *compat.Declared) savepoint.Operator {
	saved := &m.in.Operators[i]
	op := *saved
	if saved.Keyed() && d.Keyed() {
		op.Key = d.Key
	}
	op.States, op.Timers, op.OperatorStates, op.BroadcastStates = nil, nil, nil, nil
	for ref, s := range saved.States {
		if ds, ok := d.State(s.Name); ok {
			m.ref[savepoint.StateRef{Operator: i, State: ref}] = savepoint.StateRef{Operator: out, State: len(op.States)}
			s.Namespace, s.MapKey, s.Value, s.TTL = ds.Namespace, ds.MapKey, ds.Value, ds.TTL
			op.States = append(op.States, s)
		}
	}
	for j, ts := range saved.Timers {
		if dt, ok := d.TimerService(ts.Name); ok {
			m.ref[savepoint.StateRef{Operator: i, State: j, Timer: true}] = savepoint.StateRef{Operator: out, State: len(op.Timers), Timer: true}
			op.Timers = append(op.Timers, *dt)
		}
	}
	for _, s := range saved.OperatorStates {
		for _, ds := range d.OperatorStates {
			if ds.Name == s.Name {
				s.Distribution, s.Element = ds.Distribution, ds.Element
				op.OperatorStates = append(op.OperatorStates, s)
			}
		}
	}
	for _, b := range saved.BroadcastStates {
		for _, db := range d.BroadcastStates {
			if db.Name == b.Name {
				b.Key, b.Value = db.Key, db.Value
				op.BroadcastStates = append(op.BroadcastStates, b)
			}
		}
	}
	return op
}

// place plans one input segment: left out with its state, copied as bytes,
// or rewritten value by value.
func (m *mapping) place(seg savepoint.Segment) (rewrite.SegmentPlan, bool) {
	dst, ok := m.ref[seg.Ref]
	if !ok {
		return rewrite.SegmentPlan{}, false
	}
	p := rewrite.SegmentPlan{Src: seg, Dst: dst}
	if c, ok := m.conv[seg.Ref]; ok {
		p.Value = c.value
	}
	return p, true
}

func (c *conversion) value(dst []byte, e *savepoint.Entry) ([]byte, error) {
	out, err := c.migrate(dst, e.Value)
	if err != nil {
		return dst, &badValue{key: c.key(e.Key), err: err}
	}
	c.bytesIn.Add(uint64(len(e.Value)))
	c.bytesOut.Add(uint64(len(out) - len(dst)))
	return out, nil
}

// metadata is the output's metadata, with the lineage entry that says what
// the migration did.
func (m *mapping) metadata(input string, t Target, rep *Report) *savepoint.Metadata {
	var rewritten, dropped []string
	for _, it := range rep.Items {
		name := it.Operator
		if it.What != compat.Operator {
			name += "/" + it.Name
		}
		switch {
		case it.Verdict == compat.AfterMigration:
			rewritten = append(rewritten, name)
		case it.Verdict == compat.Dropped:
			dropped = append(dropped, name)
		}
	}
	did := "migrate to " + t.Name
	if len(rewritten) == 0 {
		did += " rewrote no state"
	} else {
		did += " rewrote " + strings.Join(rewritten, ", ")
	}
	if len(dropped) > 0 {
		did += ", left out " + strings.Join(dropped, ", ")
	}
	if rep.Now != 0 {
		did += ", TTL timestamps set to " + time.UnixMilli(int64(rep.Now)).UTC().Format("2006-01-02T15:04:05.000Z")
	}
	out := rewrite.DeriveMetadata(input, m.in, did)
	out.Operators = m.ops
	return out
}

// count fills in what migrate did with the data of each keyed state and
// timer service.
func (m *mapping) count(rep *Report, plans []rewrite.FilePlan) {
	entries := map[savepoint.StateRef]uint64{}
	for _, fp := range plans {
		for _, p := range fp.Segments {
			entries[p.Src.Ref] += p.Kept
		}
	}
	for i := range rep.Items {
		it := &rep.Items[i]
		f := &it.finding
		if f.What != compat.KeyedState && f.What != compat.TimerService || f.Saved < 0 || f.Declared < 0 {
			continue
		}
		key := savepoint.StateRef{Operator: operatorIndex(m.in, it.Operator), State: f.Saved, Timer: f.What == compat.TimerService}
		it.Migrated = &Migrated{Entries: entries[key]}
		if c, ok := m.conv[key]; ok {
			it.Migrated.Rewritten = true
			it.Migrated.ValueBytesBefore, it.Migrated.ValueBytesAfter = c.bytesIn.Load(), c.bytesOut.Load()
		}
	}
}
