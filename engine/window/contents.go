package window

import (
	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/serializers"
)

// ContentsState is the name of the keyed state that holds every window's
// contents, as in Flink.
const ContentsState = "window-contents"

// contents is how a window keeps what it received: one folded value
// (reduce, aggregate) or every record (process), shown to the window
// function as R.
type contents[IN, R any] interface {
	descriptor() state.Descriptor
	// fresh returns contents with the same descriptor and no handle yet,
	// for another subtask.
	fresh() contents[IN, R]
	open(ctx *engine.OpenContext) error
	// setWindow scopes the other calls to w.
	setWindow(w Window) error
	add(v IN) error
	get() (R, bool, error)
	clear() error
	// merge folds the contents of the windows from into the current one
	// and clears them.
	merge(from []Window) error
}

type reduceContents[T any] struct {
	desc *state.ReducingDescriptor[T]
	s    state.ReducingState[T]
	w    Window
}

func newReduceContents[T any](reduce func(a, b T) T, ser serializers.Of[T]) *reduceContents[T] {
	return &reduceContents[T]{desc: state.NewReducing(ContentsState, ser, reduce, state.WithNamespace(serializers.Window()))}
}

func (c *reduceContents[T]) descriptor() state.Descriptor { return c.desc }
func (c *reduceContents[T]) fresh() contents[T, T]        { return &reduceContents[T]{desc: c.desc} }

func (c *reduceContents[T]) open(ctx *engine.OpenContext) (err error) {
	c.s, err = engine.GetReducing(ctx, c.desc)
	return err
}

func (c *reduceContents[T]) setWindow(w Window) error { c.w = w; return c.s.SetNamespace(w) }
func (c *reduceContents[T]) add(v T) error            { return c.s.Add(v) }
func (c *reduceContents[T]) get() (T, bool, error)    { return c.s.Get() }
func (c *reduceContents[T]) clear() error             { return c.s.Clear() }

func (c *reduceContents[T]) merge(from []Window) error {
	target := c.w
	for _, w := range from {
		if err := c.setWindow(w); err != nil {
			return err
		}
		v, ok, err := c.get()
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := c.clear(); err != nil {
			return err
		}
		if err := c.setWindow(target); err != nil {
			return err
		}
		if err := c.add(v); err != nil {
			return err
		}
	}
	return c.setWindow(target)
}

// AggregateFunction folds a window's records into an accumulator of its
// own type, stored with its own serializer, and gives the window's result
// from it. Merge joins the accumulators of merged session windows.
type AggregateFunction[IN, ACC, OUT any] interface {
	Create() ACC
	Add(in IN, acc ACC) ACC
	Result(acc ACC) OUT
	Merge(a, b ACC) ACC
}

// aggInput is what the aggregating state adds: a record, or, when windows
// merge, another window's accumulator. It lets the state stay Flink's
// aggregating "window-contents" while merging goes through it.
type aggInput[IN, ACC any] struct {
	in    IN
	acc   ACC
	isAcc bool
}

// accumulator is the Aggregator of the state: its result is the
// accumulator itself, so that merging can read it.
type accumulator[IN, ACC, OUT any] struct {
	f AggregateFunction[IN, ACC, OUT]
}

func (a accumulator[IN, ACC, OUT]) Create() ACC { return a.f.Create() }
func (a accumulator[IN, ACC, OUT]) Result(acc ACC) ACC {
	return acc
}

func (a accumulator[IN, ACC, OUT]) Add(in aggInput[IN, ACC], acc ACC) ACC {
	if in.isAcc {
		return a.f.Merge(acc, in.acc)
	}
	return a.f.Add(in.in, acc)
}

type aggregateContents[IN, ACC, OUT any] struct {
	f    AggregateFunction[IN, ACC, OUT]
	desc *state.AggregatingDescriptor[aggInput[IN, ACC], ACC, ACC]
	s    state.AggregatingState[aggInput[IN, ACC], ACC]
	w    Window
}

func newAggregateContents[IN, ACC, OUT any](f AggregateFunction[IN, ACC, OUT], acc serializers.Of[ACC]) *aggregateContents[IN, ACC, OUT] {
	return &aggregateContents[IN, ACC, OUT]{f: f,
		desc: state.NewAggregating(ContentsState, acc, state.Aggregator[aggInput[IN, ACC], ACC, ACC](accumulator[IN, ACC, OUT]{f}), state.WithNamespace(serializers.Window()))}
}

func (c *aggregateContents[IN, ACC, OUT]) descriptor() state.Descriptor { return c.desc }

func (c *aggregateContents[IN, ACC, OUT]) fresh() contents[IN, OUT] {
	return &aggregateContents[IN, ACC, OUT]{f: c.f, desc: c.desc}
}

func (c *aggregateContents[IN, ACC, OUT]) open(ctx *engine.OpenContext) (err error) {
	c.s, err = engine.GetAggregating(ctx, c.desc)
	return err
}

func (c *aggregateContents[IN, ACC, OUT]) setWindow(w Window) error {
	c.w = w
	return c.s.SetNamespace(w)
}

func (c *aggregateContents[IN, ACC, OUT]) add(v IN) error {
	return c.s.Add(aggInput[IN, ACC]{in: v})
}

func (c *aggregateContents[IN, ACC, OUT]) get() (OUT, bool, error) {
	acc, ok, err := c.s.Get()
	if err != nil || !ok {
		var zero OUT
		return zero, false, err
	}
	return c.f.Result(acc), true, nil
}

func (c *aggregateContents[IN, ACC, OUT]) clear() error { return c.s.Clear() }

func (c *aggregateContents[IN, ACC, OUT]) merge(from []Window) error {
	target := c.w
	for _, w := range from {
		if err := c.setWindow(w); err != nil {
			return err
		}
		acc, ok, err := c.s.Get()
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := c.clear(); err != nil {
			return err
		}
		if err := c.setWindow(target); err != nil {
			return err
		}
		if err := c.s.Add(aggInput[IN, ACC]{acc: acc, isAcc: true}); err != nil {
			return err
		}
	}
	return c.setWindow(target)
}

type listContents[T any] struct {
	desc *state.ListDescriptor[T]
	s    state.ListState[T]
	w    Window
}

func newListContents[T any](ser serializers.Of[T]) *listContents[T] {
	return &listContents[T]{desc: state.NewList(ContentsState, ser, state.WithNamespace(serializers.Window()))}
}

func (c *listContents[T]) descriptor() state.Descriptor { return c.desc }
func (c *listContents[T]) fresh() contents[T, []T]      { return &listContents[T]{desc: c.desc} }

func (c *listContents[T]) open(ctx *engine.OpenContext) (err error) {
	c.s, err = engine.GetList(ctx, c.desc)
	return err
}

func (c *listContents[T]) setWindow(w Window) error { c.w = w; return c.s.SetNamespace(w) }
func (c *listContents[T]) add(v T) error            { return c.s.Add(v) }

func (c *listContents[T]) get() ([]T, bool, error) {
	vs, err := c.s.Get()
	return vs, len(vs) > 0, err
}

func (c *listContents[T]) clear() error { return c.s.Clear() }

func (c *listContents[T]) merge(from []Window) error {
	target := c.w
	for _, w := range from {
		if err := c.setWindow(w); err != nil {
			return err
		}
		vs, err := c.s.Get()
		if err != nil {
			return err
		}
		if len(vs) == 0 {
			continue
		}
		if err := c.clear(); err != nil {
			return err
		}
		if err := c.setWindow(target); err != nil {
			return err
		}
		if err := c.s.AddAll(vs); err != nil {
			return err
		}
	}
	return c.setWindow(target)
}
