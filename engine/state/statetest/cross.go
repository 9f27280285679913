package statetest

import (
	"fmt"
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/ttl"
)

// crossJob adds to the job the states whose contents depend on TTL and
// cleanup, and an Avro record, so that the cross-backend tests compare
// expiry, cleanup on read, refresh on read and full-snapshot cleanup as well.
// It has no incremental cleanup or sweeper: those are background work that
// differs between backends by design.
type crossJob struct {
	*job
	seen    *state.MapDescriptor[int64, bool]
	recent  *state.ListDescriptor[int64]
	last    *state.ValueDescriptor[string]
	profile *state.ValueDescriptor[any]
}

const profileSchema = `{"type": "record", "name": "Profile", "fields": [
	{"name": "name", "type": "string"},
	{"name": "visits", "type": "long"},
	{"name": "tags", "type": {"type": "map", "values": "long"}}]}`

func newCrossJob(t testing.TB) *crossJob {
	profile, err := serializers.AvroGeneric(profileSchema)
	must(t, err)
	readRefresh := ttl.Config{TTL: d, Update: ttl.OnReadAndWrite, Visibility: ttl.NeverReturnExpired, CleanupFullSnapshot: true}
	dropExpired := ttl.Config{TTL: d, Update: ttl.OnCreateAndWrite, Visibility: ttl.NeverReturnExpired, CleanupFullSnapshot: true}
	returnExpired := ttl.Config{TTL: d, Update: ttl.OnCreateAndWrite, Visibility: ttl.ReturnExpiredIfNotCleanedUp}
	return &crossJob{
		job:     newJob(),
		seen:    state.NewMap("seen", serializers.Int64(), serializers.Bool(), state.WithTTL(readRefresh)),
		recent:  state.NewList("recent", serializers.Int64(), state.WithTTL(dropExpired)),
		last:    state.NewValue("last", serializers.String(), state.WithTTL(returnExpired)),
		profile: state.NewValue("profile", profile),
	}
}

func (c *crossJob) operator(parallelism int) savepoint.Operator {
	specs := append(c.job.specs(), c.seen.Spec(), c.recent.Spec(), c.last.Spec(), c.profile.Spec())
	return NewOperator("cross", parallelism, maxP, serializers.String(), specs, c.job.timers())
}

type crossState struct {
	*jobState
	seen    state.MapState[int64, bool]
	recent  state.ListState[int64]
	last    state.ValueState[string]
	profile state.ValueState[any]
}

func (c *crossJob) subtasks(t testing.TB, newBackend Factory, p int, clock *state.ManualClock) []*crossState {
	out := make([]*crossState, p)
	for i := range out {
		f := &fixture{t: t, b: newBackend(t, keygroup.ForSubtask(i, p, maxP), maxP), clock: clock}
		out[i] = &crossState{
			jobState: c.job.open(f),
			seen:     mapOf(f, c.seen),
			recent:   listOf(f, c.recent),
			last:     valueOf(f, c.last),
			profile:  valueOf(f, c.profile),
		}
	}
	return out
}

func crossBackends(states []*crossState) []state.Backend {
	out := make([]state.Backend, len(states))
	for i, s := range states {
		out[i] = s.f.b
	}
	return out
}

// profileOf is key i's Avro record, as hamba's generic values.
func profileOf(i int) any {
	return map[string]any{
		"name":   fmt.Sprintf("user %d", i),
		"visits": int64(i),
		"tags":   map[string]any{"z": int64(i), "a": int64(1), fmt.Sprintf("t%d", i%3): int64(2)},
	}
}

const crossKeys = 600

// crossNow is when the cross-backend savepoints are taken: entries last
// modified at t0+50 or earlier are expired then.
const crossNow = t0 + dms + 50

