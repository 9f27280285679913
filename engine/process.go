package engine

import (
	"context"
	"fmt"

	"github.com/stateproc/stateproc/engine/state"
)

// TimeDomain says which clock a timer runs on.
type TimeDomain uint8

const (
	EventTime TimeDomain = iota + 1
	ProcessingTime
)

// Timer services every keyed operator declares.
const (
	EventTimeTimers      = "event-time"
	ProcessingTimeTimers = "processing-time"
)

// TimerInfo describes a timer that fired.
type TimerInfo struct {
	Timestamp int64
	Domain    TimeDomain
	// Namespace is the timer's namespace, decoded by the operator's
	// TimerNamespace serializer; nil for the void namespace.
	Namespace any
}

// KeyedProcessFunction processes a keyed stream one record at a time, with
// the record's key bound: its state handles and timers are scoped to it.
// The runtime builds one instance per subtask.
type KeyedProcessFunction[K, IN, OUT any] interface {
	// Open obtains state handles, before any record and with no key bound.
	Open(ctx *OpenContext) error
	ProcessElement(ctx *Context[K, OUT], in IN) error
	OnTimer(ctx *Context[K, OUT], t TimerInfo) error
}

// NoOpen, embedded in a process function that obtains no state handles,
// is its Open.
type NoOpen struct{}

// Open does nothing.
func (NoOpen) Open(*OpenContext) error { return nil }

// NoTimers, embedded in a process function that registers no timers, is
// its OnTimer.
type NoTimers[K, OUT any] struct{}

// OnTimer does nothing: no timer is ever registered.
func (NoTimers[K, OUT]) OnTimer(*Context[K, OUT], TimerInfo) error { return nil }

// ProcessFunc makes a process function of fn, for Process, when it needs
// neither state handles nor timers (it may still emit).
func ProcessFunc[K, IN, OUT any](fn func(c *Context[K, OUT], in IN) error) func() KeyedProcessFunction[K, IN, OUT] {
	return func() KeyedProcessFunction[K, IN, OUT] { return processFunc[K, IN, OUT](fn) }
}

type processFunc[K, IN, OUT any] func(c *Context[K, OUT], in IN) error

func (processFunc[K, IN, OUT]) Open(*OpenContext) error { return nil }

func (f processFunc[K, IN, OUT]) ProcessElement(c *Context[K, OUT], in IN) error { return f(c, in) }

func (processFunc[K, IN, OUT]) OnTimer(*Context[K, OUT], TimerInfo) error { return nil }

// OpenContext is given to Open. It is the subtask's context.Context too:
// done when the job stops or fails.
type OpenContext struct {
	context.Context
	t *task
}

// Subtask is the index of this subtask.
func (c *OpenContext) Subtask() int { return c.t.subtask }

// Parallelism is the operator's parallelism.
func (c *OpenContext) Parallelism() int { return c.t.n.parallelism }

func (c *OpenContext) declared(d state.Descriptor) error {
	for _, x := range c.t.n.states {
		if x == d {
			c.t.opened[d] = true
			return nil
		}
	}
	return fmt.Errorf("engine: operator %s: state %q was not declared with WithState when the job was built", c.t.n.label(), d.Spec().Name)
}

// GetValue returns the handle of a declared value state.
func GetValue[T any](c *OpenContext, d *state.ValueDescriptor[T]) (state.ValueState[T], error) {
	if err := c.declared(d); err != nil {
		return nil, err
	}
	return state.GetValue(c.t.backend, c.t.clock, d)
}

// GetList returns the handle of a declared list state.
func GetList[T any](c *OpenContext, d *state.ListDescriptor[T]) (state.ListState[T], error) {
	if err := c.declared(d); err != nil {
		return nil, err
	}
	return state.GetList(c.t.backend, c.t.clock, d)
}

// GetMap returns the handle of a declared map state.
func GetMap[K, V any](c *OpenContext, d *state.MapDescriptor[K, V]) (state.MapState[K, V], error) {
	if err := c.declared(d); err != nil {
		return nil, err
	}
	return state.GetMap(c.t.backend, c.t.clock, d)
}

