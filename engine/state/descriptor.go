package state

import (
	"fmt"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// Spec is the untyped view of a state descriptor: what the backends, the
// runtime and the job manifest need.
type Spec struct {
	Name string
	Kind savepoint.Kind
	// Namespace serializes namespaces; Void unless set with WithNamespace.
	Namespace serializers.Serializer
	// MapKey serializes map keys (map states only).
	MapKey serializers.Serializer
	// Value serializes values, list elements, map values or accumulators.
	Value serializers.Serializer
	// TTL is nil when the state has no time-to-live.
	TTL *ttl.Config
}

// Model returns the descriptor as the savepoint model records it.
func (s *Spec) Model() savepoint.KeyedState {
	ks := savepoint.KeyedState{
		Name:      s.Name,
		Kind:      s.Kind,
		Namespace: s.Namespace.Snapshot(),
		Value:     s.Value.Snapshot(),
	}
	if s.MapKey != nil {
		ks.MapKey = s.MapKey.Snapshot()
	}
	if s.TTL != nil {
		c := *s.TTL
		ks.TTL = &c
	}
	return ks
}

// Validate reports a descriptor that cannot be registered.
func (s *Spec) Validate() error {
	switch {
	case s.Name == "":
		return fmt.Errorf("state: descriptor without a name")
	case !s.Kind.Valid():
		return fmt.Errorf("state: descriptor %q has unknown kind %d", s.Name, s.Kind)
	case s.Value == nil || s.Namespace == nil:
		return fmt.Errorf("state: descriptor %q lacks a serializer", s.Name)
	case (s.Kind == savepoint.Map) != (s.MapKey != nil):
		return fmt.Errorf("state: descriptor %q: a map-key serializer is required for map state and only there", s.Name)
	}
	if s.TTL != nil {
		if err := s.TTL.Validate(); err != nil {
			return fmt.Errorf("state: descriptor %q: %w", s.Name, err)
		}
	}
	return nil
}

// Descriptor is implemented by every typed descriptor.
type Descriptor interface {
	Spec() *Spec
}

// Option configures a descriptor.
type Option func(*Spec)

// WithTTL gives the state a time-to-live.
func WithTTL(c ttl.Config) Option {
	return func(s *Spec) { s.TTL = &c }
}

// WithNamespace sets the namespace serializer (for example
// serializers.Window() for windowed state).
func WithNamespace(ns serializers.Serializer) Option {
	return func(s *Spec) { s.Namespace = ns }
}

func newSpec(name string, kind savepoint.Kind, mapKey, value serializers.Serializer, opts []Option) Spec {
	s := Spec{Name: name, Kind: kind, Namespace: serializers.Void(), MapKey: mapKey, Value: value}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// ValueDescriptor declares a ValueState.
type ValueDescriptor[T any] struct {
	spec Spec
	ser  serializers.Of[T]
}

// NewValue declares a value state.
func NewValue[T any](name string, ser serializers.Of[T], opts ...Option) *ValueDescriptor[T] {
	return &ValueDescriptor[T]{spec: newSpec(name, savepoint.Value, nil, ser, opts), ser: ser}
}

func (d *ValueDescriptor[T]) Spec() *Spec { return &d.spec }

// ListDescriptor declares a ListState.
type ListDescriptor[T any] struct {
	spec Spec
	ser  serializers.Of[T]
}

// NewList declares a list state of elements serialized by elem.
func NewList[T any](name string, elem serializers.Of[T], opts ...Option) *ListDescriptor[T] {
	return &ListDescriptor[T]{spec: newSpec(name, savepoint.List, nil, elem, opts), ser: elem}
}

func (d *ListDescriptor[T]) Spec() *Spec { return &d.spec }

// MapDescriptor declares a MapState.
type MapDescriptor[K, V any] struct {
	spec Spec
	key  serializers.Of[K]
	val  serializers.Of[V]
}

// NewMap declares a map state. Map keys are identified by their serialized
// bytes, and iterated in that byte order on every backend.
func NewMap[K, V any](name string, key serializers.Of[K], val serializers.Of[V], opts ...Option) *MapDescriptor[K, V] {
	return &MapDescriptor[K, V]{spec: newSpec(name, savepoint.Map, key, val, opts), key: key, val: val}
}

func (d *MapDescriptor[K, V]) Spec() *Spec { return &d.spec }

// ReducingDescriptor declares a ReducingState.
type ReducingDescriptor[T any] struct {
	spec   Spec
	ser    serializers.Of[T]
	reduce func(acc, v T) T
}

// NewReducing declares a reducing state that folds added values with reduce.
func NewReducing[T any](name string, ser serializers.Of[T], reduce func(acc, v T) T, opts ...Option) *ReducingDescriptor[T] {
	return &ReducingDescriptor[T]{spec: newSpec(name, savepoint.Reducing, nil, ser, opts), ser: ser, reduce: reduce}
}

func (d *ReducingDescriptor[T]) Spec() *Spec { return &d.spec }

// Aggregator folds inputs into an accumulator and derives a result from it.
type Aggregator[IN, ACC, OUT any] interface {
	Create() ACC
	Add(in IN, acc ACC) ACC
	Result(acc ACC) OUT
}

// AggregatingDescriptor declares an AggregatingState; the accumulator is
// what is stored.
type AggregatingDescriptor[IN, ACC, OUT any] struct {
	spec Spec
	acc  serializers.Of[ACC]
	agg  Aggregator[IN, ACC, OUT]
}

// NewAggregating declares an aggregating state whose accumulator is
// serialized by acc.
func NewAggregating[IN, ACC, OUT any](name string, acc serializers.Of[ACC], agg Aggregator[IN, ACC, OUT], opts ...Option) *AggregatingDescriptor[IN, ACC, OUT] {
	return &AggregatingDescriptor[IN, ACC, OUT]{spec: newSpec(name, savepoint.Aggregating, nil, acc, opts), acc: acc, agg: agg}
}

func (d *AggregatingDescriptor[IN, ACC, OUT]) Spec() *Spec { return &d.spec }
