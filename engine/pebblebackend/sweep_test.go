package pebblebackend

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/engine/state/statetest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// stateKeys returns the database keys of state id, in database order.
func stateKeys(t *testing.T, b *Backend, id uint16) [][]byte {
	var out [][]byte
	for _, k := range dbKeys(t, b, nil) {
		if binary.BigEndian.Uint16(k[2:]) == id {
			out = append(out, k)
		}
	}
	return out
}

func sweepTTL(budget int) state.Option {
	c := ttl.New(100 * time.Millisecond)
	c.SweepBudget = budget
	return state.WithTTL(c)
}

// TestSweepBudgetAndCursor follows the sweeper's cursor over 25 entries
// with a budget of 10, among other states' keys in the same key groups: each
// call examines 10 entries after the previous call's last one, wraps around
// at the end, and never examines an entry twice in one call.
func TestSweepBudgetAndCursor(t *testing.T) {
	b := newTestBackend(t, 16, keygroup.All(16))
	clock := state.NewManualClock(0)
	plain, err := state.GetValue(b, clock, state.NewValue("plain", serializers.Int64()))
	if err != nil {
		t.Fatal(err)
	}
	swept, err := state.GetValue(b, clock, state.NewValue("swept", serializers.Int64(), sweepTTL(10)))
	if err != nil {
		t.Fatal(err)
	}
	noBudget, err := state.GetValue(b, clock, state.NewValue("no-budget", serializers.Int64(), sweepTTL(0)))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 25; i++ {
		setKey(t, b, fmt.Sprintf("key-%d", i))
		for _, s := range []state.ValueState[int64]{plain, swept, noBudget} {
			if err := s.Update(int64(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	const sweptID, noBudgetID = 1, 2
	// As after a restore: the sweeper cannot tell that nothing has expired
	// and walks the entries.
	unknownTimes(b)
	all := stateKeys(t, b, sweptID)
	if len(all) != 25 {
		t.Fatalf("%d keys for the swept state, want 25", len(all))
	}

	sweep := func(wantDeleted int, wantLeft [][]byte) {
		t.Helper()
		now := clock.Now()
		n, err := b.Sweep(now)
		if err != nil {
			t.Fatal(err)
		}
		if n != wantDeleted {
			t.Fatalf("Sweep(%d) deleted %d, want %d", now, n, wantDeleted)
		}
		left := stateKeys(t, b, sweptID)
		if len(left) != len(wantLeft) {
			t.Fatalf("Sweep(%d) left %d entries, want %d", now, len(left), len(wantLeft))
		}
		for i := range left {
			if !bytes.Equal(left[i], wantLeft[i]) {
				t.Fatalf("Sweep(%d): entry %d is %x, want %x", now, i, left[i], wantLeft[i])
			}
		}
	}
	// Nothing has expired: two calls move the cursor over entries 0-9 and
	// 10-19.
	clock.Set(50)
	sweep(0, all)
	sweep(0, all)
	// Everything has expired: the budget caps the deletions at 10, entries
	// 20-24 and, after wrapping around, 0-4.
	clock.Set(200)
	sweep(10, all[5:20])
	// The next call resumes after entry 4.
	sweep(10, all[15:20])
	// Entries 15-19, then the wrap finds only entries already examined.
	sweep(5, nil)
	sweep(0, nil)

	if got := len(stateKeys(t, b, noBudgetID)); got != 25 {
		t.Errorf("state without a sweep budget has %d entries left, want 25", got)
	}
	if got := len(stateKeys(t, b, 0)); got != 25 {
		t.Errorf("state without TTL has %d entries left, want 25", got)
	}
}

// TestSweepCollections checks that list elements and map entries expire one
// by one: the sweeper deletes the expired ones and keeps the rest.
func TestSweepCollections(t *testing.T) {
	b := newTestBackend(t, 16, keygroup.All(16))
	clock := state.NewManualClock(0)
	l, err := state.GetList(b, clock, state.NewList("l", serializers.Int64(), sweepTTL(1000)))
	if err != nil {
		t.Fatal(err)
	}
	m, err := state.GetMap(b, clock, state.NewMap("m", serializers.String(), serializers.Int64(), sweepTTL(1000)))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		setKey(t, b, fmt.Sprintf("key-%d", i))
		for j := 0; j < 4; j++ {
			// Elements and entries 0 and 1 at time 0, 2 and 3 at time 60.
			clock.Set(int64(j/2) * 60)
			if err := l.Add(int64(j)); err != nil {
				t.Fatal(err)
			}
			if err := m.Put(fmt.Sprint(j), int64(j)); err != nil {
				t.Fatal(err)
			}
		}
	}
	clock.Set(120)
	n, err := b.Sweep(clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if n != 40 {
		t.Fatalf("Sweep deleted %d entries, want 40", n)
	}
	for i := 0; i < 10; i++ {
		setKey(t, b, fmt.Sprintf("key-%d", i))
		got, err := l.Get()
		if err != nil || len(got) != 2 || got[0] != 2 || got[1] != 3 {
			t.Fatalf("list of key-%d is %v, %v; want [2 3]", i, got, err)
		}
		var keys []string
		if err := m.Range(func(k string, _ int64) bool { keys = append(keys, k); return true }); err != nil {
			t.Fatal(err)
		}
		if len(keys) != 2 || keys[0] != "2" || keys[1] != "3" {
			t.Fatalf("map of key-%d has keys %v, want [2 3]", i, keys)
		}
	}
}

// TestSweepKeepsOtherStatesCached checks that a sweep takes out of the write
// cache only the writes of the state it sweeps, which it must see below the
// cache, and deletes those expired: another state's writes stay cached.
func TestSweepKeepsOtherStatesCached(t *testing.T) {
	b := newTestBackend(t, 16, keygroup.All(16))
	clock := state.NewManualClock(0)
	plain, err := state.GetValue(b, clock, state.NewValue("plain", serializers.Int64()))
	if err != nil {
		t.Fatal(err)
	}
	swept, err := state.GetValue(b, clock, state.NewValue("swept", serializers.Int64(), sweepTTL(10)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		setKey(t, b, fmt.Sprintf("key-%d", i))
		if err := plain.Update(int64(i)); err != nil {
			t.Fatal(err)
		}
		if err := swept.Update(int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	clock.Set(200)
	if n, err := b.Sweep(clock.Now()); err != nil || n != 5 {
		t.Fatalf("Sweep = %d, %v; want 5 deleted", n, err)
	}
	cachedOf := func(id uint16) (n int) {
		for _, gen := range []map[string]cached{b.cache.young, b.cache.old} {
			for k, e := range gen {
				if binary.BigEndian.Uint16([]byte(k[2:4])) == id && e.present {
					n++
				}
			}
		}
		return n
	}
	if n := cachedOf(0); n != 5 {
		t.Errorf("%d values of the unswept state cached after the sweep, want 5", n)
	}
	if n := cachedOf(1); n != 0 {
		t.Errorf("%d values of the swept state cached after the sweep, want 0", n)
	}
	if got := len(stateKeys(t, b, 1)); got != 0 {
		t.Errorf("swept state has %d entries left, want 0", got)
	}
	if got := len(stateKeys(t, b, 0)); got != 5 {
		t.Errorf("unswept state has %d entries left, want 5", got)
	}
}

// TestSweepMidRoundReadsCache follows a round of the sweeper over a state
// whose entries are rewritten and deleted in the write cache between its
// calls: it judges each key it meets below the cache by the cached version,
// skips keys deleted there, and keeps to its budget.
func TestSweepMidRoundReadsCache(t *testing.T) {
	b := newTestBackend(t, 16, keygroup.All(16))
	clock := state.NewManualClock(0)
	v, err := state.GetValue(b, clock, state.NewValue("swept", serializers.Int64(), sweepTTL(2)))
	if err != nil {
		t.Fatal(err)
	}
	// The keys in database order, so that the test knows the sweep's.
	byOrder := make(map[string]string)
	for i := range 5 {
		k := fmt.Sprintf("key-%d", i)
		setKey(t, b, k)
		if err := v.Update(int64(i)); err != nil {
			t.Fatal(err)
		}
		byOrder[string(stateKeyOf(t, b))] = k
	}
	unknownTimes(b)
	var order []string
	for _, k := range stateKeys(t, b, 0) {
		order = append(order, byOrder[string(k)])
	}
	sweep := func(now int64, want int) {
		t.Helper()
		n, err := b.Sweep(now)
		if err != nil || n != want {
			t.Fatalf("Sweep(%d) = %d, %v; want %d deleted", now, n, err, want)
		}
	}
	sweep(50, 0) // order[0], order[1]
	clock.Set(150)
	setKey(t, b, order[2])
	if err := v.Update(20); err != nil {
		t.Fatal(err)
	}
	setKey(t, b, order[4])
	if err := v.Clear(); err != nil {
		t.Fatal(err)
	}
	sweep(200, 1) // order[2] is fresh in the cache, order[3] expired
	sweep(200, 2) // order[4] deleted in the cache, then order[0], order[1]
	clock.Set(200)
	for i, k := range order {
		setKey(t, b, k)
		got, ok, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		if want := i == 2; ok != want || (ok && got != 20) {
			t.Errorf("%s after the sweeps: %d, %v", k, got, ok)
		}
	}
	if got := len(stateKeys(t, b, 0)); got != 1 {
		t.Errorf("%d entries left, want 1", got)
	}
}

// stateKeyOf is the database key of state 0's value for the current key.
func stateKeyOf(t *testing.T, b *Backend) []byte {
	t.Helper()
	k, err := b.keyPrefix(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return appendEscaped(k, nil)
}

// unknownTimes makes the sweeper forget the times of the entries, as a
// restore does.
func unknownTimes(b *Backend) {
	for _, s := range b.states {
		s.lowTime = math.MinInt64
	}
}

// TestSweepSkipsUntilSomethingMayHaveExpired checks that a sweep step does
// not walk a state while the oldest time written to it has not expired,
// that a pass over the whole state raises that time to the oldest left,
// and that a restore makes the sweeper walk again.
func TestSweepSkipsUntilSomethingMayHaveExpired(t *testing.T) {
	specOf := func() *state.ValueDescriptor[int64] {
		return state.NewValue("swept", serializers.Int64(), sweepTTL(10))
	}
	b := newTestBackend(t, 16, keygroup.All(16))
	clock := state.NewManualClock(0)
	desc := specOf()
	v, err := state.GetValue(b, clock, desc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		setKey(t, b, fmt.Sprintf("key-%d", i))
		if err := v.Update(int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	s := b.states[0]
	sweep := func(b *Backend, now int64, want int) {
		t.Helper()
		n, err := b.Sweep(now)
		if err != nil || n != want {
			t.Fatalf("Sweep(%d) = %d, %v; want %d deleted", now, n, err, want)
		}
	}
	sweep(b, 99, 0)
	if s.sweepCursor != nil || s.sweepMidRound {
		t.Fatalf("a sweep before anything can have expired walked the state (cursor %x)", s.sweepCursor)
	}
	// Five entries written again at 150 outlive the twenty at 0.
	clock.Set(150)
	for i := range 5 {
		setKey(t, b, fmt.Sprintf("key-%d", i))
		if err := v.Update(int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	deleted := 0
	for range 3 {
		n, err := b.Sweep(150)
		if err != nil {
			t.Fatal(err)
		}
		deleted += n
	}
	if deleted != 20 || s.lowTime != 150 {
		t.Fatalf("three steps at 150 deleted %d (want 20) and left the oldest time at %d (want 150)", deleted, s.lowTime)
	}
	cursor := bytes.Clone(s.sweepCursor)
	sweep(b, 249, 0)
	if !bytes.Equal(s.sweepCursor, cursor) {
		t.Fatalf("a sweep at 249 walked the state: cursor %x, was %x", s.sweepCursor, cursor)
	}
	if got := len(stateKeys(t, b, 0)); got != 5 {
		t.Fatalf("%d entries left, want 5", got)
	}

	// A restore brings entries of unknown times: the first step walks.
	meta := statetest.NewMetadata(statetest.NewOperator("op", 1, 16, serializers.String(), []*state.Spec{desc.Spec()}, nil), 150)
	sp := statetest.WriteSavepoint(t, filepath.Join(t.TempDir(), "sp"), meta, 150, b)
	r := newTestBackend(t, 16, keygroup.All(16))
	if _, err := state.GetValue(r, clock, specOf()); err != nil {
		t.Fatal(err)
	}
	statetest.Restore(t, r, sp, state.RestoreOptions{})
	sweep(r, 200, 0)
	if r.states[0].sweepCursor == nil {
		t.Fatal("the first sweep after a restore did not walk the state")
	}
	sweep(r, 250, 5)
}
