package engine

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// OutputTag names a side output of records of type T: a second stream out
// of a process function, next to its main output, as Flink's OutputTag.
// The window operator sends late records to one.
type OutputTag[T any] struct{ id string }

// NewOutputTag returns the tag of the side output named id. Tags are
// compared by id: one operator's side outputs need distinct ids.
func NewOutputTag[T any](id string) OutputTag[T] { return OutputTag[T]{id: id} }

// ID is the side output's name.
func (t OutputTag[T]) ID() string { return t.id }

// sideSpec is what a job graph knows of one side output of an operator.
type sideSpec struct {
	typ reflect.Type
	// conflict names another type that the same id was read as.
	conflict reflect.Type
	build    func(t *task) sideOutput
}

// sideOutput is the type-erased output of one side output: watermarks,
// barriers and the end of input go to it as to the main output.
type sideOutput interface {
	control(c control) error
}

type namedSide struct {
	id  string
	out sideOutput
}

// SideOutput returns the side output tag of the process function that
// produces s: the records it emits there with EmitSide, with their
// timestamps, and the main output's watermarks. Records emitted to a tag
// that nobody reads are dropped.
func SideOutput[T, S any](s Stream[T], tag OutputTag[S]) Stream[S] {
	n := s.node
	typ := reflect.TypeFor[S]()
	if n.sides == nil {
		n.sides = map[string]*sideSpec{}
	}
	spec := n.sides[tag.id]
	switch {
	case spec == nil:
		n.sides[tag.id] = &sideSpec{typ: typ, build: func(t *task) sideOutput {
			return &output[S]{ctx: t.ctx, routes: newRoutes[S](t, tag.id)}
		}}
	case spec.typ != typ:
		spec.conflict = typ
	}
	return Stream[S]{job: s.job, node: n, side: tag.id}
}

// EmitSide sends v to the side output tag with the current timestamp.
func EmitSide[K, OUT, S any](c *Context[K, OUT], tag OutputTag[S], v S) error {
	for _, s := range c.out.sides {
		if s.id != tag.id {
			continue
		}
		o, ok := s.out.(*output[S])
		if !ok {
			return c.t.errorf("side output %q carries %s, not %T", tag.id, c.t.n.sides[tag.id].typ, v)
		}
		return o.emit(v, c.ts)
	}
	return nil
}

func (n *node) validateSides() error {
	for _, id := range slices.Sorted(maps.Keys(n.sides)) {
		spec := n.sides[id]
		switch {
		case n.kind != keyedNode:
			return fmt.Errorf("%w: operator %s: side output %q: only process functions have side outputs", ErrBuild, n.label(), id)
		case strings.TrimSpace(id) == "":
			return fmt.Errorf("%w: operator %s: a side output needs a tag id", ErrBuild, n.label())
		case spec.conflict != nil:
			return fmt.Errorf("%w: operator %s: side output %q read as both %s and %s", ErrBuild, n.label(), id, spec.typ, spec.conflict)
		}
	}
	return nil
}

// newSideOutputs builds t's side outputs that some edge reads.
func newSideOutputs(t *task) []namedSide {
	var sides []namedSide
	for _, id := range slices.Sorted(maps.Keys(t.n.sides)) {
		sides = append(sides, namedSide{id: id, out: t.n.sides[id].build(t)})
	}
	return sides
}
