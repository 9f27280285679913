package pebblebackend

import (
	"fmt"
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
)

// TestClearLargerThanWriteBatch clears a map whose deletes fill the write
// batch several times over, so the range is deleted in rounds with commits
// between them; a map of another namespace must survive it.
func TestClearLargerThanWriteBatch(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	m, err := b.RegisterMap(state.NewMap("m", serializers.String(), serializers.Int64()).Spec())
	if err != nil {
		t.Fatal(err)
	}
	setKey(t, b, "k")
	const n = 50_000
	for i := range n {
		if err := m.Put([]byte("a"), fmt.Sprintf("entry-%06d", i), state.Cell{Value: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Put([]byte("b"), "kept", state.Cell{Value: int64(-1)}); err != nil {
		t.Fatal(err)
	}
	p, _ := m.(mapStore).prefix([]byte("a"))
	if got := len(dbKeys(t, b, p)); got != n {
		t.Fatalf("%d entries before Clear, want %d", got, n)
	}
	if rounds := n * (len(p) + 14) / b.commitAt; rounds < 2 {
		t.Fatalf("the deletes fill the write batch %d times, want at least 2", rounds)
	}
	if err := m.Clear([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if got := dbKeys(t, b, p); len(got) != 0 {
		t.Fatalf("%d entries left after Clear, first %x", len(got), got[0])
	}
	if empty, err := m.IsEmpty([]byte("a")); err != nil || !empty {
		t.Fatalf("IsEmpty(a) = %v, %v after Clear", empty, err)
	}
	c, ok, err := m.Get([]byte("b"), "kept")
	if err != nil || !ok || c.Value != int64(-1) {
		t.Fatalf("other namespace: Get = %v, %v, %v", c, ok, err)
	}
}

// TestWritesVisibleBeforeAndAfterCommit reads a value back while it sits
// in the cache, once spilled into the write batch, after the batch is
// committed, and after a delete in the cache shadows the committed value.
func TestWritesVisibleBeforeAndAfterCommit(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	v, err := state.GetValue(b, nil, state.NewValue("v", serializers.Int64()))
	if err != nil {
		t.Fatal(err)
	}
	setKey(t, b, "k")
	want := func(what string, wantV int64, wantOK bool) {
		t.Helper()
		got, ok, err := v.Value()
		if err != nil || ok != wantOK || got != wantV {
			t.Fatalf("%s: Value() = %d, %v, %v; want %d, %v", what, got, ok, err, wantV, wantOK)
		}
	}
	if err := v.Update(7); err != nil {
		t.Fatal(err)
	}
	if b.cache.empty() || !b.wb.Empty() {
		t.Fatal("the write went past the cache")
	}
	want("in the cache", 7, true)
	if err := b.spillAll(); err != nil {
		t.Fatal(err)
	}
	if !b.cache.empty() || b.wb.Empty() {
		t.Fatal("the spill did not move the write into the batch")
	}
	want("in the batch", 7, true)
	if err := b.commitWrites(); err != nil {
		t.Fatal(err)
	}
	if !b.wb.Empty() {
		t.Fatal("write batch not empty after commit")
	}
	want("committed", 7, true)
	if err := v.Clear(); err != nil {
		t.Fatal(err)
	}
	want("deleted in the cache", 0, false)
	if err := b.commitWrites(); err != nil {
		t.Fatal(err)
	}
	want("delete committed", 0, false)
	if got := dbKeys(t, b, nil); len(got) != 0 {
		t.Fatalf("%d keys left, first %x", len(got), got[0])
	}
}

// TestWritesInRangeCallback writes more than the cache and the write batch
// hold from inside a map's Range callback, while Range's iterator is open:
// the cache spills into the batch, the batch must not be committed (and
// reset) under it, and every write must land.
func TestWritesInRangeCallback(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	m, err := b.RegisterMap(state.NewMap("m", serializers.Int64(), serializers.Int64()).Spec())
	if err != nil {
		t.Fatal(err)
	}
	v, err := b.RegisterValue(state.NewValue("v", serializers.Bytes()).Spec())
	if err != nil {
		t.Fatal(err)
	}
	setKey(t, b, "k")
	const n = 300
	if n*8<<10 < 2*cacheGenLimit {
		t.Fatalf("%d writes of 8 KiB do not spill the cache", n)
	}
	for i := range n {
		if err := m.Put(nil, int64(i), state.Cell{Value: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	big := make([]byte, 8<<10)
	ns := func(i int64) []byte { return []byte(fmt.Sprint(i)) }
	seen := 0
	err = m.Range(nil, func(k any, c state.Cell) bool {
		if k.(int64) != int64(seen) || c.Value.(int64) != int64(seen) {
			t.Errorf("entry %d is %v=%v", seen, k, c.Value)
		}
		seen++
		big[0] = byte(seen)
		if err := v.Put(ns(k.(int64)), state.Cell{Value: big}); err != nil {
			t.Error(err)
			return false
		}
		return true
	})
	if err != nil || seen != n {
		t.Fatalf("Range saw %d entries, %v", seen, err)
	}
	if b.wb.Len() < b.commitAt {
		t.Fatalf("write batch holds %d bytes, want more than its bound %d", b.wb.Len(), b.commitAt)
	}
	if err := v.Put(ns(n), state.Cell{Value: big}); err != nil {
		t.Fatal(err)
	}
	if !b.wb.Empty() {
		t.Fatal("the first write after Range did not commit the full batch")
	}
	for i := range int64(n) {
		c, ok, err := v.Get(ns(i))
		if err != nil || !ok || c.Value.([]byte)[0] != byte(i+1) {
			t.Fatalf("value %d: %v, %v", i, ok, err)
		}
	}
}

// TestNestedIterators reads and appends to a list from inside a map's Range
// callback: the list read needs an iterator while Range holds the kept one,
// and both must see the writes made before they were positioned.
func TestNestedIterators(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	m, err := b.RegisterMap(state.NewMap("m", serializers.Int64(), serializers.Int64()).Spec())
	if err != nil {
		t.Fatal(err)
	}
	l, err := b.RegisterList(state.NewList("l", serializers.Int64()).Spec())
	if err != nil {
		t.Fatal(err)
	}
	setKey(t, b, "k")
	for i := range int64(5) {
		if err := m.Put(nil, i, state.Cell{Value: i}); err != nil {
			t.Fatal(err)
		}
	}
	var lens []int
	err = m.Range(nil, func(k any, _ state.Cell) bool {
		lens = append(lens, len(listValues(t, l, nil)))
		if err := l.Append(nil, cellsOf(k.(int64))...); err != nil {
			t.Error(err)
			return false
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 1, 2, 3, 4}; fmt.Sprint(lens) != fmt.Sprint(want) {
		t.Fatalf("list lengths seen in Range %v, want %v", lens, want)
	}
	if got := listValues(t, l, nil); fmt.Sprint(got) != "[0 1 2 3 4]" {
		t.Fatalf("list after Range is %v", got)
	}
	if b.openIters != 0 || b.keptInUse {
		t.Fatalf("%d iterators left open, kept in use %v", b.openIters, b.keptInUse)
	}
	// A write after the kept iterator was positioned is seen on its next use.
	if err := m.Put(nil, int64(9), state.Cell{Value: int64(9)}); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := m.Range(nil, func(any, state.Cell) bool { n++; return true }); err != nil || n != 6 {
		t.Fatalf("Range after a Put saw %d entries, %v", n, err)
	}
}
