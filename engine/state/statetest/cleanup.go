package statetest

import (
	"fmt"
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// cleaners registers a value, a list and a map state with incremental
// cleanup and returns their stores, or skips the test when the backend's
// stores do not clean up incrementally.
func cleaners(t *testing.T, b state.Backend) (state.RawValue, state.RawList, state.RawMap) {
	cfg := ttl.Config{TTL: d, Update: ttl.OnCreateAndWrite, Visibility: ttl.NeverReturnExpired, CleanupIncremental: 5}
	v, err := b.RegisterValue(state.NewValue("v", serializers.Int64(), state.WithTTL(cfg)).Spec())
	must(t, err)
	l, err := b.RegisterList(state.NewList("l", serializers.Int64(), state.WithTTL(cfg)).Spec())
	must(t, err)
	m, err := b.RegisterMap(state.NewMap("m", serializers.String(), serializers.Int64(), state.WithTTL(cfg)).Spec())
	must(t, err)
	_, vok := v.(state.IncrementalCleaner)
	_, lok := l.(state.IncrementalCleaner)
	_, mok := m.(state.IncrementalCleaner)
	if !vok && !lok && !mok {
		t.Skip("the backend's stores do not implement state.IncrementalCleaner")
	}
	if !vok || !lok || !mok {
		t.Fatalf("incremental cleanup on some stores only: value %t, list %t, map %t", vok, lok, mok)
	}
	return v, l, m
}

// cleanupRun calls CleanupIncrementally with budget n and checks the
// amortized bound: over any number of calls, no more than n per call plus
// one whole collection (the largest, at most maxColl elements) is examined.
type cleanupRun struct {
	t        *testing.T
	c        state.IncrementalCleaner
	n        int
	maxColl  int
	calls    int
	examined int
}

func (r *cleanupRun) call(expired func(int64) bool) int {
	r.t.Helper()
	before := r.examined
	r.c.CleanupIncrementally(r.n, func(ts int64) bool {
		r.examined++
		return expired(ts)
	})
	r.calls++
	if limit := r.calls*r.n + r.maxColl; r.examined > limit {
		r.t.Fatalf("%d calls with budget %d examined %d entries, more than %d", r.calls, r.n, r.examined, limit)
	}
	return r.examined - before
}

// testIncrementalCleanupRaw drives the stores' CleanupIncrementally
// directly: each call examines a bounded number of entries, resumes where
// the previous one stopped, and removes exactly what is expired, element by
// element in lists and maps.
func testIncrementalCleanupRaw(t *testing.T, newBackend Factory) {
	b := newBackend(t, keygroup.All(maxP), maxP)
	rv, rl, rm := cleaners(t, b)
	key := func(i int) {
		t.Helper()
		must(t, b.SetCurrentKey(stringKey(fmt.Sprintf("key-%d", i))))
	}

	// 50 values spread over the key groups, value i last modified at i.
	const values, budget = 50, 7
	for i := range values {
		key(i)
		must(t, rv.Put(nil, state.Cell{Value: int64(i), Timestamp: int64(i)}))
	}
	vc := &cleanupRun{t: t, c: rv.(state.IncrementalCleaner), n: budget}
	seen := make(map[int64]bool)
	for range (values + budget - 1) / budget {
		if got := vc.call(func(ts int64) bool { seen[ts] = true; return false }); got == 0 {
			t.Fatal("a call examined nothing although the state has entries")
		}
	}
	eq(t, "values examined by consecutive calls that resume", len(seen), values)
	for range 3 * values / budget {
		vc.call(func(ts int64) bool { return ts < 20 })
	}
	for i := range values {
		key(i)
		_, ok, err := rv.Get(nil)
		must(t, err)
		eq(t, fmt.Sprintf("value %d present", i), ok, i >= 20)
	}

	// Lists and maps of 6 elements, element j of key i last modified at
	// 10i+j; elements whose time is a multiple of 3 expire.
	const colls, elems = 10, 6
	expired := func(ts int64) bool { return ts%3 == 0 }
	for i := range colls {
		key(i)
		for j := range elems {
			ts := int64(10*i + j)
			must(t, rl.Append(nil, state.Cell{Value: ts, Timestamp: ts}))
			must(t, rm.Put(nil, fmt.Sprintf("e%d", j), state.Cell{Value: ts, Timestamp: ts}))
		}
	}
	lc := &cleanupRun{t: t, c: rl.(state.IncrementalCleaner), n: 5, maxColl: elems}
	mc := &cleanupRun{t: t, c: rm.(state.IncrementalCleaner), n: 5, maxColl: elems}
	for range 3 * colls * elems / 5 {
		lc.call(expired)
		mc.call(expired)
	}
	for i := range colls {
		key(i)
		var wantList []state.Cell
		var wantMap []string
		for j := range elems {
			if ts := int64(10*i + j); !expired(ts) {
				wantList = append(wantList, state.Cell{Value: ts, Timestamp: ts})
				wantMap = append(wantMap, fmt.Sprintf("e%d", j))
			}
		}
		cells, err := rl.Get(nil)
		must(t, err)
		eq(t, fmt.Sprintf("list %d after cleanup", i), cells, wantList)
		var keys []string
		must(t, rm.Range(nil, func(k any, _ state.Cell) bool { keys = append(keys, k.(string)); return true }))
		eq(t, fmt.Sprintf("map %d after cleanup", i), keys, wantMap)
	}
}

// testIncrementalCleanup checks cleanup through the handles: accesses to one
// key remove the expired entries of keys that are never read again.
func testIncrementalCleanup(t *testing.T, newBackend Factory) {
	f := newFixture(t, newBackend)
	cfg := ttl.Config{TTL: d, Update: ttl.OnCreateAndWrite, Visibility: ttl.ReturnExpiredIfNotCleanedUp, CleanupIncremental: 3}
	probe := state.NewValue("probe", serializers.Int64(), state.WithTTL(cfg)).Spec()
	raw, err := f.b.RegisterValue(probe)
	must(t, err)
	if _, ok := raw.(state.IncrementalCleaner); !ok {
		t.Skip("the backend's stores do not implement state.IncrementalCleaner")
	}
	s := newBasicStates(f, "", state.WithTTL(cfg))
	specs := append(s.specs, probe)
	for i := range 20 {
		s.write(f, fmt.Sprintf("k%d", i))
	}
	now := t0 + dms // "old" entries expired, "new" ones live
	f.at(now)
	eq(t, "entries before cleanup", counts(t, snapshot(f, specs, now), 3), []int{20, 40, 40})
	f.key("reader")
	for range 40 {
		readValue(t, s.v)
		readList(t, s.l)
		readMapKey(t, s.m, "x")
	}
	eq(t, "entries after accesses to another key", counts(t, snapshot(f, specs, now), 3), []int{0, 20, 20})
}

// testSweeper checks the background sweeper of backends that have one: an
// expired entry that is never read again goes, a live one stays, and each
// step keeps to the budget.
func testSweeper(t *testing.T, newBackend Factory) {
	f := newFixture(t, newBackend)
	sw, ok := f.b.(state.Sweeper)
	if !ok {
		t.Skip("the backend does not implement state.Sweeper")
	}
	const budget = 4
	cfg := ttl.Config{TTL: d, Update: ttl.OnCreateAndWrite, Visibility: ttl.ReturnExpiredIfNotCleanedUp, SweepBudget: budget}
	vd := state.NewValue("v", serializers.Int64(), state.WithTTL(cfg))
	md := state.NewMap("m", serializers.String(), serializers.Int64(), state.WithTTL(cfg))
	v, m := valueOf(f, vd), mapOf(f, md)
	for i := range 20 {
		f.key(fmt.Sprintf("expired-%d", i))
		f.at(t0)
		must(t, v.Update(int64(i)))
		if i < 5 {
			must(t, m.Put("old", 1))
			f.at(t0 + 10)
			must(t, m.Put("new", 2))
		}
	}
	f.at(t0 + dms/2)
	for i := range 5 {
		f.key(fmt.Sprintf("live-%d", i))
		must(t, v.Update(int64(i)))
	}

	now := t0 + dms
	const want = 20 + 5 // the values of expired-*, and their "old" map entries
	deleted := 0
	for step := 0; step < 100 && deleted < want; step++ {
		n, err := sw.Sweep(now)
		must(t, err)
		if n > 2*budget {
			t.Fatalf("a sweep step deleted %d entries, more than the budgets allow (%d)", n, 2*budget)
		}
		deleted += n
	}
	eq(t, "entries deleted by the sweeper", deleted, want)
	for range 20 {
		n, err := sw.Sweep(now)
		must(t, err)
		eq(t, "entries deleted once nothing is expired", n, 0)
	}
	eq(t, "entries after sweeping", counts(t, snapshot(f, []*state.Spec{vd.Spec(), md.Spec()}, now), 2), []int{5, 5})
	f.at(now)
	f.key("live-3")
	eq(t, "live value", readValue(t, v), some[int64](3))
	f.key("expired-3")
	eq(t, "swept value", readValue(t, v), none[int64]())
	eq(t, "live map entry", readMap(t, m), []kv[string, int64]{{"new", 2}})
}
