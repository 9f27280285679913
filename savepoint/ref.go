package savepoint

import (
	"cmp"
	"fmt"
)

// StateRef names one keyed state or one timer service of one operator of a
// savepoint: the keyed data that lives per key group.
type StateRef struct {
	// Operator is an index into Metadata.Operators.
	Operator int
	// State is an index into the operator's Timers when Timer is set, into
	// its States otherwise.
	State int
	Timer bool
}

// Compare orders refs by operator, then the keyed states before the timer
// services, each in metadata order: the order of the segments of a key
// group in every layout stateproc writes.
func (r StateRef) Compare(o StateRef) int {
	return cmp.Or(cmp.Compare(r.Operator, o.Operator), compareBool(r.Timer, o.Timer), cmp.Compare(r.State, o.State))
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// Refs returns every keyed state and then every timer service of operator
// op, in Compare order.
func (m *Metadata) Refs(op int) []StateRef {
	o := &m.Operators[op]
	var refs []StateRef
	for i := range o.States {
		refs = append(refs, StateRef{Operator: op, State: i})
	}
	for i := range o.Timers {
		refs = append(refs, StateRef{Operator: op, State: i, Timer: true})
	}
	return refs
}

// Check returns an error unless ref names a keyed state or timer service of
// m.
func (m *Metadata) Check(ref StateRef) error {
	if ref.Operator < 0 || ref.Operator >= len(m.Operators) {
		return fmt.Errorf("savepoint: no operator %d in a savepoint of %d operators", ref.Operator, len(m.Operators))
	}
	o := &m.Operators[ref.Operator]
	n, what := len(o.States), "keyed states"
	if ref.Timer {
		n, what = len(o.Timers), "timer services"
	}
	if ref.State < 0 || ref.State >= n {
		return fmt.Errorf("savepoint: operator %q has %d %s, not %d", o.UID, n, what, ref.State+1)
	}
	return nil
}

// KeyedState returns the keyed state ref names, or nil for a timer service.
// ref must be valid (see Check).
func (m *Metadata) KeyedState(ref StateRef) *KeyedState {
	if ref.Timer {
		return nil
	}
	return &m.Operators[ref.Operator].States[ref.State]
}

// TimerService returns the timer service ref names, or nil for a keyed
// state. ref must be valid (see Check).
func (m *Metadata) TimerService(ref StateRef) *TimerService {
	if !ref.Timer {
		return nil
	}
	return &m.Operators[ref.Operator].Timers[ref.State]
}

// RefName returns the name of the state or timer service ref names. ref
// must be valid (see Check).
func (m *Metadata) RefName(ref StateRef) string {
	if ref.Timer {
		return m.Operators[ref.Operator].Timers[ref.State].Name
	}
	return m.Operators[ref.Operator].States[ref.State].Name
}

// Describe names ref for messages: operator "uid" state "name", or
// operator "uid" timer service "name". ref must be valid (see Check).
func (m *Metadata) Describe(ref StateRef) string {
	what := "state"
	if ref.Timer {
		what = "timer service"
	}
	return fmt.Sprintf("operator %q %s %q", m.Operators[ref.Operator].UID, what, m.RefName(ref))
}

// Find returns the ref of the keyed state or, failing that, the timer
// service of operator op called name.
func (m *Metadata) Find(op int, name string) (StateRef, bool) {
	o := &m.Operators[op]
	for i := range o.States {
		if o.States[i].Name == name {
			return StateRef{Operator: op, State: i}, true
		}
	}
	for i := range o.Timers {
		if o.Timers[i].Name == name {
			return StateRef{Operator: op, State: i, Timer: true}, true
		}
	}
	return StateRef{}, false
}
