package evolve

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stateproc/stateproc/compat"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
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
func Migrate(ctx context.Context, src *snapshotfmt.Reader, input string, t Target, opts MigrateOptions, out rewrite.Options) (*Report, error) {
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
		rep.Now = opts.Now
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
	plans := rewrite.SameLayout(src, m.place)
	size := rewrite.PlannedBytes(plans)
	if !out.DryRun {
		if out.Writer, err = rewrite.WriterOptions(src); err != nil {
			return nil, err
		}
		out.Need = size
	}
	meter := rewrite.NewMeter(size, out.Progress)
	err = rewrite.Execute(ctx, src, input, m.metadata(input, t, rep), out, func(ctx context.Context, o *rewrite.Output) error {
		return rewrite.WriteFiles(ctx, src, o.Writer(), plans, opts.workers(), meter)
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
	// op maps an input operator to its index in the output, or -1; ref maps
	// (input operator, ref) to the ref in the output, or -1.
	op  []int
	ref [][]int
	// conv holds the rewrites of the migrated states, by (input operator,
	// ref), with what they count.
	conv map[[2]int]*conversion
}

type conversion struct {
	migrate           serializers.Migrate
	key               func([]byte) string
	bytesIn, bytesOut atomic.Uint64
}

func newMapping(meta *savepoint.Metadata, t Target, rep *Report, now int64) (*mapping, error) {
	m := &mapping{in: meta, op: make([]int, len(meta.Operators)), ref: make([][]int, len(meta.Operators)), conv: map[[2]int]*conversion{}}
	for i := range meta.Operators {
		saved := &meta.Operators[i]
		m.op[i] = -1
		m.ref[i] = slices.Repeat([]int{-1}, len(saved.States)+len(saved.Timers))
		if d := declaredOperator(t, saved.UID); d != nil {
			m.op[i] = len(m.ops)
			m.ops = append(m.ops, m.operator(i, d))
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
		m.conv[[2]int{op, it.finding.Saved}] = &conversion{migrate: conv, key: keyPrinter(meta.Operators[op].Key)}
	}
	return m, nil
}

// operator is input operator i as the output holds it: the states, timer
// services, operator states and broadcast states that d declares, with d's
// serializers and TTL; the rest, and the operator's parallelism and max
// parallelism, as they were.
func (m *mapping) operator(i int, d *compat.Declared) savepoint.Operator {
	saved := &m.in.Operators[i]
	op := *saved
	if saved.Keyed() && d.Keyed() {
		op.Key = d.Key
	}
	op.States, op.Timers, op.OperatorStates, op.BroadcastStates = nil, nil, nil, nil
	for ref, s := range saved.States {
		if ds, ok := d.State(s.Name); ok {
			m.ref[i][ref] = len(op.States)
			s.Namespace, s.MapKey, s.Value, s.TTL = ds.Namespace, ds.MapKey, ds.Value, ds.TTL
			op.States = append(op.States, s)
		}
	}
	for j, ts := range saved.Timers {
		if dt, ok := d.TimerService(ts.Name); ok {
			m.ref[i][len(saved.States)+j] = len(op.States) + len(op.Timers)
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
func (m *mapping) place(seg snapshotfmt.Segment) (rewrite.SegmentPlan, bool) {
	op, ref := m.op[seg.Operator], m.ref[seg.Operator][seg.Ref]
	if op < 0 || ref < 0 {
		return rewrite.SegmentPlan{}, false
	}
	p := rewrite.SegmentPlan{Src: seg, Op: op, Ref: ref}
	if c, ok := m.conv[[2]int{seg.Operator, seg.Ref}]; ok {
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
		did += ", TTL timestamps set to " + time.UnixMilli(rep.Now).UTC().Format("2006-01-02T15:04:05.000Z")
	}
	out := rewrite.DeriveMetadata(input, m.in, did)
	out.Operators = m.ops
	return out
}

// count fills in what migrate did with the data of each keyed state and
// timer service.
func (m *mapping) count(rep *Report, plans []rewrite.FilePlan) {
	entries := map[[2]int]uint64{}
	for _, fp := range plans {
		for _, p := range fp.Segments {
			entries[[2]int{p.Src.Operator, p.Src.Ref}] += p.Kept
		}
	}
	for i := range rep.Items {
		it := &rep.Items[i]
		f := &it.finding
		if f.What != compat.KeyedState && f.What != compat.TimerService || f.Saved < 0 || f.Declared < 0 {
			continue
		}
		op := operatorIndex(m.in, it.Operator)
		ref := f.Saved
		if f.What == compat.TimerService {
			ref += len(m.in.Operators[op].States)
		}
		key := [2]int{op, ref}
		it.Migrated = &Migrated{Entries: entries[key]}
		if c, ok := m.conv[key]; ok {
			it.Migrated.Rewritten = true
			it.Migrated.ValueBytesBefore, it.Migrated.ValueBytesAfter = c.bytesIn.Load(), c.bytesOut.Load()
		}
	}
}
