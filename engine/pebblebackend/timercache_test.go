package pebblebackend

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/engine/state/statetest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
)

// TestTimerCacheKeepsShortTimersOutOfPebble registers timers in ascending
// time and deletes or fires them while their writes wait: none reaches the
// write batch. Timers spilled below and deleted afterwards leave nothing
// either, which only deletions written below can do.
func TestTimerCacheKeepsShortTimersOutOfPebble(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	ts, err := b.Timers("t", serializers.Void())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		setKey(t, b, fmt.Sprintf("k%d", i%50))
		if err := ts.Register(nil, int64(i)); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := ts.Delete(nil, int64(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	fired := 0
	for {
		tm, ok, err := ts.Pop(149)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if tm.Timestamp%2 == 0 || tm.Timestamp > 149 {
			t.Fatalf("fired a timer at %d", tm.Timestamp)
		}
		fired++
	}
	if fired != 75 {
		t.Fatalf("fired %d timers up to 149, want 75", fired)
	}
	if n := b.wb.Count(); n != 0 {
		t.Fatalf("the write batch holds %d records of short-lived timers, want none", n)
	}
	// The 25 timers left (151, 153, ..., 199) go below; deleting them
	// must write deletions.
	if got := len(dbKeys(t, b, nil)); got != 25 {
		t.Fatalf("%d timer keys below the cache, want 25", got)
	}
	for i := 151; i < 200; i += 2 {
		setKey(t, b, fmt.Sprintf("k%d", i%50))
		if err := ts.Delete(nil, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(dbKeys(t, b, nil)); got != 0 {
		t.Fatalf("%d timer keys left after deleting every timer, want none", got)
	}
	if _, ok, _ := ts.Earliest(); ok {
		t.Fatal("Earliest reports a timer after every timer was deleted")
	}
}

// TestTimerCacheAfterRestore deletes restored timers, which are below the
// cache before any write of the service: the deletions must reach Pebble.
func TestTimerCacheAfterRestore(t *testing.T) {
	a := newTestBackend(t, 16, keygroup.All(16))
	ta, err := a.Timers("t", serializers.Void())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		setKey(t, a, fmt.Sprintf("k%d", i))
		if err := ta.Register(nil, int64(100+i)); err != nil {
			t.Fatal(err)
		}
	}
	meta := statetest.NewMetadata(statetest.NewOperator("op", 1, 16, serializers.String(), nil,
		[]statetest.TimerService{{Name: "t", Namespace: serializers.Void()}}), 0)
	sp := statetest.WriteSavepoint(t, filepath.Join(t.TempDir(), "sp"), meta, 0, a)

	b := newTestBackend(t, 16, keygroup.All(16))
	tb, err := b.Timers("t", serializers.Void())
	if err != nil {
		t.Fatal(err)
	}
	statetest.Restore(t, b, sp, state.RestoreOptions{})
	for i := range 40 {
		setKey(t, b, fmt.Sprintf("k%d", i))
		if i%4 == 0 {
			// Registered again, then deleted: still a deletion below.
			if err := tb.Register(nil, int64(100+i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := tb.Delete(nil, int64(100+i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := dbKeys(t, b, nil); len(got) != 0 {
		t.Fatalf("%d restored timers left after deleting them all, first %x", len(got), got[0])
	}
}
