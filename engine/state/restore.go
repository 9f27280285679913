package state

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/stateproc/stateproc/compat"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// ErrNotRestored is wrapped when a savepoint holds state that nothing
// declares and dropping it was not allowed.
var ErrNotRestored = errors.New("state: state in the savepoint is not declared by the job")

// ErrNoCurrentKey is wrapped by the error of a keyed access made with no
// current key: before the first SetCurrentKey, or after ClearCurrentKey.
var ErrNoCurrentKey = errors.New("no current key")

// Restored says how one state or timer service of a savepoint operator maps
// onto what the job declares.
type Restored struct {
	// Ref is the state or timer service in the savepoint.
	Ref savepoint.StateRef
	// Spec is the declared state; nil for a timer service.
	Spec *Spec
	// Timers is the declared timer service's name; empty for a state.
	Timers string
	// Convert rewrites a stored value from the savepoint's serializer to the
	// declared one, including adding or removing the TTL timestamp; nil when
	// the bytes are kept as they are.
	Convert serializers.Migrate
}

// PlanRestore matches the states and timer services of operator opIdx of a
// savepoint, op, with the declared ones by name, and decides each pair as
// compat does for stateproc check. States the job declares but the
// savepoint lacks start empty and are not listed. timers maps each declared
// timer service to its namespace serializer.
func PlanRestore(opIdx int, op *savepoint.Operator, declared []*Spec, timers map[string]serializers.Serializer, opts RestoreOptions) ([]Restored, error) {
	states := make([]savepoint.KeyedState, len(declared))
	for i, s := range declared {
		states[i] = s.Model()
	}
	services := make([]savepoint.TimerService, 0, len(timers))
	for _, name := range slices.Sorted(maps.Keys(timers)) {
		services = append(services, savepoint.TimerService{Name: name, Namespace: timers[name].Snapshot()})
	}
	var plan []Restored
	for _, f := range compat.CheckKeyed(op, states, services, compat.Options{AllowNonRestoredState: opts.AllowNonRestoredState}) {
		if err := Refusal(&f); err != nil {
			return nil, err
		}
		if f.Saved < 0 || f.Declared < 0 {
			continue // new, or dropped
		}
		if f.What == compat.TimerService {
			plan = append(plan, Restored{Ref: savepoint.StateRef{Operator: opIdx, State: f.Saved, Timer: true}, Timers: f.Name})
			continue
		}
		conv, err := compat.Converter(&op.States[f.Saved], &states[f.Declared], opts.Now)
		if err != nil {
			return nil, fmt.Errorf("state: %w: %s: %v", compat.ErrIncompatible, f.Where(), err)
		}
		plan = append(plan, Restored{Ref: savepoint.StateRef{Operator: opIdx, State: f.Saved}, Spec: declared[f.Declared], Convert: conv})
	}
	return plan, nil
}

// Refusal returns the error that stops a restore on f, or nil when f lets
// the restore go on.
func Refusal(f *compat.Finding) error {
	switch {
	case f.Verdict != compat.Incompatible:
		return nil
	case f.Unclaimed:
		return fmt.Errorf("%w: %s", ErrNotRestored, f.Where())
	}
	return fmt.Errorf("state: %w: %s: %s", compat.ErrIncompatible, f.Where(), f.Reason)
}

// Ref returns the ref of the named state of operator opIdx of a savepoint,
// op.
func Ref(opIdx int, op *savepoint.Operator, state string) (savepoint.StateRef, bool) {
	for i := range op.States {
		if op.States[i].Name == state {
			return savepoint.StateRef{Operator: opIdx, State: i}, true
		}
	}
	return savepoint.StateRef{}, false
}

// TimerRef returns the ref of the named timer service of operator opIdx of
// a savepoint, op.
func TimerRef(opIdx int, op *savepoint.Operator, name string) (savepoint.StateRef, bool) {
	for i := range op.Timers {
		if op.Timers[i].Name == name {
			return savepoint.StateRef{Operator: opIdx, State: i, Timer: true}, true
		}
	}
	return savepoint.StateRef{}, false
}
