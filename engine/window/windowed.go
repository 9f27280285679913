package window

import (
	"fmt"
	"time"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/serializers"
)

// spec is what every subtask's window operator shares.
type spec[IN any] struct {
	assigner Assigner
	trigger  Trigger
	// lateness is the allowed lateness in milliseconds.
	lateness int64
	late     *engine.OutputTag[IN]
}

func (s *spec[IN]) validate() error {
	if err := s.assigner.validate(); err != nil {
		return fmt.Errorf("window: %w", err)
	}
	if s.lateness < 0 {
		return fmt.Errorf("window: allowed lateness %dms: want a whole number of milliseconds, at least 0", s.lateness)
	}
	if s.assigner.Merging() && !s.trigger.CanMerge() {
		return fmt.Errorf("window: session windows need a trigger that can merge")
	}
	return nil
}

// Stream is a keyed stream cut into windows, as Flink's WindowedStream:
// set its trigger, lateness and late-data output, then end it in Reduce,
// Aggregate or Process.
type Stream[K, T any] struct {
	in   engine.KeyedStream[K, T]
	spec spec[T]
}

// Of cuts ks into the windows of a.
func Of[K, T any](ks engine.KeyedStream[K, T], a Assigner) Stream[K, T] {
	return Stream[K, T]{in: ks, spec: spec[T]{assigner: a, trigger: a.DefaultTrigger()}}
}

// Trigger replaces the assigner's default trigger.
func (s Stream[K, T]) Trigger(t Trigger) Stream[K, T] { s.spec.trigger = t; return s }

// AllowedLateness keeps event-time windows, and fires them again, for d
// after the watermark passed their end; records later than that are
// dropped or, with SideOutputLateData, sent there.
func (s Stream[K, T]) AllowedLateness(d time.Duration) Stream[K, T] {
	s.spec.lateness = millis(d)
	return s
}

// SideOutputLateData sends records that come after their windows' allowed
// lateness to the side output tag (engine.SideOutput of the result).
func (s Stream[K, T]) SideOutputLateData(tag engine.OutputTag[T]) Stream[K, T] {
	s.spec.late = &tag
	return s
}

// Func is a window function: it gets the window's contents when the
// window fires and emits through ctx.
type Func[K, R, OUT any] func(ctx *Context[K, OUT], contents R) error

func build[K, T, R, OUT any](s Stream[K, T], c contents[T, R], fn Func[K, R, OUT], opts []engine.OperatorOption) engine.Stream[OUT] {
	sp := s.spec
	descs := append([]state.Descriptor{c.descriptor()}, sp.trigger.States()...)
	if sp.assigner.Merging() {
		descs = append(descs, mergingSetDesc)
	}
	all := append([]engine.OperatorOption{engine.Name("window")}, opts...)
	all = append(all, engine.WithState(descs...), engine.TimerNamespace(serializers.Window()), engine.Check(sp.validate))
	return engine.Process(s.in, func() engine.KeyedProcessFunction[K, T, OUT] {
		return &operator[K, T, R, OUT]{ws: &sp, contents: c.fresh(), fn: fn}
	}, all...)
}

func emit[K, T any](ctx *Context[K, T], v T) error { return ctx.Emit(v) }

// Reduce folds each window's records with reduce, keeping one value per
// window (a reducing "window-contents" serialized by ser), and emits it
// when the window fires.
func Reduce[K, T any](s Stream[K, T], reduce func(a, b T) T, ser serializers.Of[T], opts ...engine.OperatorOption) engine.Stream[T] {
	return build(s, newReduceContents(reduce, ser), emit[K, T], opts)
}

// ReduceWith is Reduce with a window function that gets the reduced value
// with the key and window, as Flink's reduce(reduceFunction,
// windowFunction).
func ReduceWith[K, T, OUT any](s Stream[K, T], reduce func(a, b T) T, ser serializers.Of[T], fn Func[K, T, OUT], opts ...engine.OperatorOption) engine.Stream[OUT] {
	return build(s, newReduceContents(reduce, ser), fn, opts)
}

// Aggregate folds each window's records into an accumulator (an
// aggregating "window-contents" serialized by acc) and emits f's result
// when the window fires.
func Aggregate[K, IN, ACC, OUT any](s Stream[K, IN], f AggregateFunction[IN, ACC, OUT], acc serializers.Of[ACC], opts ...engine.OperatorOption) engine.Stream[OUT] {
	return build(s, newAggregateContents(f, acc), emit[K, OUT], opts)
}

// AggregateWith is Aggregate with a window function that gets f's result
// with the key and window.
func AggregateWith[K, IN, ACC, V, OUT any](s Stream[K, IN], f AggregateFunction[IN, ACC, V], acc serializers.Of[ACC], fn Func[K, V, OUT], opts ...engine.OperatorOption) engine.Stream[OUT] {
	return build(s, newAggregateContents(f, acc), fn, opts)
}

// Process keeps every record of each window (a list "window-contents" of
// elements serialized by elem) and gives them, in arrival order, to fn
// when the window fires.
func Process[K, IN, OUT any](s Stream[K, IN], elem serializers.Of[IN], fn Func[K, []IN, OUT], opts ...engine.OperatorOption) engine.Stream[OUT] {
	return build(s, newListContents(elem), fn, opts)
}
