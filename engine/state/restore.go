package state

import (
	"errors"
	"fmt"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// ErrIncompatible is wrapped when a savepoint's state cannot be restored into
// the declared one.
var ErrIncompatible = errors.New("state: incompatible state")

// ErrNotRestored is wrapped when a savepoint holds state that nothing
// declares and dropping it was not allowed.
var ErrNotRestored = errors.New("state: state in the savepoint is not declared by the job")

// Restored says how one state or timer service of a savepoint operator maps
// onto what the job declares.
type Restored struct {
	// Ref is the state's (or timer service's) ref in the savepoint operator:
	// its index in States, or len(States)+i for timer service i.
	Ref int
	// Spec is the declared state; nil for a timer service.
	Spec *Spec
	// Timers is the declared timer service's name; empty for a state.
	Timers string
	// Convert rewrites a stored value from the savepoint's serializer to the
	// declared one, including adding or removing the TTL timestamp; nil when
	// the bytes are kept as they are.
	Convert serializers.Migrate
}

// PlanRestore matches the states and timer services of a savepoint operator
// with the declared ones by name, and checks each pair with the serializers'
// compatibility rules. States the job declares but the savepoint lacks start
// empty and are not listed. timers maps each declared timer service to its
// namespace serializer.
func PlanRestore(op *savepoint.Operator, declared []*Spec, timers map[string]serializers.Serializer, opts RestoreOptions) ([]Restored, error) {
	byName := make(map[string]*Spec, len(declared))
	for _, s := range declared {
		byName[s.Name] = s
	}
	var plan []Restored
	for i := range op.States {
		saved := &op.States[i]
		spec, ok := byName[saved.Name]
		if !ok {
			if opts.AllowNonRestoredState {
				continue
			}
			return nil, fmt.Errorf("%w: operator %q state %q", ErrNotRestored, op.UID, saved.Name)
		}
		conv, err := planState(op.UID, saved, spec, opts.Now)
		if err != nil {
			return nil, err
		}
		plan = append(plan, Restored{Ref: i, Spec: spec, Convert: conv})
	}
	for i, t := range op.Timers {
		ns, ok := timers[t.Name]
		if !ok {
			if opts.AllowNonRestoredState {
				continue
			}
			return nil, fmt.Errorf("%w: operator %q timer service %q", ErrNotRestored, op.UID, t.Name)
		}
		if c := serializers.Check(t.Namespace, ns.Snapshot()); c.Verdict != serializers.CompatibleAsIs {
			return nil, fmt.Errorf("%w: operator %q timer service %q: namespace serializer changed: %s", ErrIncompatible, op.UID, t.Name, c.Reason)
		}
		plan = append(plan, Restored{Ref: len(op.States) + i, Timers: t.Name})
	}
	return plan, nil
}

func planState(uid string, saved *savepoint.KeyedState, spec *Spec, now int64) (serializers.Migrate, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: operator %q state %q: %s", ErrIncompatible, uid, saved.Name, fmt.Sprintf(format, args...))
	}
	if saved.Kind != spec.Kind {
		return nil, fail("state kind changed from %s to %s", saved.Kind, spec.Kind)
	}
	want := spec.Model()
	if c := serializers.Check(saved.Namespace, want.Namespace); c.Verdict != serializers.CompatibleAsIs {
		return nil, fail("namespace serializer changed: %s", c.Reason)
	}
	if spec.Kind == savepoint.Map {
		if c := serializers.Check(saved.MapKey, want.MapKey); c.Verdict != serializers.CompatibleAsIs {
			return nil, fail("map key serializer changed: %s", c.Reason)
		}
	}
	from, to := saved.StoredValue(), want.StoredValue()
	switch c := serializers.Check(from, to); c.Verdict {
	case serializers.CompatibleAsIs:
		return nil, nil
	case serializers.CompatibleAfterMigration:
		m, err := serializers.Migrator(from, to, serializers.MigrateOptions{Now: now})
		if err != nil {
			return nil, fail("%v", err)
		}
		return m, nil
	default:
		return nil, fail("%s", c.Reason)
	}
}

// Ref returns the ref of the named state in a savepoint operator.
func Ref(op *savepoint.Operator, state string) (int, bool) {
	for i := range op.States {
		if op.States[i].Name == state {
			return i, true
		}
	}
	return 0, false
}

// TimerRef returns the ref of the named timer service in a savepoint
// operator.
func TimerRef(op *savepoint.Operator, name string) (int, bool) {
	for i := range op.Timers {
		if op.Timers[i].Name == name {
			return len(op.States) + i, true
		}
	}
	return 0, false
}
