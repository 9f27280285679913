package statetest

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
)

func testValue(t *testing.T, newBackend Factory) {
	f := newFixture(t, newBackend)
	v := valueOf(f, state.NewValue("v", serializers.Int64()))

	f.key("alice")
	eq(t, "new value", readValue(t, v), none[int64]())
	must(t, v.Update(5))
	eq(t, "after update", readValue(t, v), some[int64](5))
	must(t, v.Update(0)) // the zero value is a value, not an absence
	eq(t, "after update to 0", readValue(t, v), some[int64](0))
	must(t, v.Update(7))

	f.key("bob")
	eq(t, "other key", readValue(t, v), none[int64]())
	must(t, v.Update(-3))

	f.key("alice")
	eq(t, "first key again", readValue(t, v), some[int64](7))
	must(t, v.Clear())
	eq(t, "after clear", readValue(t, v), none[int64]())
	must(t, v.Clear())
	eq(t, "after second clear", readValue(t, v), none[int64]())

	f.key("bob")
	eq(t, "other key after clear", readValue(t, v), some[int64](-3))
}

func testList(t *testing.T, newBackend Factory) {
	f := newFixture(t, newBackend)
	l := listOf(f, state.NewList("l", serializers.String()))

	f.key("a")
	eq(t, "new list", readList(t, l), []string(nil))
	must(t, l.Add("x"))
	must(t, l.Add("y"))
	must(t, l.AddAll([]string{"z", "x"}))
	eq(t, "after add and addAll", readList(t, l), []string{"x", "y", "z", "x"})
	must(t, l.AddAll(nil))
	eq(t, "after empty addAll", readList(t, l), []string{"x", "y", "z", "x"})

	f.key("b")
	eq(t, "other key", readList(t, l), []string(nil))
	must(t, l.Add("b1"))

	f.key("a")
	must(t, l.Update([]string{"p", "", "q"}))
	eq(t, "after update", readList(t, l), []string{"p", "", "q"})
	must(t, l.Update(nil))
	eq(t, "after empty update", readList(t, l), []string(nil))
	must(t, l.Add("r"))
	eq(t, "add after empty update", readList(t, l), []string{"r"})
	must(t, l.Clear())
	eq(t, "after clear", readList(t, l), []string(nil))

	f.key("b")
	eq(t, "other key after clear", readList(t, l), []string{"b1"})
}

func testMap(t *testing.T, newBackend Factory) {
	f := newFixture(t, newBackend)
	m := mapOf(f, state.NewMap("m", serializers.String(), serializers.Int64()))

	f.key("a")
	empty, err := m.IsEmpty()
	must(t, err)
	eq(t, "new map is empty", empty, true)
	eq(t, "get on new map", readMapKey(t, m, "k"), none[int64]())
	must(t, m.Put("b", 2))
	must(t, m.Put("a", 1))
	must(t, m.Put("ab", 3))
	must(t, m.Put("", 0))
	eq(t, "get", readMapKey(t, m, "ab"), some[int64](3))
	eq(t, "get empty map key", readMapKey(t, m, ""), some[int64](0))
	ok, err := m.Contains("a")
	must(t, err)
	eq(t, "contains a", ok, true)
	ok, err = m.Contains("c")
	must(t, err)
	eq(t, "contains c", ok, false)
	eq(t, "range", readMap(t, m), []kv[string, int64]{{"", 0}, {"a", 1}, {"ab", 3}, {"b", 2}})

	must(t, m.Put("a", 10))
	eq(t, "overwritten", readMapKey(t, m, "a"), some[int64](10))
	eq(t, "range after overwrite", readMap(t, m), []kv[string, int64]{{"", 0}, {"a", 10}, {"ab", 3}, {"b", 2}})

	must(t, m.Remove("ab"))
	must(t, m.Remove("absent"))
	eq(t, "after remove", readMap(t, m), []kv[string, int64]{{"", 0}, {"a", 10}, {"b", 2}})

	var first []string
	must(t, m.Range(func(k string, _ int64) bool { first = append(first, k); return false }))
	eq(t, "range stops when fn returns false", first, []string{""})

	f.key("b")
	empty, err = m.IsEmpty()
	must(t, err)
	eq(t, "other key is empty", empty, true)
	must(t, m.Put("only", 1))

	f.key("a")
	empty, err = m.IsEmpty()
	must(t, err)
	eq(t, "is empty", empty, false)
	must(t, m.Clear())
	empty, err = m.IsEmpty()
	must(t, err)
	eq(t, "empty after clear", empty, true)
	eq(t, "range after clear", readMap(t, m), []kv[string, int64](nil))
	must(t, m.Put("x", 1))
	must(t, m.Remove("x"))
	empty, err = m.IsEmpty()
	must(t, err)
	eq(t, "empty after removing the last entry", empty, true)

	f.key("b")
	eq(t, "other key after clear", readMap(t, m), []kv[string, int64]{{"only", 1}})
}

