package statetest

import (
	"fmt"
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// testTTL runs the TTL rules for every update type and visibility on a value,
// list elements and map entries. Each case writes at t0 and reads around the
// boundary: an entry written at t is live at t+d-1 and expired at t+d.
func testTTL(t *testing.T, newBackend Factory) {
	for _, upd := range []ttl.UpdateType{ttl.OnCreateAndWrite, ttl.OnReadAndWrite} {
		for _, vis := range []ttl.Visibility{ttl.NeverReturnExpired, ttl.ReturnExpiredIfNotCleanedUp} {
			cfg := ttl.Config{TTL: d, Update: upd, Visibility: vis}
			t.Run(fmt.Sprintf("%v/%v", upd, vis), func(t *testing.T) {
				t.Run("Value", func(t *testing.T) { ttlValue(t, newFixture(t, newBackend), cfg) })
				t.Run("List", func(t *testing.T) { ttlList(t, newFixture(t, newBackend), cfg) })
				t.Run("Map", func(t *testing.T) { ttlMap(t, newFixture(t, newBackend), cfg) })
			})
		}
	}
}

// expired checks a read at a time when an entry is expired: the first read
// returns it only under ReturnExpiredIfNotCleanedUp, and removes it, so the
// second read never does.
func expired[T any](t *testing.T, cfg ttl.Config, read func() T, visible, gone T) {
	t.Helper()
	want := gone
	if cfg.Visibility == ttl.ReturnExpiredIfNotCleanedUp {
		want = visible
	}
	eq(t, "first read of an expired entry", read(), want)
	eq(t, "read after cleanup", read(), gone)
}

func ttlValue(t *testing.T, f *fixture, cfg ttl.Config) {
	v := valueOf(f, state.NewValue("v", serializers.Int64(), state.WithTTL(cfg)))
	read := func() present[int64] { return readValue(t, v) }
	f.key("k")
	f.at(t0)
	must(t, v.Update(1))
	f.at(t0 + dms - 1)
	eq(t, "one millisecond before expiry", read(), some[int64](1))
	f.at(t0 + dms)
	if cfg.Update == ttl.OnCreateAndWrite {
		expired(t, cfg, read, some[int64](1), none[int64]())
	} else {
		eq(t, "after a read refreshed it", read(), some[int64](1)) // last modified t0+d
		f.at(t0 + 2*dms - 1)
		eq(t, "one millisecond before the refreshed expiry", read(), some[int64](1)) // last modified t0+2d-1
		f.at(t0 + 3*dms - 1)
		expired(t, cfg, read, some[int64](1), none[int64]())
	}
}

func ttlList(t *testing.T, f *fixture, cfg ttl.Config) {
	l := listOf(f, state.NewList("l", serializers.String(), state.WithTTL(cfg)))
	read := func() []string { return readList(t, l) }
	f.key("k")
	f.at(t0)
	must(t, l.Add("a"))
	f.at(t0 + 10)
	must(t, l.Add("b"))
	f.at(t0 + dms - 1)
	eq(t, "one millisecond before the first expiry", read(), []string{"a", "b"})
	if cfg.Update == ttl.OnCreateAndWrite {
		f.at(t0 + dms) // a expires, b does not
		expired(t, cfg, read, []string{"a", "b"}, []string{"b"})
		f.at(t0 + 10 + dms)
		expired(t, cfg, read, []string{"b"}, nil)
	} else {
		f.at(t0 + dms)
		eq(t, "after a read refreshed both", read(), []string{"a", "b"}) // both last modified t0+d
		f.at(t0 + 2*dms - 1)
		eq(t, "one millisecond before the refreshed expiry", read(), []string{"a", "b"})
		f.at(t0 + 3*dms - 1)
		expired(t, cfg, read, []string{"a", "b"}, nil)
	}
	must(t, l.Add("c"))
	eq(t, "a list restarts after its elements expired", read(), []string{"c"})
}

func ttlMap(t *testing.T, f *fixture, cfg ttl.Config) {
	m := mapOf(f, state.NewMap("m", serializers.String(), serializers.Int64(), state.WithTTL(cfg)))
	getX := func() present[int64] { return readMapKey(t, m, "x") }
	all := func() []kv[string, int64] { return readMap(t, m) }
	type entries = []kv[string, int64]
	f.key("k")
	f.at(t0)
	must(t, m.Put("x", 1))
	f.at(t0 + 10)
	must(t, m.Put("y", 2))
	f.at(t0 + dms - 1)
	eq(t, "x one millisecond before expiry", getX(), some[int64](1)) // refreshes x only
	if cfg.Update == ttl.OnCreateAndWrite {
		f.at(t0 + dms) // x expires, y does not
		expired(t, cfg, getX, some[int64](1), none[int64]())
		ok, err := m.Contains("y")
		must(t, err)
		eq(t, "contains the live entry", ok, true)
		eq(t, "entries after x expired", all(), entries{{"y", 2}})
		f.at(t0 + 10 + dms)
		expired(t, cfg, all, entries{{"y", 2}}, nil)
	} else {
		f.at(t0 + dms) // x was refreshed at t0+d-1; y was written at t0+10
		eq(t, "x after a read refreshed it", getX(), some[int64](1))
		eq(t, "entries, refreshed by the range", all(), entries{{"x", 1}, {"y", 2}})
		f.at(t0 + 2*dms) // both last modified t0+d
		expired(t, cfg, all, entries{{"x", 1}, {"y", 2}}, nil)
	}
	empty, err := m.IsEmpty()
	must(t, err)
	eq(t, "empty once every entry expired", empty, true)
}

// testTTLWriteRefreshes checks that every write restarts an entry's clock,
// whatever the update type.
func testTTLWriteRefreshes(t *testing.T, newBackend Factory) {
	f := newFixture(t, newBackend)
	cfg := ttl.New(d)
	v := valueOf(f, state.NewValue("v", serializers.Int64(), state.WithTTL(cfg)))
	m := mapOf(f, state.NewMap("m", serializers.String(), serializers.Int64(), state.WithTTL(cfg)))
	sum := reducingOf(f, state.NewReducing("sum", serializers.Int64(), func(a, b int64) int64 { return a + b }, state.WithTTL(cfg)))
	f.key("k")
	f.at(t0)
	must(t, v.Update(1))
	must(t, m.Put("x", 1))
	must(t, sum.Add(1))
	f.at(t0 + dms - 1)
	must(t, v.Update(2))
	must(t, m.Put("x", 2))
	must(t, sum.Add(1))
	f.at(t0 + dms)
	eq(t, "value rewritten before expiry", readValue(t, v), some[int64](2))
	eq(t, "map entry rewritten before expiry", readMapKey(t, m, "x"), some[int64](2))
	got, ok, err := sum.Get()
	must(t, err)
	eq(t, "sum added to before expiry", present[int64]{got, ok}, some[int64](2))
	f.at(t0 + 2*dms - 1)
	must(t, sum.Add(5)) // the accumulated 2 expired at this time: the sum restarts
	got, ok, err = sum.Get()
	must(t, err)
	eq(t, "sum after its accumulator expired", present[int64]{got, ok}, some[int64](5))
}

// testTTLCleanupOnRead checks that a read of an expired entry removes it
// from the backend, as a snapshot without full-snapshot cleanup shows.
func testTTLCleanupOnRead(t *testing.T, newBackend Factory) {
	f := newFixture(t, newBackend)
	s := newBasicStates(f, "", state.WithTTL(ttl.New(d)))
	s.write(f, "k")
	now := t0 + dms // "old" entries expired, "new" ones live
	f.at(now)
	eq(t, "entries before reading", counts(t, snapshot(f, s.specs, now), 3), []int{1, 2, 2})
	eq(t, "expired value", readValue(t, s.v), none[int64]())
	eq(t, "list", readList(t, s.l), []string{"new"})
	eq(t, "expired map entry", readMapKey(t, s.m, "old"), none[int64]())
	eq(t, "entries after reading", counts(t, snapshot(f, s.specs, now), 3), []int{0, 1, 1})
}

// testTTLFullSnapshotCleanup checks that a snapshot leaves out the entries
// expired at its time when the state asks for it, and only then, without
// removing them from the backend.
func testTTLFullSnapshotCleanup(t *testing.T, newBackend Factory) {
	f := newFixture(t, newBackend)
	keep := ttl.Config{TTL: d, Update: ttl.OnCreateAndWrite, Visibility: ttl.ReturnExpiredIfNotCleanedUp}
	drop := keep
	drop.CleanupFullSnapshot = true
	kept, dropped := newBasicStates(f, "kept-", state.WithTTL(keep)), newBasicStates(f, "dropped-", state.WithTTL(drop))
	for _, k := range []string{"a", "b", "c"} {
		kept.write(f, k)
		dropped.write(f, k)
	}
	specs := append(kept.specs, dropped.specs...)

	r := snapshot(f, specs, t0+dms-1)
	eq(t, "entries one millisecond before expiry", counts(t, r, 6), []int{3, 6, 6, 3, 6, 6})
	r = snapshot(f, specs, t0+dms) // "old" entries expire exactly now
	eq(t, "entries at the expiry of the old ones", counts(t, r, 6), []int{3, 6, 6, 0, 3, 3})
	for ref := 3; ref < 6; ref++ {
		for _, e := range sptest.EntriesOf(t, r, nth(r, 0, ref)) {
			eq(t, "last-modified time of a kept entry", lastModified(t, e.Value), t0+10)
		}
	}

	// The snapshot left the entries in the backend: an expired entry is
	// still returned under ReturnExpiredIfNotCleanedUp.
	f.at(t0 + dms)
	f.key("a")
	eq(t, "expired value after the snapshot", readValue(t, dropped.v), some[int64](1))
	eq(t, "list after the snapshot", readList(t, dropped.l), []string{"old", "new"})
	eq(t, "expired map entry after the snapshot", readMapKey(t, dropped.m, "old"), some[int64](1))
}
