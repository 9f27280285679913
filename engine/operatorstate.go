package engine

import (
	"fmt"
	"slices"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// OperatorListDescriptor declares an operator list state: non-keyed state
// of which every subtask holds a list, handed out on restore by its
// distribution. With EvenSplit every element goes to exactly one new
// subtask; with UnionRedistribution every new subtask gets every element of
// every old subtask, and keeps what it needs.
type OperatorListDescriptor[T any] struct {
	spec operatorStateSpec
	elem serializers.Of[T]
}

// Distribution says how a restore hands out an operator list state's
// elements to the new subtasks.
type Distribution = savepoint.Distribution

// The distributions of operator list state, as Flink names them: even-split
// redistribution and union redistribution. (Union, the function, merges
// streams.)
const (
	EvenSplit           = savepoint.EvenSplit
	UnionRedistribution = savepoint.Union
)

// NewOperatorList declares an operator list state.
func NewOperatorList[T any](name string, elem serializers.Of[T], distribution Distribution) *OperatorListDescriptor[T] {
	d := &OperatorListDescriptor[T]{elem: elem}
	d.spec = operatorStateSpec{name: name, distribution: distribution, element: elem, desc: d}
	return d
}

// OperatorStateDescriptor is implemented by every OperatorListDescriptor.
type OperatorStateDescriptor interface {
	operatorStateSpec() operatorStateSpec
}

func (d *OperatorListDescriptor[T]) operatorStateSpec() operatorStateSpec { return d.spec }

// WithOperatorState declares the operator list states a process function
// uses. Their names share one namespace with the operator's keyed and
// broadcast states.
func WithOperatorState(ds ...OperatorStateDescriptor) OperatorOption {
	return func(n *node) {
		for _, d := range ds {
			n.opState = append(n.opState, d.operatorStateSpec())
		}
	}
}

// OperatorListState is the handle of an operator list state: this
// subtask's list, restored with its share of the savepoint's elements and
// written into every checkpoint and savepoint as it stands at the barrier.
// It belongs to the subtask's goroutine, like the process function.
type OperatorListState[T any] struct {
	d     *OperatorListDescriptor[T]
	elems []T
}

// GetOperatorList returns the handle of an operator list state declared
// with WithOperatorState.
func GetOperatorList[T any](c *OpenContext, d *OperatorListDescriptor[T]) (*OperatorListState[T], error) {
	t := c.t
	if !slices.ContainsFunc(t.n.opState, func(s operatorStateSpec) bool { return s.desc == OperatorStateDescriptor(d) }) {
		return nil, fmt.Errorf("engine: operator %s: operator state %q was not declared with WithOperatorState when the job was built", t.n.label(), d.spec.name)
	}
	if h, ok := t.opLists[d.spec.name]; ok {
		return h.(*OperatorListState[T]), nil
	}
	h := &OperatorListState[T]{d: d}
	// openRestore has found the saved element serializer to be the
	// declared one as it is.
	for i, e := range t.restoredOp[d.spec.name] {
		v, err := d.elem.Decode(e)
		if err != nil {
			return nil, permanent(fmt.Errorf("operator state %q: restored element %d: %w", d.spec.name, i, err))
		}
		h.elems = append(h.elems, v)
	}
	t.opLists[d.spec.name] = h
	return h, nil
}

// Get returns a copy of the list.
func (l *OperatorListState[T]) Get() []T { return slices.Clone(l.elems) }

// Update replaces the list with a copy of vs.
func (l *OperatorListState[T]) Update(vs []T) { l.elems = slices.Clone(vs) }

// Add appends v to the list.
func (l *OperatorListState[T]) Add(v T) { l.elems = append(l.elems, v) }

// Clear empties the list.
func (l *OperatorListState[T]) Clear() { l.elems = nil }

// operatorList is the untyped side of an OperatorListState.
type operatorList interface {
	encode() ([][]byte, error)
}

func (l *OperatorListState[T]) encode() ([][]byte, error) {
	out := make([][]byte, 0, len(l.elems))
	for i, v := range l.elems {
		b, err := l.d.elem.Append(nil, v)
		if err != nil {
			return nil, fmt.Errorf("operator state %q: element %d: %w", l.d.spec.name, i, err)
		}
		out = append(out, b)
	}
	return out, nil
}

// snapshotOperatorLists returns the operator list states of a process
// function's subtask: those Open obtained as they stand, the others as
// they were restored, so that a state the function no longer reads keeps
// its elements.
func (t *task) snapshotOperatorLists(*checkpoint) (map[string][][]byte, error) {
	lists := make(map[string][][]byte, len(t.n.opState))
	for _, s := range t.n.opState {
		h, ok := t.opLists[s.name]
		if !ok {
			lists[s.name] = t.restoredOp[s.name]
			continue
		}
		l, err := h.encode()
		if err != nil {
			return nil, err
		}
		lists[s.name] = l
	}
	return lists, nil
}

// validate checks an operator state that the job declared on n.
func (s operatorStateSpec) validate(n *node) error {
	switch {
	case s.desc == nil:
		return nil
	case n.kind != keyedNode:
		return fmt.Errorf("%w: operator %s: operator state %q can only be declared on a process operator", ErrBuild, n.label(), s.name)
	case s.name == "":
		return fmt.Errorf("%w: operator %s: operator state without a name", ErrBuild, n.label())
	case s.distribution != savepoint.EvenSplit && s.distribution != savepoint.Union:
		return fmt.Errorf("%w: operator %s: operator state %q has %v", ErrBuild, n.label(), s.name, s.distribution)
	case s.element == nil:
		return fmt.Errorf("%w: operator %s: operator state %q has no element serializer", ErrBuild, n.label(), s.name)
	}
	return nil
}
