package pebblebackend

import (
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
)

// TestCacheSpillsOnlyWhatIsNeeded follows keys through both generations of
// the cache into the write batch: a key found absent, written and deleted
// spills as nothing; a key written blind and deleted spills a deletion that
// shadows the value committed before; what a later generation holds wins
// over the earlier one.
func TestCacheSpillsOnlyWhatIsNeeded(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	v, err := state.GetValue(b, nil, state.NewValue("v", serializers.Int64()))
	if err != nil {
		t.Fatal(err)
	}
	value := func(key string) (int64, bool) {
		t.Helper()
		setKey(t, b, key)
		got, ok, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		return got, ok
	}
	update := func(key string, x int64) {
		t.Helper()
		setKey(t, b, key)
		if err := v.Update(x); err != nil {
			t.Fatal(err)
		}
	}
	clearKey := func(key string) {
		t.Helper()
		setKey(t, b, key)
		if err := v.Clear(); err != nil {
			t.Fatal(err)
		}
	}

	// Found absent, written, deleted: nothing reaches the batch.
	if _, ok := value("fresh"); ok {
		t.Fatal("fresh key has a value")
	}
	update("fresh", 1)
	clearKey("fresh")
	if err := b.spillAll(); err != nil {
		t.Fatal(err)
	}
	if !b.wb.Empty() {
		t.Fatalf("a key that never reached the database spilled %d bytes", b.wb.Len())
	}

	// Committed, then written blind and deleted: the deletion must spill.
	update("stored", 2)
	if err := b.commitWrites(); err != nil {
		t.Fatal(err)
	}
	update("stored", 3)
	clearKey("stored")
	if err := b.spillAll(); err != nil {
		t.Fatal(err)
	}
	if b.wb.Empty() {
		t.Fatal("the deletion of a stored key did not spill")
	}
	if err := b.commitWrites(); err != nil {
		t.Fatal(err)
	}
	if x, ok := value("stored"); ok {
		t.Fatalf("deleted key reads %d", x)
	}

	// Across a rotation: the old generation's value, then the young one's
	// deletion of a key found absent before.
	if _, ok := value("rotated"); ok {
		t.Fatal("rotated key has a value")
	}
	update("rotated", 4)
	if err := b.rotate(); err != nil {
		t.Fatal(err)
	}
	if len(b.cache.old) == 0 {
		t.Fatal("the rotation left the old generation empty")
	}
	clearKey("rotated")
	if err := b.rotate(); err != nil {
		t.Fatal(err)
	}
	update("kept", 5)
	if err := b.rotate(); err != nil {
		t.Fatal(err)
	}
	if err := b.rotate(); err != nil {
		t.Fatal(err)
	}
	if !b.cache.empty() {
		t.Fatal("two rotations left entries in the cache")
	}
	if err := b.commitWrites(); err != nil {
		t.Fatal(err)
	}
	if x, ok := value("rotated"); ok {
		t.Fatalf("deleted key reads %d", x)
	}
	if x, ok := value("kept"); !ok || x != 5 {
		t.Fatalf("kept reads %d, %v", x, ok)
	}
	if got := dbKeys(t, b, nil); len(got) != 1 {
		t.Fatalf("database holds %d keys, want only kept's", len(got))
	}
}

// TestCacheStaysBounded writes many distinct keys: each generation stops
// at its bound, and every value reads back.
func TestCacheStaysBounded(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	v, err := b.RegisterValue(state.NewValue("v", serializers.Bytes()).Spec())
	if err != nil {
		t.Fatal(err)
	}
	setKey(t, b, "k")
	val := make([]byte, 1000)
	const n = 5 * cacheGenLimit / 1000
	for i := range n {
		val[0], val[1] = byte(i), byte(i>>8)
		if err := v.Put([]byte{byte(i), byte(i >> 8)}, state.Cell{Value: val}); err != nil {
			t.Fatal(err)
		}
		if b.cache.youngBytes >= cacheGenLimit {
			t.Fatalf("young generation holds %d bytes", b.cache.youngBytes)
		}
		if old := len(b.cache.old) * 1000; old > cacheGenLimit {
			t.Fatalf("old generation holds %d bytes of values", old)
		}
	}
	for i := range n {
		c, ok, err := v.Get([]byte{byte(i), byte(i >> 8)})
		if err != nil || !ok {
			t.Fatalf("value %d: %v, %v", i, ok, err)
		}
		if got := c.Value.([]byte); got[0] != byte(i) || got[1] != byte(i>>8) {
			t.Fatalf("value %d reads %x", i, got[:2])
		}
	}
}