// GetReducing returns the handle of a declared reducing state.
func GetReducing[T any](c *OpenContext, d *state.ReducingDescriptor[T]) (state.ReducingState[T], error) {
	if err := c.declared(d); err != nil {
		return nil, err
	}
	return state.GetReducing(c.t.backend, c.t.clock, d)
}

// GetAggregating returns the handle of a declared aggregating state.
func GetAggregating[IN, ACC, OUT any](c *OpenContext, d *state.AggregatingDescriptor[IN, ACC, OUT]) (state.AggregatingState[IN, OUT], error) {
	if err := c.declared(d); err != nil {
		return nil, err
	}
	return state.GetAggregating(c.t.backend, c.t.clock, d)
}

// Context is given to ProcessElement and OnTimer. It is the subtask's
// context.Context too, done when the job stops or fails, to hand to what
// the function calls.
type Context[K, OUT any] struct {
	context.Context
	t   *task
	out *output[OUT]
	key K
	ts  int64
	et  state.Timers
	pt  state.Timers
	// ns is the scratch buffer for encoding timer namespaces.
	ns []byte
}

// Key is the key of the record (or timer) being processed.
func (c *Context[K, OUT]) Key() K { return c.key }

// Timestamp is the event time of the record, or the time of the timer.
func (c *Context[K, OUT]) Timestamp() int64 { return c.ts }

// Emit sends v downstream with the current timestamp.
func (c *Context[K, OUT]) Emit(v OUT) error { return c.out.emit(v, c.ts) }

// EmitAt sends v downstream with event time ts.
func (c *Context[K, OUT]) EmitAt(v OUT, ts int64) error { return c.out.emit(v, ts) }

// CurrentWatermark is the operator's event-time watermark.
func (c *Context[K, OUT]) CurrentWatermark() int64 { return c.t.watermark }

// CurrentProcessingTime is the processing time of this call.
func (c *Context[K, OUT]) CurrentProcessingTime() int64 { return c.t.clock.Now() }

// RegisterEventTimeTimer sets a timer for the current key that fires once
// the watermark reaches ts. Registering the same time twice sets one timer.
// Timers fire as the watermark advances: one at or behind the current
// watermark fires at the next advance. An operator with a TimerNamespace
// refuses the timer methods without a namespace: use those ending in In.
func (c *Context[K, OUT]) RegisterEventTimeTimer(ts int64) error {
	if err := c.voidNamespace(); err != nil {
		return err
	}
	return c.et.Register(nil, ts)
}

// DeleteEventTimeTimer removes a timer of the current key.
func (c *Context[K, OUT]) DeleteEventTimeTimer(ts int64) error {
	if err := c.voidNamespace(); err != nil {
		return err
	}
	return c.et.Delete(nil, ts)
}

// RegisterProcessingTimeTimer sets a timer for the current key that fires
// once processing time reaches ts.
func (c *Context[K, OUT]) RegisterProcessingTimeTimer(ts int64) error {
	if err := c.voidNamespace(); err != nil {
		return err
	}
	return c.pt.Register(nil, ts)
}

// DeleteProcessingTimeTimer removes a processing-time timer of the current
// key.
func (c *Context[K, OUT]) DeleteProcessingTimeTimer(ts int64) error {
	if err := c.voidNamespace(); err != nil {
		return err
	}
	return c.pt.Delete(nil, ts)
}

// Process applies a keyed process function to a keyed stream. newFn builds
// the function once per subtask. The operator declares its keyed states with
// WithState and needs a UID.
func Process[K, IN, OUT any](ks KeyedStream[K, IN], newFn func() KeyedProcessFunction[K, IN, OUT], opts ...OperatorOption) Stream[OUT] {
	n := ks.in.job.addNode(keyedNode, "process", opts)
	n.key = ks.keySer
	n.stateful = true
	n.opState = append(n.opState, subtaskClockSpec())
	connect(ks.in, n, hashEdge, 0, keyEncoder(ks))
	n.run = func(t *task) error {
		k := &keyedRunner[K, IN, struct{}, OUT]{keyOf: ks.key, keySer: ks.keySer, fn: newFn()}
		return k.run(t)
	}
	return Stream[OUT]{job: ks.in.job, node: n}
}
