package evolve

import (
	"context"
	"fmt"
	"runtime"

	"github.com/stateproc/stateproc/compat"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// Options configure Check and Migrate.
type Options struct {
	// AllowNonRestoredState drops what the target no longer declares, as
	// the engine's switch of the same name does, instead of finding it
	// incompatible.
	AllowNonRestoredState bool
	// Workers is how many segments are read, or files written, at once; 0
	// means one per core.
	Workers int
}

func (o Options) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// Check decides whether the target's job can restore the savepoint in r,
// item by item. It reads values only of the states whose migration depends
// on the data.
func Check(ctx context.Context, r savepoint.Source, t Target, opts Options) (*Report, error) {
	rep := decide(r.Metadata(), t, opts)
	if err := settleAll(ctx, r, t, rep, opts.workers()); err != nil {
		return nil, err
	}
	return rep, nil
}

// decide is Check without reading data.
func decide(meta *savepoint.Metadata, t Target, opts Options) *Report {
	rep := &Report{Target: t.Name, Restorable: true}
	for _, f := range compat.CheckJob(meta, t.Operators, compat.Options{AllowNonRestoredState: opts.AllowNonRestoredState}) {
		it := Item{Operator: f.Operator, What: f.What, Name: f.Name, Verdict: f.Verdict, Reason: f.Reason,
			DataDependent: f.DataDependent && f.Verdict == compat.AfterMigration, finding: f}
		if f.What == compat.KeyedState {
			it.Kind = keyedState(meta, t, &f).Kind.String()
		}
		rep.Items = append(rep.Items, it)
	}
	rep.tally()
	return rep
}

// settleAll settles every item whose verdict depends on the data.
func settleAll(ctx context.Context, r savepoint.Source, t Target, rep *Report, workers int) error {
	for i := range rep.Items {
		if it := &rep.Items[i]; it.finding.DataDependent && it.Verdict == compat.AfterMigration {
			if err := settle(ctx, r, t, it, workers); err != nil {
				return err
			}
		}
	}
	rep.tally()
	return nil
}

// settle reads the values of a state whose migration depends on the data,
// and makes it incompatible if one cannot be migrated.
func settle(ctx context.Context, r savepoint.Source, t Target, it *Item, workers int) error {
	op, saved, declared := pair(r.Metadata(), t, &it.finding)
	conv, err := compat.Converter(saved, declared, 0)
	if err != nil {
		return err
	}
	u, err := firstUnreadable(ctx, r, savepoint.StateRef{Operator: op, State: it.finding.Saved}, conv, workers)
	if err != nil || u == nil {
		return err
	}
	it.Verdict, it.Unreadable = compat.Incompatible, &u.at
	it.Reason = fmt.Sprintf("%s (first at %s)", serializers.Detail(u.err), &u.at)
	return nil
}

// pair returns, for a keyed state found in both, the index of its
// savepoint operator, the saved state and the declared one.
func pair(meta *savepoint.Metadata, t Target, f *compat.Finding) (int, *savepoint.KeyedState, *savepoint.KeyedState) {
	op := operatorIndex(meta, f.Operator)
	d := declaredOperator(t, f.Operator)
	return op, &meta.Operators[op].States[f.Saved], &d.States[f.Declared]
}

// keyedState returns the state a finding is about, from the savepoint when
// it has it.
func keyedState(meta *savepoint.Metadata, t Target, f *compat.Finding) *savepoint.KeyedState {
	if f.Saved >= 0 {
		return &meta.Operators[operatorIndex(meta, f.Operator)].States[f.Saved]
	}
	return &declaredOperator(t, f.Operator).States[f.Declared]
}

func operatorIndex(meta *savepoint.Metadata, uid string) int {
	for i := range meta.Operators {
		if meta.Operators[i].UID == uid {
			return i
		}
	}
	return -1
}

func declaredOperator(t Target, uid string) *compat.Declared {
	for i := range t.Operators {
		if t.Operators[i].UID == uid {
			return &t.Operators[i]
		}
	}
	return nil
}
