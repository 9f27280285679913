package statetest

import (
	"reflect"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
)

const (
	// maxP is the max parallelism of tests that do not vary it.
	maxP = 128
	// t0 is where test clocks start, in epoch milliseconds.
	t0 int64 = 1_700_000_000_000
	// d is the TTL of the TTL tests; dms is d in milliseconds.
	d         = 10 * time.Second
	dms int64 = 10_000
)

// fixture is one backend under test with the clock its handles use.
type fixture struct {
	t     testing.TB
	b     state.Backend
	clock *state.ManualClock
}

// newFixture returns a backend owning every key group, with a clock at t0.
func newFixture(t testing.TB, newBackend Factory) *fixture {
	return &fixture{t: t, b: newBackend(t, keygroup.All(maxP), maxP), clock: state.NewManualClock(t0)}
}

// key makes k (a string key) current.
func (f *fixture) key(k string) {
	f.t.Helper()
	must(f.t, f.b.SetCurrentKey(stringKey(k)))
}

// at sets the clock.
func (f *fixture) at(ms int64) { f.clock.Set(ms) }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// eq fails the test when got and want differ (reflect.DeepEqual: a nil and
// an empty slice differ, which the list and map contracts rely on).
func eq[T any](t testing.TB, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

func stringKey(s string) []byte { return []byte(s) } // the String serializer's bytes

func int64Key(v int64) []byte {
	b, _ := serializers.Int64().Append(nil, v) // cannot fail for an int64
	return b
}

// encode serializes v, failing the test on error.
func encode[T any](t testing.TB, s serializers.Of[T], v T) []byte {
	t.Helper()
	b, err := s.Append(nil, v)
	must(t, err)
	return b
}

func valueOf[T any](f *fixture, d *state.ValueDescriptor[T]) state.ValueState[T] {
	f.t.Helper()
	h, err := state.GetValue(f.b, f.clock, d)
	must(f.t, err)
	return h
}

func listOf[T any](f *fixture, d *state.ListDescriptor[T]) state.ListState[T] {
	f.t.Helper()
	h, err := state.GetList(f.b, f.clock, d)
	must(f.t, err)
	return h
}

func mapOf[K, V any](f *fixture, d *state.MapDescriptor[K, V]) state.MapState[K, V] {
	f.t.Helper()
	h, err := state.GetMap(f.b, f.clock, d)
	must(f.t, err)
	return h
}

func reducingOf[T any](f *fixture, d *state.ReducingDescriptor[T]) state.ReducingState[T] {
	f.t.Helper()
	h, err := state.GetReducing(f.b, f.clock, d)
	must(f.t, err)
	return h
}

func aggregatingOf[IN, ACC, OUT any](f *fixture, d *state.AggregatingDescriptor[IN, ACC, OUT]) state.AggregatingState[IN, OUT] {
	f.t.Helper()
	h, err := state.GetAggregating(f.b, f.clock, d)
	must(f.t, err)
	return h
}

func timersOf(f *fixture, name string, ns serializers.Serializer) state.Timers {
	f.t.Helper()
	h, err := f.b.Timers(name, ns)
	must(f.t, err)
	return h
}

// present describes a read: the value and whether there was one.
type present[T any] struct {
	V  T
	OK bool
}

func some[T any](v T) present[T] { return present[T]{v, true} }
func none[T any]() present[T]    { return present[T]{} }

func readValue[T any](t testing.TB, s state.ValueState[T]) present[T] {
	t.Helper()
	v, ok, err := s.Value()
	must(t, err)
	return present[T]{v, ok}
}

func readList[T any](t testing.TB, s state.ListState[T]) []T {
	t.Helper()
	vs, err := s.Get()
	must(t, err)
	return vs
}

func readMapKey[K, V any](t testing.TB, s state.MapState[K, V], k K) present[V] {
	t.Helper()
	v, ok, err := s.Get(k)
	must(t, err)
	return present[V]{v, ok}
}

// kv is one map entry as Range returns it.
type kv[K, V any] struct {
	K K
	V V
}

// readMap returns the entries in Range order; nil when there are none.
func readMap[K, V any](t testing.TB, s state.MapState[K, V]) []kv[K, V] {
	t.Helper()
	var out []kv[K, V]
	must(t, s.Range(func(k K, v V) bool {
		out = append(out, kv[K, V]{k, v})
		return true
	}))
	return out
}

func window(start int64) serializers.TimeWindow {
	return serializers.TimeWindow{Start: start, End: start + 1000}
}

// basicStates is a value, a list and a map declared with the same options.
type basicStates struct {
	v     state.ValueState[int64]
	l     state.ListState[string]
	m     state.MapState[string, int64]
	specs []*state.Spec
}

func newBasicStates(f *fixture, prefix string, opts ...state.Option) *basicStates {
	vd := state.NewValue(prefix+"value", serializers.Int64(), opts...)
	ld := state.NewList(prefix+"list", serializers.String(), opts...)
	md := state.NewMap(prefix+"map", serializers.String(), serializers.Int64(), opts...)
	return &basicStates{
		v: valueOf(f, vd), l: listOf(f, ld), m: mapOf(f, md),
		specs: []*state.Spec{vd.Spec(), ld.Spec(), md.Spec()},
	}
}

// write gives key k a value at t0, and two list elements and two map entries,
// one written at t0 and one at t0+10.
func (s *basicStates) write(f *fixture, k string) {
	f.key(k)
	f.at(t0)
	must(f.t, s.v.Update(1))
	must(f.t, s.l.Add("old"))
	must(f.t, s.m.Put("old", 1))
	f.at(t0 + 10)
	must(f.t, s.l.Add("new"))
	must(f.t, s.m.Put("new", 2))
}