// testMapByteOrder checks that Range follows the serialized map keys' bytes,
// not the Go order of the keys: int64 keys serialize big-endian in two's
// complement, so negative keys come after positive ones.
func testMapByteOrder(t *testing.T, newBackend Factory) {
	f := newFixture(t, newBackend)
	m := mapOf(f, state.NewMap("m", serializers.Int64(), serializers.String()))
	keys := []int64{256, -1, 0, math.MaxInt64, 1, math.MinInt64, -256, 255}
	f.key("k")
	for _, k := range slices.Backward(keys) {
		must(t, m.Put(k, "v"))
	}
	want := slices.Clone(keys)
	slices.SortFunc(want, func(a, b int64) int { return bytes.Compare(int64Key(a), int64Key(b)) })
	var got []int64
	for _, e := range readMap(t, m) {
		got = append(got, e.K)
	}
	eq(t, "range order", got, want)
}

func testReducing(t *testing.T, newBackend Factory) {
	f := newFixture(t, newBackend)
	sum := reducingOf(f, state.NewReducing("sum", serializers.Int64(), func(acc, v int64) int64 { return acc + v }))

	f.key("a")
	v, ok, err := sum.Get()
	must(t, err)
	eq(t, "new sum", present[int64]{v, ok}, none[int64]())
	for _, x := range []int64{3, 4, -2} {
		must(t, sum.Add(x))
	}
	f.key("b")
	must(t, sum.Add(100))
	f.key("a")
	v, ok, err = sum.Get()
	must(t, err)
	eq(t, "sum", present[int64]{v, ok}, some[int64](5))
	must(t, sum.Clear())
	v, ok, err = sum.Get()
	must(t, err)
	eq(t, "after clear", present[int64]{v, ok}, none[int64]())
	must(t, sum.Add(1))
	v, ok, err = sum.Get()
	must(t, err)
	eq(t, "restarted after clear", present[int64]{v, ok}, some[int64](1))
	f.key("b")
	v, ok, err = sum.Get()
	must(t, err)
	eq(t, "other key", present[int64]{v, ok}, some[int64](100))
}

// average keeps [sum, count] and returns their quotient.
type average struct{}

func (average) Create() []int64 { return []int64{0, 0} }
func (average) Add(in int64, acc []int64) []int64 {
	return []int64{acc[0] + in, acc[1] + 1}
}
func (average) Result(acc []int64) float64 { return float64(acc[0]) / float64(acc[1]) }

func newAverage(name string, opts ...state.Option) *state.AggregatingDescriptor[int64, []int64, float64] {
	return state.NewAggregating[int64, []int64, float64](name, serializers.List(serializers.Int64()), average{}, opts...)
}

func testAggregating(t *testing.T, newBackend Factory) {
	f := newFixture(t, newBackend)
	avg := aggregatingOf(f, newAverage("avg"))

	f.key("a")
	v, ok, err := avg.Get()
	must(t, err)
	eq(t, "new average", present[float64]{v, ok}, none[float64]())
	for _, x := range []int64{1, 2, 6} {
		must(t, avg.Add(x))
	}
	f.key("b")
	must(t, avg.Add(10))
	f.key("a")
	v, ok, err = avg.Get()
	must(t, err)
	eq(t, "average", present[float64]{v, ok}, some(3.0))
	must(t, avg.Clear())
	v, ok, err = avg.Get()
	must(t, err)
	eq(t, "after clear", present[float64]{v, ok}, none[float64]())
	f.key("b")
	v, ok, err = avg.Get()
	must(t, err)
	eq(t, "other key", present[float64]{v, ok}, some(10.0))
}