// crossRun writes every key at writeTime(i), then at t0+d (when the keys with
// i%100 == 0 are expired) reads, clears and appends, each key according to
// i%4. The clock is left at crossNow.
func crossRun(t testing.TB, subtasks []*crossState, clock *state.ManualClock) {
	on := func(key []byte) *crossState {
		s := subtasks[owner(key, len(subtasks), maxP)]
		must(t, s.f.b.SetCurrentKey(key))
		return s
	}
	for i := range crossKeys {
		key := userKey(i)
		s := on(key)
		s.write(i, key, false) // sets the clock to writeTime(i)
		must(t, s.seen.Put(int64(i%7), true))
		must(t, s.seen.Put(int64(-(i%11)), false))
		must(t, s.recent.Add(int64(i)))
		must(t, s.last.Update(fmt.Sprintf("last-%d", i)))
		must(t, s.profile.Update(profileOf(i)))
	}
	clock.Set(t0 + dms)
	for i := range crossKeys {
		key := userKey(i)
		s := on(key)
		switch i % 4 {
		case 0:
			readMap(t, s.seen) // refreshes the live entries, removes the expired
		case 1:
			s.clear(i, key)
		case 2:
			readValue(t, s.last)
			must(t, s.recent.Add(int64(-i)))
		}
	}
	clock.Set(crossNow)
}

// testSameBytes runs the same operations on backends a and b, with the same
// clock, and compares their savepoints byte for byte.
func testSameBytes(t *testing.T, a, b Factory) {
	c := newCrossJob(t)
	meta := NewMetadata(c.operator(2), crossNow)
	var dirs []string
	for _, newBackend := range []Factory{a, b} {
		clock := state.NewManualClock(t0)
		subtasks := c.subtasks(t, newBackend, 2, clock)
		crossRun(t, subtasks, clock)
		dir := tempDir(t, "savepoint")
		WriteSavepoint(t, dir, meta, crossNow, crossBackends(subtasks)...)
		dirs = append(dirs, dir)
	}
	sptest.SameFiles(t, dirs[0], dirs[1])
}

// testRestoreAcross moves a savepoint from a to b and back, at the same and
// at other parallelisms, and checks that the entries survive unchanged and
// that b reads them as a wrote them.
func testRestoreAcross(t *testing.T, a, b Factory) {
	c := newCrossJob(t)
	clock := state.NewManualClock(t0)
	src := c.subtasks(t, a, 2, clock)
	crossRun(t, src, clock)
	first := tempDir(t, "from-a")
	r := WriteSavepoint(t, first, NewMetadata(c.operator(2), crossNow), crossNow, crossBackends(src)...)
	want := Dump(t, r, 0)

	restore := func(newBackend Factory, from *snapshotfmt.Reader, p int) []*crossState {
		t.Helper()
		subtasks := c.subtasks(t, newBackend, p, clock)
		for _, s := range subtasks {
			Restore(t, s.f.b, from, state.RestoreOptions{Now: crossNow})
		}
		return subtasks
	}

	inB := restore(b, r, 2)
	second := tempDir(t, "from-b")
	rb := WriteSavepoint(t, second, NewMetadata(c.operator(2), crossNow), crossNow, crossBackends(inB)...)
	sptest.SameFiles(t, first, second)
	for i := 3; i < crossKeys; i += 4 { // keys that phase two left alone
		key := userKey(i)
		s := inB[owner(key, 2, maxP)]
		s.check(i, key)
		eq(t, fmt.Sprintf("key %d profile in b", i), readValue(t, s.profile), some(profileOf(i)))
		var recent []int64 // full-snapshot cleanup dropped what expired before crossNow
		if writeTime(i)+dms > crossNow {
			recent = []int64{int64(i)}
		}
		eq(t, fmt.Sprintf("key %d recent in b", i), readList(t, s.recent), recent)
	}

	backInA := restore(a, rb, 1)
	SameDump(t, Dump(t, WriteSavepoint(t, tempDir(t, "back-in-a"), NewMetadata(c.operator(1), crossNow), crossNow, crossBackends(backInA)...), 0), want)
	inB3 := restore(b, r, 3)
	SameDump(t, Dump(t, WriteSavepoint(t, tempDir(t, "b-at-3"), NewMetadata(c.operator(3), crossNow), crossNow, crossBackends(inB3)...), 0), want)
}
