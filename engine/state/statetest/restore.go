package statetest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stateproc/stateproc/compat"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/ttl"
)

// restoreErr restores operator 0 of r into b and returns the error.
func restoreErr(b state.Backend, r *snapshotfmt.Reader, opts state.RestoreOptions) error {
	return b.Restore(context.Background(), r, 0, opts)
}

// testNonRestoredState checks that a state or timer service of the
// savepoint that the job no longer declares fails the restore, unless
// dropping it is allowed.
func testNonRestoredState(t *testing.T, newBackend Factory) {
	j := newJob()
	legacy := state.NewValue("legacy", serializers.Int64())
	f := newFixture(t, newBackend)
	s := j.open(f)
	old := valueOf(f, legacy)
	oldTimers := timersOf(f, "old-timers", serializers.Void())
	for i := range 50 {
		s.write(i, userKey(i), false)
		must(t, old.Update(int64(i)))
		must(t, oldTimers.Register(nil, 1))
	}
	now := t0 + 1000
	op := NewOperator("job", 1, maxP, serializers.String(), append(j.specs(), legacy.Spec()),
		append(j.timers(), TimerService{Name: "old-timers", Namespace: serializers.Void()}))
	r := WriteSavepoint(t, tempDir(t, "savepoint"), NewMetadata(op, now), now, f.b)

	withoutState := newFixture(t, newBackend)
	j.open(withoutState)
	timersOf(withoutState, "old-timers", serializers.Void())
	if err := restoreErr(withoutState.b, r, state.RestoreOptions{Now: now}); !errors.Is(err, state.ErrNotRestored) {
		t.Errorf("restore without declaring a state: got %v, want state.ErrNotRestored", err)
	}

	withoutTimers := newFixture(t, newBackend)
	j.open(withoutTimers)
	valueOf(withoutTimers, legacy)
	if err := restoreErr(withoutTimers.b, r, state.RestoreOptions{Now: now}); !errors.Is(err, state.ErrNotRestored) {
		t.Errorf("restore without declaring a timer service: got %v, want state.ErrNotRestored", err)
	}

	allowed := newFixture(t, newBackend)
	as := j.open(allowed)
	Restore(t, allowed.b, r, state.RestoreOptions{Now: now, AllowNonRestoredState: true})
	allowed.at(now)
	for i := range 50 {
		as.check(i, userKey(i))
	}
}

// testRestoreIncompatible checks that a state declared with another value
// serializer or another kind than the savepoint's is refused.
func testRestoreIncompatible(t *testing.T, newBackend Factory) {
	saved := state.NewValue("v", serializers.Int64())
	f := newFixture(t, newBackend)
	v := valueOf(f, saved)
	f.key("k")
	must(t, v.Update(1))
	r := snapshot(f, []*state.Spec{saved.Spec()}, t0)

	otherValue := newFixture(t, newBackend)
	valueOf(otherValue, state.NewValue("v", serializers.String()))
	if err := restoreErr(otherValue.b, r, state.RestoreOptions{Now: t0}); !errors.Is(err, compat.ErrIncompatible) {
		t.Errorf("restore of an int64 value as a string: got %v, want compat.ErrIncompatible", err)
	}
	otherKind := newFixture(t, newBackend)
	listOf(otherKind, state.NewList("v", serializers.Int64()))
	if err := restoreErr(otherKind.b, r, state.RestoreOptions{Now: t0}); !errors.Is(err, compat.ErrIncompatible) {
		t.Errorf("restore of a value state as a list state: got %v, want compat.ErrIncompatible", err)
	}
}