// testIsolation writes the same keys and namespaces into several states and
// checks that no write leaks into another key, namespace or state. Handles
// reuse their namespace buffer, so a store that kept it without copying
// would fail here.
func testIsolation(t *testing.T, newBackend Factory) {
	f := newFixture(t, newBackend)
	x := valueOf(f, state.NewValue("x", serializers.Int64()))
	y := valueOf(f, state.NewValue("y", serializers.Int64()))
	w := valueOf(f, state.NewValue("w", serializers.Int64(), state.WithNamespace(serializers.Window())))
	l := listOf(f, state.NewList("l", serializers.String(), state.WithNamespace(serializers.Window())))
	m := mapOf(f, state.NewMap("m", serializers.String(), serializers.Int64(), state.WithNamespace(serializers.Window())))
	w1, w2 := window(0), window(1000)

	f.key("k1")
	must(t, x.Update(1))
	must(t, y.Update(2))
	for i, ns := range []serializers.TimeWindow{w1, w2} {
		must(t, w.SetNamespace(ns))
		must(t, l.SetNamespace(ns))
		must(t, m.SetNamespace(ns))
		must(t, w.Update(int64(10*(i+1))))
		must(t, l.Add(string(rune('a'+i))))
		must(t, m.Put("k", int64(i)))
	}
	f.key("k2")
	must(t, x.Update(3))
	must(t, w.SetNamespace(w1))
	must(t, w.Update(30))

	f.key("k1")
	eq(t, "k1 x", readValue(t, x), some[int64](1))
	eq(t, "k1 y", readValue(t, y), some[int64](2))
	must(t, w.SetNamespace(w1))
	eq(t, "k1 w1", readValue(t, w), some[int64](10))
	must(t, w.SetNamespace(w2))
	eq(t, "k1 w2", readValue(t, w), some[int64](20))
	must(t, w.SetNamespace(window(2000)))
	eq(t, "k1 unused window", readValue(t, w), none[int64]())
	must(t, l.SetNamespace(w1))
	eq(t, "k1 list w1", readList(t, l), []string{"a"})
	must(t, m.SetNamespace(w2))
	eq(t, "k1 map w2", readMap(t, m), []kv[string, int64]{{"k", 1}})

	f.key("k2")
	eq(t, "k2 x", readValue(t, x), some[int64](3))
	eq(t, "k2 y", readValue(t, y), none[int64]())
	must(t, w.SetNamespace(w1))
	eq(t, "k2 w1", readValue(t, w), some[int64](30))
	must(t, w.SetNamespace(w2))
	eq(t, "k2 w2", readValue(t, w), none[int64]())
	must(t, l.SetNamespace(w1))
	eq(t, "k2 list w1", readList(t, l), []string(nil))

	f.key("k1")
	must(t, w.SetNamespace(w1))
	must(t, w.Clear())
	must(t, m.SetNamespace(w1))
	must(t, m.Clear())
	must(t, w.SetNamespace(w2))
	eq(t, "k1 w2 after clearing w1", readValue(t, w), some[int64](20))
	must(t, m.SetNamespace(w2))
	eq(t, "k1 map w2 after clearing w1", readMap(t, m), []kv[string, int64]{{"k", 1}})
	f.key("k2")
	must(t, w.SetNamespace(w1))
	eq(t, "k2 w1 after clearing k1 w1", readValue(t, w), some[int64](30))
}

// testCurrentKey checks the key bookkeeping and that the backend copies the
// key: callers reuse their buffers.
func testCurrentKey(t *testing.T, newBackend Factory) {
	b := newBackend(t, keygroup.All(maxP), maxP)
	eq(t, "max parallelism", b.MaxParallelism(), maxP)
	eq(t, "key groups", b.KeyGroups(), keygroup.All(maxP))
	f := &fixture{t: t, b: b, clock: state.NewManualClock(t0)}
	v := valueOf(f, state.NewValue("v", serializers.Int64()))

	buf := []byte("hello")
	must(t, b.SetCurrentKey(buf))
	eq(t, "current key group", b.CurrentKeyGroup(), 71) // the test vector of keygroup
	must(t, v.Update(1))
	copy(buf, "jello")
	eq(t, "current key after the caller reused its buffer", string(b.CurrentKey()), "hello")
	eq(t, "value after the caller reused its buffer", readValue(t, v), some[int64](1))
	must(t, b.SetCurrentKey(buf))
	eq(t, "value of the new key", readValue(t, v), none[int64]())
	eq(t, "current key group", b.CurrentKeyGroup(), keygroup.Of([]byte("jello"), maxP))
	f.key("hello")
	eq(t, "value of the first key", readValue(t, v), some[int64](1))
}

func testKeyOutsideRange(t *testing.T, newBackend Factory) {
	owned := keygroup.ForSubtask(0, 2, maxP)
	b := newBackend(t, owned, maxP)
	var inside, outside []byte
	for i := 0; inside == nil || outside == nil; i++ {
		k := []byte{byte('a' + i%26), byte('a' + i/26)}
		if owned.Contains(keygroup.Of(k, maxP)) {
			inside = k
		} else {
			outside = k
		}
	}
	must(t, b.SetCurrentKey(inside))
	if err := b.SetCurrentKey(outside); err == nil {
		t.Fatalf("SetCurrentKey(%q) in key group %d succeeded on a backend owning %v", outside, keygroup.Of(outside, maxP), owned)
	}
	eq(t, "current key after a refused key", string(b.CurrentKey()), string(inside))
	eq(t, "current key group after a refused key", b.CurrentKeyGroup(), keygroup.Of(inside, maxP))
}

func testRegisterTwice(t *testing.T, newBackend Factory) {
	b := newBackend(t, keygroup.All(maxP), maxP)
	value := state.NewValue("s", serializers.Int64()).Spec()
	list := state.NewList("s", serializers.Int64()).Spec()
	mp := state.NewMap("s", serializers.String(), serializers.Int64()).Spec()
	_, err := b.RegisterValue(value)
	must(t, err)
	if _, err := b.RegisterValue(value); err == nil {
		t.Error("registering a value state twice succeeded")
	}
	if _, err := b.RegisterList(list); err == nil {
		t.Error("registering a list state under the name of a value state succeeded")
	}
	if _, err := b.RegisterMap(mp); err == nil {
		t.Error("registering a map state under the name of a value state succeeded")
	}
	_, err = b.Timers("t", serializers.Void())
	must(t, err)
	if _, err := b.Timers("t", serializers.Void()); err == nil {
		t.Error("declaring a timer service twice succeeded")
	}
}
