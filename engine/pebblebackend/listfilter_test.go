package pebblebackend

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
)

// TestListFilter follows the filter of lists below the cache: lists whose
// elements reach the write batch and the database are in it and read back
// whole with their ends forgotten, new lists are read as empty without a
// lookup below the cache, and a rebuild keeps exactly the lists still below.
func TestListFilter(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	l, err := b.RegisterList(state.NewList("l", serializers.Int64(), state.WithNamespace(serializers.Int64())).Spec())
	if err != nil {
		t.Fatal(err)
	}
	ls := l.(listStore)
	ns := func(i int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(i)) }
	setKey(t, b, "k")
	const lists = 200
	for i := range lists {
		if err := l.Append(ns(i), cellsOf(int64(i), int64(i+1))...); err != nil {
			t.Fatal(err)
		}
	}
	if b.lists.added != 0 {
		t.Fatalf("the filter holds %d lists while all are cached", b.lists.added)
	}
	if err := b.commitWrites(); err != nil {
		t.Fatal(err)
	}
	if b.lists.added != lists {
		t.Fatalf("the filter holds %d lists after the commit, want %d", b.lists.added, lists)
	}
	// Half the lists emptied again; their ends forgotten, with every state
	// probing or none.
	for i := 0; i < lists; i += 2 {
		if err := l.Replace(ns(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, emptyLists := range []int8{0, -8} {
		if err := b.forgetListEnds(); err != nil {
			t.Fatal(err)
		}
		ls.s.emptyLists = emptyLists
		for i := range lists {
			want := []int64{int64(i), int64(i + 1)}
			if i%2 == 0 {
				want = nil
			}
			if got := listValues(t, l, ns(i)); !slices.Equal(got, want) {
				t.Fatalf("list %d is %v, want %v", i, got, want)
			}
		}
	}
	unseen := 0
	for i := lists; i < 2*lists; i++ {
		p, _ := ls.prefix(ns(i))
		if !b.lists.mayHold(p) {
			unseen++
		}
		if got := listValues(t, l, ns(i)); len(got) != 0 {
			t.Fatalf("new list %d is %v", i, got)
		}
	}
	if unseen < lists*9/10 {
		t.Fatalf("the filter says maybe to %d of %d new lists", lists-unseen, lists)
	}
	// Appends to new lists and forgotten ones continue after their last
	// element.
	if err := b.forgetListEnds(); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := l.Append(ns(i), cellsOf(-1)...); err != nil {
			t.Fatal(err)
		}
		want := []int64{int64(i), int64(i + 1), -1}
		if i%2 == 0 {
			want = []int64{-1}
		}
		if got := listValues(t, l, ns(i)); !slices.Equal(got, want) {
			t.Fatalf("list %d is %v after an append, want %v", i, got, want)
		}
	}
	// A rebuild, due once the filter has taken its share of lists, keeps
	// the lists that still hold elements below the cache.
	if err := b.commitWrites(); err != nil {
		t.Fatal(err)
	}
	b.lists.added = listFilterCap
	if got := listValues(t, l, ns(1)); !slices.Equal(got, []int64{1, 2, -1}) {
		t.Fatalf("list 1 is %v after the rebuild", got)
	}
	if want := lists/2 + 2; b.lists.added != want {
		t.Fatalf("the rebuilt filter holds %d lists, want %d", b.lists.added, want)
	}
	for i := range lists {
		p, _ := ls.prefix(ns(i))
		if held := i%2 == 1 || i < 4; held && !b.lists.mayHold(p) {
			t.Fatalf("the rebuilt filter has lost list %d", i)
		}
	}
}

// TestListFilterGivesUp fills the database with more lists than the filter
// is meant for: the rebuild then turns it off, and every list reads right.
func TestListFilterGivesUp(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	l, err := b.RegisterList(state.NewList("l", serializers.Int64(), state.WithNamespace(serializers.Int64())).Spec())
	if err != nil {
		t.Fatal(err)
	}
	ns := func(i int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(i)) }
	setKey(t, b, "k")
	n := listFilterCap/2 + 1000
	for i := range n {
		if err := l.Append(ns(i), cellsOf(int64(i))...); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.commitWrites(); err != nil {
		t.Fatal(err)
	}
	b.lists.added = listFilterCap
	if err := b.forgetListEnds(); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		if got := listValues(t, l, ns(i)); !slices.Equal(got, []int64{int64(i)}) {
			t.Fatalf("list %d is %v", i, got)
		}
	}
	if !b.lists.off {
		t.Fatalf("the filter is on with %d lists after its rebuild", b.lists.added)
	}
	if got := listValues(t, l, ns(n)); len(got) != 0 {
		t.Fatalf("new list is %v", got)
	}
}
