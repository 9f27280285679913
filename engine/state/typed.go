package state

import (
	"fmt"

	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// base is what every typed handle shares: the namespace it is scoped to and
// the TTL rules. Raw stores must copy ns if they keep it: it is reused.
type base struct {
	spec    *Spec
	clock   Clock
	ns      []byte
	cleaner IncrementalCleaner
}

func newBase(b Backend, clock Clock, spec *Spec, raw any) (base, error) {
	if err := spec.Validate(); err != nil {
		return base{}, err
	}
	if spec.TTL != nil && clock == nil {
		return base{}, fmt.Errorf("state: descriptor %q has TTL but no clock was given", spec.Name)
	}
	bs := base{spec: spec, clock: clock}
	if spec.TTL != nil && spec.TTL.CleanupIncremental > 0 {
		bs.cleaner, _ = raw.(IncrementalCleaner)
	}
	return bs, nil
}

func (b *base) SetNamespace(ns any) error {
	enc, err := b.spec.Namespace.AppendAny(b.ns[:0], ns)
	if err != nil {
		return fmt.Errorf("state %q: namespace: %w", b.spec.Name, err)
	}
	b.ns = enc
	return nil
}

// access runs the heap backend's incremental cleanup and returns the
// processing time for this access.
func (b *base) access() int64 {
	if b.spec.TTL == nil {
		return 0
	}
	now := b.clock.Now()
	if b.cleaner != nil {
		b.cleaner.CleanupIncrementally(b.spec.TTL.CleanupIncremental, func(t int64) bool {
			return b.spec.TTL.Expired(t, now)
		})
	}
	return now
}

func (b *base) expired(c Cell, now int64) bool {
	return b.spec.TTL != nil && b.spec.TTL.Expired(c.Timestamp, now)
}

func (b *base) returnExpired() bool {
	return b.spec.TTL.Visibility == ttl.ReturnExpiredIfNotCleanedUp
}

func (b *base) refreshOnRead() bool {
	return b.spec.TTL != nil && b.spec.TTL.Update == ttl.OnReadAndWrite
}

// readCell applies the TTL rules to a single stored cell: an expired cell is
// removed (cleanup on read) and returned only under
// ReturnExpiredIfNotCleanedUp; a live one gets a new timestamp under
// OnReadAndWrite.
func (b *base) readCell(c Cell, now int64, del func() error, put func(Cell) error) (Cell, bool, error) {
	if b.spec.TTL == nil {
		return c, true, nil
	}
	if b.expired(c, now) {
		if err := del(); err != nil {
			return Cell{}, false, err
		}
		return c, b.returnExpired(), nil
	}
	if b.refreshOnRead() {
		c.Timestamp = now
		if err := put(c); err != nil {
			return Cell{}, false, err
		}
	}
	return c, true, nil
}

// cast converts a stored value to T; nil is a value of an interface T (an
// Avro null). A failure means a backend handed back a value of the wrong
// type, which is a bug, so it is an error, not a panic.
func cast[T any](spec *Spec, v any) (T, error) {
	t, ok := serializers.As[T](v)
	if !ok {
		var zero T
		return zero, fmt.Errorf("state %q: stored value has type %T, want %T", spec.Name, v, zero)
	}
	return t, nil
}

type valueState[T any] struct {
	base
	raw RawValue
}

// GetValue returns the handle of a value state, registering it with b.
func GetValue[T any](b Backend, clock Clock, d *ValueDescriptor[T]) (ValueState[T], error) {
	raw, err := b.RegisterValue(&d.spec)
	if err != nil {
		return nil, err
	}
	bs, err := newBase(b, clock, &d.spec, raw)
	return &valueState[T]{base: bs, raw: raw}, err
}

func (s *valueState[T]) get() (Cell, bool, error) {
	now := s.access()
	c, ok, err := s.raw.Get(s.ns)
	if err != nil || !ok {
		return Cell{}, false, err
	}
	return s.readCell(c, now, func() error { return s.raw.Delete(s.ns) }, func(c Cell) error { return s.raw.Put(s.ns, c) })
}

func (s *valueState[T]) Value() (T, bool, error) {
	c, ok, err := s.get()
	if err != nil || !ok {
		var zero T
		return zero, false, err
	}
	v, err := cast[T](s.spec, c.Value)
	return v, err == nil, err
}

func (s *valueState[T]) Update(v T) error {
	return s.raw.Put(s.ns, Cell{Value: v, Timestamp: s.access()})
}

func (s *valueState[T]) Clear() error {
	s.access()
	return s.raw.Delete(s.ns)
}

type reducingState[T any] struct {
	valueState[T]
	reduce func(acc, v T) T
}

// GetReducing returns the handle of a reducing state, registering it with b.
func GetReducing[T any](b Backend, clock Clock, d *ReducingDescriptor[T]) (ReducingState[T], error) {
	raw, err := b.RegisterValue(&d.spec)
	if err != nil {
		return nil, err
	}
	bs, err := newBase(b, clock, &d.spec, raw)
	return &reducingState[T]{valueState: valueState[T]{base: bs, raw: raw}, reduce: d.reduce}, err
}

func (s *reducingState[T]) Get() (T, bool, error) { return s.Value() }

func (s *reducingState[T]) Add(v T) error {
	now := s.access()
	c, ok, err := s.raw.Get(s.ns)
	if err != nil {
		return err
	}
	if ok && !s.expired(c, now) {
		acc, err := cast[T](s.spec, c.Value)
		if err != nil {
			return err
		}
		v = s.reduce(acc, v)
	}
	return s.raw.Put(s.ns, Cell{Value: v, Timestamp: now})
}

type aggregatingState[IN, ACC, OUT any] struct {
	valueState[ACC]
	agg Aggregator[IN, ACC, OUT]
}

// GetAggregating returns the handle of an aggregating state, registering it
// with b.
func GetAggregating[IN, ACC, OUT any](b Backend, clock Clock, d *AggregatingDescriptor[IN, ACC, OUT]) (AggregatingState[IN, OUT], error) {
	raw, err := b.RegisterValue(&d.spec)
	if err != nil {
		return nil, err
	}
	bs, err := newBase(b, clock, &d.spec, raw)
	return &aggregatingState[IN, ACC, OUT]{valueState: valueState[ACC]{base: bs, raw: raw}, agg: d.agg}, err
}

func (s *aggregatingState[IN, ACC, OUT]) Get() (OUT, bool, error) {
	acc, ok, err := s.Value()
	if err != nil || !ok {
		var zero OUT
		return zero, false, err
	}
	return s.agg.Result(acc), true, nil
}

func (s *aggregatingState[IN, ACC, OUT]) Add(in IN) error {
	now := s.access()
	c, ok, err := s.raw.Get(s.ns)
	if err != nil {
		return err
	}
	var acc ACC
	if ok && !s.expired(c, now) {
		if acc, err = cast[ACC](s.spec, c.Value); err != nil {
			return err
		}
	} else {
		acc = s.agg.Create()
	}
	return s.raw.Put(s.ns, Cell{Value: s.agg.Add(in, acc), Timestamp: now})
}

type listState[T any] struct {
	base
	raw RawList
}

// GetList returns the handle of a list state, registering it with b.
func GetList[T any](b Backend, clock Clock, d *ListDescriptor[T]) (ListState[T], error) {
	raw, err := b.RegisterList(&d.spec)
	if err != nil {
		return nil, err
	}
	bs, err := newBase(b, clock, &d.spec, raw)
	return &listState[T]{base: bs, raw: raw}, err
}

func (s *listState[T]) Get() ([]T, error) {
	now := s.access()
	cells, err := s.raw.Get(s.ns)
	if err != nil || len(cells) == 0 {
		return nil, err
	}
	out := make([]T, 0, len(cells))
	live := cells[:0:0]
	expired := 0
	for _, c := range cells {
		if s.expired(c, now) {
			expired++
			if !s.returnExpired() {
				continue
			}
		} else if s.spec.TTL != nil {
			if s.refreshOnRead() {
				c.Timestamp = now
			}
			live = append(live, c)
		}
		v, err := cast[T](s.spec, c.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if expired > 0 || s.refreshOnRead() {
		if err := s.raw.Replace(s.ns, live); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func (s *listState[T]) Add(v T) error {
	return s.raw.Append(s.ns, Cell{Value: v, Timestamp: s.access()})
}

func (s *listState[T]) cells(vs []T, now int64) []Cell {
	cells := make([]Cell, len(vs))
	for i, v := range vs {
		cells[i] = Cell{Value: v, Timestamp: now}
	}
	return cells
}

func (s *listState[T]) AddAll(vs []T) error {
	if len(vs) == 0 {
		return nil
	}
	return s.raw.Append(s.ns, s.cells(vs, s.access())...)
}

func (s *listState[T]) Update(vs []T) error {
	return s.raw.Replace(s.ns, s.cells(vs, s.access()))
}

func (s *listState[T]) Clear() error {
	s.access()
	return s.raw.Replace(s.ns, nil)
}

type mapState[K, V any] struct {
	base
	raw RawMap
}

// GetMap returns the handle of a map state, registering it with b.
func GetMap[K, V any](b Backend, clock Clock, d *MapDescriptor[K, V]) (MapState[K, V], error) {
	raw, err := b.RegisterMap(&d.spec)
	if err != nil {
		return nil, err
	}
	bs, err := newBase(b, clock, &d.spec, raw)
	return &mapState[K, V]{base: bs, raw: raw}, err
}

func (s *mapState[K, V]) get(k K) (Cell, bool, error) {
	now := s.access()
	c, ok, err := s.raw.Get(s.ns, k)
	if err != nil || !ok {
		return Cell{}, false, err
	}
	return s.readCell(c, now, func() error { return s.raw.Delete(s.ns, k) }, func(c Cell) error { return s.raw.Put(s.ns, k, c) })
}

func (s *mapState[K, V]) Get(k K) (V, bool, error) {
	c, ok, err := s.get(k)
	if err != nil || !ok {
		var zero V
		return zero, false, err
	}
	v, err := cast[V](s.spec, c.Value)
	return v, err == nil, err
}

func (s *mapState[K, V]) Contains(k K) (bool, error) {
	_, ok, err := s.get(k)
	return ok, err
}

func (s *mapState[K, V]) Put(k K, v V) error {
	return s.raw.Put(s.ns, k, Cell{Value: v, Timestamp: s.access()})
}

func (s *mapState[K, V]) Remove(k K) error {
	s.access()
	return s.raw.Delete(s.ns, k)
}

func (s *mapState[K, V]) Clear() error {
	s.access()
	return s.raw.Clear(s.ns)
}

// Range applies the TTL rules while iterating; removals of expired entries
// and timestamp refreshes are applied once the iteration is over, because the
// raw store must not change under its own iterator.
func (s *mapState[K, V]) Range(fn func(k K, v V) bool) error {
	now := s.access()
	type pending struct {
		k K
		c Cell
	}
	var expired, touched []pending
	var castErr error
	err := s.raw.Range(s.ns, func(mk any, c Cell) bool {
		k, err := cast[K](s.spec, mk)
		if err != nil {
			castErr = err
			return false
		}
		if s.expired(c, now) {
			expired = append(expired, pending{k: k})
			if !s.returnExpired() {
				return true
			}
		} else if s.refreshOnRead() {
			touched = append(touched, pending{k: k, c: Cell{Value: c.Value, Timestamp: now}})
		}
		v, err := cast[V](s.spec, c.Value)
		if err != nil {
			castErr = err
			return false
		}
		return fn(k, v)
	})
	if err != nil {
		return err
	}
	if castErr != nil {
		return castErr
	}
	for _, p := range expired {
		if err := s.raw.Delete(s.ns, p.k); err != nil {
			return err
		}
	}
	for _, p := range touched {
		if err := s.raw.Put(s.ns, p.k, p.c); err != nil {
			return err
		}
	}
	return nil
}

func (s *mapState[K, V]) IsEmpty() (bool, error) {
	if s.spec.TTL == nil {
		s.access()
		return s.raw.IsEmpty(s.ns)
	}
	empty := true
	err := s.Range(func(K, V) bool { empty = false; return false })
	return empty, err
}