// testRestoreMaxParallelism checks that a savepoint is not restored under
// another max parallelism: its key groups would not be the backend's.
func testRestoreMaxParallelism(t *testing.T, newBackend Factory) {
	desc := state.NewValue("v", serializers.Int64())
	f := newFixture(t, newBackend)
	v := valueOf(f, desc)
	f.key("k")
	must(t, v.Update(1))
	r := snapshot(f, []*state.Spec{desc.Spec()}, t0)

	other := &fixture{t: t, b: newBackend(t, keygroup.All(2*maxP), 2*maxP), clock: state.NewManualClock(t0)}
	valueOf(other, desc)
	if err := restoreErr(other.b, r, state.RestoreOptions{Now: t0}); err == nil {
		t.Errorf("a savepoint of max parallelism %d restored into a backend of max parallelism %d", maxP, 2*maxP)
	}
}

// testRestoreTTLEnabled restores state saved without TTL into states
// declared with one: every value, list element and map entry gets the
// restore time as its last-modified time.
func testRestoreTTLEnabled(t *testing.T, newBackend Factory) {
	f := newFixture(t, newBackend)
	s := newBasicStates(f, "")
	s.write(f, "k")
	r := snapshot(f, s.specs, t0+10)
	var before [][]byte
	for ref := range 3 {
		for _, e := range sptest.EntriesOf(t, r, nth(r, 0, ref)) {
			before = append(before, e.Value)
		}
	}

	restoredAt := t0 + 5000
	g := newFixture(t, newBackend)
	gs := newBasicStates(g, "", state.WithTTL(ttl.New(d)))
	Restore(t, g.b, r, state.RestoreOptions{Now: restoredAt})
	again := snapshot(g, gs.specs, restoredAt)
	var after [][]byte
	for ref := range 3 {
		for _, e := range sptest.EntriesOf(t, again, nth(again, 0, ref)) {
			eq(t, "last-modified time given at restore", lastModified(t, e.Value), restoredAt)
			after = append(after, e.Value[8:])
		}
	}
	eq(t, "values behind the new TTL prefix", after, before)

	g.key("k")
	g.at(restoredAt + dms - 1)
	eq(t, "value one millisecond before expiry", readValue(t, gs.v), some[int64](1))
	eq(t, "list one millisecond before expiry", readList(t, gs.l), []string{"old", "new"})
	g.at(restoredAt + dms)
	eq(t, "value at expiry", readValue(t, gs.v), none[int64]())
	eq(t, "list at expiry", readList(t, gs.l), []string(nil))
	eq(t, "map at expiry", readMap(t, gs.m), []kv[string, int64](nil))
}

// testRestoreTTLDisabled restores state saved with TTL into states declared
// without: the timestamps are stripped and nothing expires any more.
func testRestoreTTLDisabled(t *testing.T, newBackend Factory) {
	f := newFixture(t, newBackend)
	s := newBasicStates(f, "", state.WithTTL(ttl.New(d)))
	s.write(f, "k")
	r := snapshot(f, s.specs, t0+10)
	var before [][]byte
	for ref := range 3 {
		for _, e := range sptest.EntriesOf(t, r, nth(r, 0, ref)) {
			before = append(before, e.Value[8:])
		}
	}

	g := newFixture(t, newBackend)
	gs := newBasicStates(g, "")
	Restore(t, g.b, r, state.RestoreOptions{Now: t0 + 20})
	again := snapshot(g, gs.specs, t0+20)
	var after [][]byte
	for ref := range 3 {
		for _, e := range sptest.EntriesOf(t, again, nth(again, 0, ref)) {
			after = append(after, e.Value)
		}
	}
	eq(t, "values without the TTL prefix", after, before)
	if !bytes.Equal(after[0], encode(t, serializers.Int64(), 1)) {
		t.Fatalf("restored value is %x, want the bare int64 1", after[0])
	}

	g.key("k")
	g.at(t0 + 100*dms)
	eq(t, "value long after its old expiry", readValue(t, gs.v), some[int64](1))
	eq(t, "list long after its old expiry", readList(t, gs.l), []string{"old", "new"})
	eq(t, "map long after its old expiry", readMap(t, gs.m), []kv[string, int64]{{"new", 2}, {"old", 1}})
}
