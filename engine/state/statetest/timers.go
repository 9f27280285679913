package statetest

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/serializers"
)

func earliest(t testing.TB, tm state.Timers) present[int64] {
	t.Helper()
	ts, ok, err := tm.Earliest()
	must(t, err)
	return present[int64]{ts, ok}
}

func pop(t testing.TB, tm state.Timers, upTo int64) present[state.Timer] {
	t.Helper()
	timer, ok, err := tm.Pop(upTo)
	must(t, err)
	return present[state.Timer]{timer, ok}
}

// eqTimer compares timers by their bytes, so that an empty key or
// namespace may come back as nil.
func eqTimer(t testing.TB, what string, got, want present[state.Timer]) {
	t.Helper()
	if got.OK != want.OK || (got.OK && compareTimers(got.V, want.V) != 0) {
		t.Fatalf("%s: got %+v, want %+v", what, got, want)
	}
}

func compareTimers(a, b state.Timer) int {
	return cmp.Or(cmp.Compare(a.Timestamp, b.Timestamp), bytes.Compare(a.Key, b.Key), bytes.Compare(a.Namespace, b.Namespace))
}

func testTimers(t *testing.T, newBackend Factory) {
	f := newFixture(t, newBackend)
	tm := timersOf(f, "timers", serializers.Window())
	w1, w2 := encode(t, serializers.Window(), window(0)), encode(t, serializers.Window(), window(1000))
	timer := func(ts int64, key string, ns []byte) present[state.Timer] {
		return some(state.Timer{Timestamp: ts, Key: []byte(key), Namespace: ns})
	}

	eq(t, "earliest without timers", earliest(t, tm), none[int64]())
	eqTimer(t, "pop without timers", pop(t, tm, math.MaxInt64), none[state.Timer]())

	f.key("a")
	must(t, tm.Register(w1, 100))
	must(t, tm.Register(w1, 100)) // the same timer: kept once
	must(t, tm.Register(w2, 100))
	must(t, tm.Register(w1, 50))
	must(t, tm.Register(w2, 300))
	f.key("b")
	must(t, tm.Register(w1, 100))
	must(t, tm.Register(w1, 70))
	must(t, tm.Delete(w1, 70))
	must(t, tm.Delete(w1, 999)) // absent: a no-op
	must(t, tm.Delete(w2, 300)) // a's timer, not b's: stays
	f.key("a")
	must(t, tm.Delete(w2, 100))

	eq(t, "earliest", earliest(t, tm), some[int64](50))
	eqTimer(t, "pop before the earliest time", pop(t, tm, 49), none[state.Timer]())
	eq(t, "earliest after a pop that found nothing due", earliest(t, tm), some[int64](50))
	eqTimer(t, "pop at 50", pop(t, tm, 50), timer(50, "a", w1))
	eqTimer(t, "pop up to 99", pop(t, tm, 99), none[state.Timer]())
	eqTimer(t, "first pop at 100", pop(t, tm, 100), timer(100, "a", w1))
	eqTimer(t, "second pop at 100", pop(t, tm, 100), timer(100, "b", w1))
	eqTimer(t, "third pop at 100", pop(t, tm, 100), none[state.Timer]())
	eq(t, "earliest of the rest", earliest(t, tm), some[int64](300))
	eqTimer(t, "pop of the last", pop(t, tm, math.MaxInt64), timer(300, "a", w2))
	eqTimer(t, "pop when all fired", pop(t, tm, math.MaxInt64), none[state.Timer]())
	eq(t, "earliest when all fired", earliest(t, tm), none[int64]())

	must(t, tm.Register(w1, 50)) // a timer that fired can be registered again
	eqTimer(t, "pop of a timer registered again", pop(t, tm, 50), timer(50, "a", w1))
}

// testTimerOrder registers timers over many keys (some the prefix of
// another, some with zero bytes), namespaces and times (negative ones too)
// and checks that they fire in (time, key bytes, namespace bytes) order.
func testTimerOrder(t *testing.T, newBackend Factory) {
	f := newFixture(t, newBackend)
	tm := timersOf(f, "timers", serializers.Window())
	keys := []string{"", "a", "a\x00", "a\x00b", "a\x01", "ab", "b", "\xff"}
	for i := range 40 {
		keys = append(keys, fmt.Sprintf("key-%d", i))
	}
	namespaces := [][]byte{
		encode(t, serializers.Window(), window(0)),
		encode(t, serializers.Window(), window(1000)),
		encode(t, serializers.Window(), window(-1000)),
	}
	times := []int64{-100, -1, 0, 5, 1 << 40, math.MinInt64, math.MaxInt64}

	var want []state.Timer
	for i, k := range keys {
		f.key(k)
		for j, ns := range namespaces {
			ts := times[(i+j)%len(times)]
			must(t, tm.Register(ns, ts))
			if (i+j)%3 == 0 {
				must(t, tm.Register(ns, ts))
			}
			want = append(want, state.Timer{Timestamp: ts, Key: []byte(k), Namespace: ns})
		}
	}
	slices.SortFunc(want, compareTimers)
	for i, w := range want {
		eq(t, fmt.Sprintf("earliest before pop %d", i), earliest(t, tm), some(w.Timestamp))
		eqTimer(t, fmt.Sprintf("pop %d", i), pop(t, tm, w.Timestamp), some(w))
	}
	eqTimer(t, "pop after all fired", pop(t, tm, math.MaxInt64), none[state.Timer]())

	// A timer earlier than every pending one fires first.
	f.key("late")
	must(t, tm.Register(namespaces[0], 500))
	must(t, tm.Register(namespaces[0], 600))
	must(t, tm.Register(namespaces[0], 400))
	must(t, tm.Delete(namespaces[0], 500))
	eq(t, "earliest after registering out of order", earliest(t, tm), some[int64](400))
	eqTimer(t, "first pop", pop(t, tm, math.MaxInt64), some(state.Timer{Timestamp: 400, Key: []byte("late"), Namespace: namespaces[0]}))
	eqTimer(t, "second pop skips the deleted timer", pop(t, tm, math.MaxInt64), some(state.Timer{Timestamp: 600, Key: []byte("late"), Namespace: namespaces[0]}))
}
