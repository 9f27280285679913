package pebblebackend

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
)

func cellsOf(vs ...int64) []state.Cell {
	cs := make([]state.Cell, len(vs))
	for i, v := range vs {
		cs[i] = state.Cell{Value: v}
	}
	return cs
}

func listValues(t *testing.T, l state.RawList, ns []byte) []int64 {
	t.Helper()
	cells, err := l.Get(ns)
	if err != nil {
		t.Fatal(err)
	}
	var vs []int64
	for _, c := range cells {
		vs = append(vs, c.Value.(int64))
	}
	return vs
}

// listSeqs returns the sequence numbers stored for the current key's list
// in namespace ns.
func listSeqs(t *testing.T, b *Backend, l state.RawList, ns []byte) []uint64 {
	t.Helper()
	p, err := l.(listStore).prefix(ns)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, k := range dbKeys(t, b, p) {
		if len(k) != len(p)+seqLen {
			t.Fatalf("list key %x has %d bytes after its prefix", k, len(k)-len(p))
		}
		seqs = append(seqs, binary.BigEndian.Uint64(k[len(p):]))
	}
	return seqs
}

func TestListAppendAndReplace(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	l, err := b.RegisterList(state.NewList("l", serializers.Int64()).Spec())
	if err != nil {
		t.Fatal(err)
	}
	setKey(t, b, "k")
	if got := listValues(t, l, nil); got != nil {
		t.Fatalf("empty list reads %v", got)
	}
	steps := []struct {
		name     string
		do       func() error
		want     []int64
		wantSeqs []uint64
	}{
		{"append", func() error { return l.Append(nil, cellsOf(1, 2, 3)...) }, []int64{1, 2, 3}, []uint64{0, 1, 2}},
		{"append more", func() error { return l.Append(nil, cellsOf(4, 5)...) }, []int64{1, 2, 3, 4, 5}, []uint64{0, 1, 2, 3, 4}},
		{"replace shorter", func() error { return l.Replace(nil, cellsOf(9, 8)) }, []int64{9, 8}, []uint64{0, 1}},
		{"append after replace", func() error { return l.Append(nil, cellsOf(7)...) }, []int64{9, 8, 7}, []uint64{0, 1, 2}},
		{"replace longer", func() error { return l.Replace(nil, cellsOf(1, 2, 3, 4)) }, []int64{1, 2, 3, 4}, []uint64{0, 1, 2, 3}},
		{"replace empty", func() error { return l.Replace(nil, nil) }, nil, nil},
		{"append to cleared", func() error { return l.Append(nil, cellsOf(6)...) }, []int64{6}, []uint64{0}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := listValues(t, l, nil); !slices.Equal(got, s.want) {
			t.Fatalf("%s: list is %v, want %v", s.name, got, s.want)
		}
		if got := listSeqs(t, b, l, nil); !slices.Equal(got, s.wantSeqs) {
			t.Fatalf("%s: sequences %v, want %v", s.name, got, s.wantSeqs)
		}
	}
}

// TestListAppendFindsLastAfterGap checks that an append continues after the
// last element, not after the element count, when an element in the middle
// of a TTL state's list is gone (as the sweeper leaves it).
func TestListAppendFindsLastAfterGap(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	l, err := b.RegisterList(state.NewList("l", serializers.Int64(), sweepTTL(1000)).Spec())
	if err != nil {
		t.Fatal(err)
	}
	setKey(t, b, "k")
	if err := l.Append(nil, cellsOf(1, 2, 3)...); err != nil {
		t.Fatal(err)
	}
	p, _ := l.(listStore).prefix(nil)
	if err := b.del(binary.BigEndian.AppendUint64(p, 1)); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(nil, cellsOf(4)...); err != nil {
		t.Fatal(err)
	}
	if got, want := listSeqs(t, b, l, nil), []uint64{0, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("sequences %v, want %v", got, want)
	}
	if got, want := listValues(t, l, nil), []int64{1, 3, 4}; !slices.Equal(got, want) {
		t.Fatalf("list is %v, want %v", got, want)
	}
}

// TestListsAreIsolated uses keys and namespaces that are prefixes of each
// other: the escape keeps their lists apart.
func TestListsAreIsolated(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	l, err := b.RegisterList(state.NewList("l", serializers.Int64()).Spec())
	if err != nil {
		t.Fatal(err)
	}
	other, err := b.RegisterList(state.NewList("other", serializers.Int64()).Spec())
	if err != nil {
		t.Fatal(err)
	}
	type slot struct {
		key string
		ns  []byte
	}
	slots := []slot{{"a", nil}, {"a\x00", nil}, {"a", []byte{0}}, {"a", []byte{0, 0}}, {"", nil}, {"ab", []byte("c")}}
	for i, s := range slots {
		setKey(t, b, s.key)
		if err := l.Append(s.ns, cellsOf(int64(i), int64(i))...); err != nil {
			t.Fatal(err)
		}
		if err := other.Append(s.ns, cellsOf(-1)...); err != nil {
			t.Fatal(err)
		}
	}
	setKey(t, b, "a")
	if err := l.Replace([]byte{0}, cellsOf(42)); err != nil {
		t.Fatal(err)
	}
	for i, s := range slots {
		setKey(t, b, s.key)
		want := []int64{int64(i), int64(i)}
		if s.key == "a" && slices.Equal(s.ns, []byte{0}) {
			want = []int64{42}
		}
		if got := listValues(t, l, s.ns); !slices.Equal(got, want) {
			t.Errorf("key %q ns %x: %v, want %v", s.key, s.ns, got, want)
		}
		if got := listValues(t, other, s.ns); !slices.Equal(got, []int64{-1}) {
			t.Errorf("other state, key %q ns %x: %v", s.key, s.ns, got)
		}
	}
}

// TestListAfterGet appends to and replaces lists right after reading them,
// where the end of the list read is remembered instead of sought, also
// after elements were deleted behind the memo's back, and across lists.
func TestListAfterGet(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	l, err := b.RegisterList(state.NewList("l", serializers.Int64()).Spec())
	if err != nil {
		t.Fatal(err)
	}
	setKey(t, b, "k")
	if err := l.Append([]byte("a"), cellsOf(1, 2, 3, 4, 5)...); err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]byte("b"), cellsOf(9)...); err != nil {
		t.Fatal(err)
	}
	listValues(t, l, []byte("a"))
	if err := l.Replace([]byte("a"), cellsOf(7, 8)); err != nil {
		t.Fatal(err)
	}
	if got, want := listSeqs(t, b, l, []byte("a")), []uint64{0, 1}; !slices.Equal(got, want) {
		t.Fatalf("after Get and Replace, sequences %v, want %v", got, want)
	}
	listValues(t, l, []byte("a"))
	// The last element goes as the sweeper would take it.
	p, _ := l.(listStore).prefix([]byte("a"))
	if err := b.del(binary.BigEndian.AppendUint64(p, 1)); err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]byte("a"), cellsOf(10)...); err != nil {
		t.Fatal(err)
	}
	if got, want := listValues(t, l, []byte("a")), []int64{7, 10}; !slices.Equal(got, want) {
		t.Fatalf("list a is %v, want %v", got, want)
	}
	listValues(t, l, []byte("a"))
	if err := l.Append([]byte("b"), cellsOf(11)...); err != nil {
		t.Fatal(err)
	}
	if err := l.Replace([]byte("a"), nil); err != nil {
		t.Fatal(err)
	}
	if got := listSeqs(t, b, l, []byte("a")); len(got) != 0 {
		t.Fatalf("list a has sequences %v after Replace with nothing", got)
	}
	if got, want := listValues(t, l, []byte("b")), []int64{9, 11}; !slices.Equal(got, want) {
		t.Fatalf("list b is %v, want %v", got, want)
	}
}

// TestListReadByPoint reads remembered lists of a TTL state by point
// lookups: one with a gap the sweeper left at its front, one emptied, one that never existed
// but whose end a read remembered, and a list written behind the memo
// that a full memo forgot.
func TestListReadByPoint(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	l, err := b.RegisterList(state.NewList("l", serializers.Int64(), sweepTTL(1000)).Spec())
	if err != nil {
		t.Fatal(err)
	}
	setKey(t, b, "k")
	if err := l.Append([]byte("a"), cellsOf(1, 2, 3)...); err != nil {
		t.Fatal(err)
	}
	p, _ := l.(listStore).prefix([]byte("a"))
	if end, ok := b.listEnds.of(p); !ok || end != 3 {
		t.Fatalf("end of list a remembered as %d, %v; want 3", end, ok)
	}
	if err := b.del(binary.BigEndian.AppendUint64(p, 0)); err != nil {
		t.Fatal(err)
	}
	if got, want := listValues(t, l, []byte("a")), []int64{2, 3}; !slices.Equal(got, want) {
		t.Fatalf("list a is %v, want %v", got, want)
	}
	if err := l.Replace([]byte("a"), nil); err != nil {
		t.Fatal(err)
	}
	if got := listValues(t, l, []byte("a")); len(got) != 0 {
		t.Fatalf("list a is %v after Replace with nothing", got)
	}
	if got := listValues(t, l, []byte("never")); len(got) != 0 {
		t.Fatalf("list never is %v", got)
	}
	if err := l.Append([]byte("never"), cellsOf(5)...); err != nil {
		t.Fatal(err)
	}
	if got, want := listValues(t, l, []byte("never")), []int64{5}; !slices.Equal(got, want) {
		t.Fatalf("list never is %v, want %v", got, want)
	}
	// Fill the memo past its bound: it stays bounded, and what it forgot
	// is read by an iterator again.
	for i := range listMemoSize + 10 {
		listValues(t, l, binary.BigEndian.AppendUint64(nil, uint64(i)))
	}
	if n := len(b.listEnds.ends); n > listMemoSize {
		t.Fatalf("memo holds %d lists, more than %d", n, listMemoSize)
	}
	if got, want := listValues(t, l, []byte("never")), []int64{5}; !slices.Equal(got, want) {
		t.Fatalf("list never is %v after the memo filled, want %v", got, want)
	}
}

// TestListProbe reads lists of a state without TTL whose ends are not
// remembered, which go by point lookups up to pointReadMax elements and by an
// iterator after that, with elements in the database, the write batch and
// the cache at once; an append to a list whose end is not remembered, by
// probe or by seek, then continues after the last element.
func TestListProbe(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	l, err := b.RegisterList(state.NewList("l", serializers.Int64()).Spec())
	if err != nil {
		t.Fatal(err)
	}
	setKey(t, b, "k")
	lens := []int{0, 1, pointReadMax - 1, pointReadMax, pointReadMax + 1, 3 * pointReadMax}
	want := make([][]int64, len(lens))
	ns := func(i int) []byte { return []byte{byte(i)} }
	for i, n := range lens {
		for j := range n {
			v := int64(100*i + j)
			want[i] = append(want[i], v)
			if err := l.Append(ns(i), cellsOf(v)...); err != nil {
				t.Fatal(err)
			}
			switch j {
			case n / 3:
				if err := b.commitWrites(); err != nil {
					t.Fatal(err)
				}
			case 2 * n / 3:
				if err := b.spillAll(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := b.forgetListEnds(); err != nil {
		t.Fatal(err)
	}
	ls := l.(listStore)
	for i, n := range lens {
		ls.s.emptyLists = 0
		if !ls.probing() {
			t.Fatal("a state without TTL does not probe")
		}
		if got := listValues(t, l, ns(i)); !slices.Equal(got, want[i]) {
			t.Fatalf("list of %d is %v, want %v", n, got, want[i])
		}
		p, _ := l.(listStore).prefix(ns(i))
		if end, ok := b.listEnds.of(p); !ok || end != uint64(n) {
			t.Fatalf("list of %d: end remembered as %d, %v", n, end, ok)
		}
	}
	// Lists that hold elements turn the probing off, empty ones on again.
	if err := b.forgetListEnds(); err != nil {
		t.Fatal(err)
	}
	for i := range lens {
		listValues(t, l, ns(i))
	}
	if ls.probing() {
		t.Fatalf("probing after reading mostly lists with elements (%d)", ls.s.emptyLists)
	}
	for i := range 20 {
		listValues(t, l, []byte{0xE0, byte(i)})
	}
	if !ls.probing() {
		t.Fatalf("not probing after reading empty lists (%d)", ls.s.emptyLists)
	}
	if err := b.forgetListEnds(); err != nil {
		t.Fatal(err)
	}
	for i, n := range lens {
		ls.s.emptyLists = 0
		if got := listValues(t, l, ns(i)); !slices.Equal(got, want[i]) {
			t.Fatalf("list of %d is %v, want %v", n, got, want[i])
		}
		if err := b.forgetListEnds(); err != nil {
			t.Fatal(err)
		}
		ls.s.emptyLists = int8(i%2) - 1
		if err := l.Append(ns(i), cellsOf(-1)...); err != nil {
			t.Fatal(err)
		}
		seqs := listSeqs(t, b, l, ns(i))
		if len(seqs) != n+1 || seqs[n] != uint64(n) {
			t.Fatalf("list of %d has sequences %v after an append", n, seqs)
		}
	}
}

// TestListForgottenInCache forgets, by filling the memo, lists whose
// elements and deletions still sit in the write cache, then appends to them
// and replaces them: an append after the forgetting seeks below the cache,
// so the forgotten lists' writes must have left it for the seek to find.
func TestListForgottenInCache(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	l, err := b.RegisterList(state.NewList("l", serializers.Int64()).Spec())
	if err != nil {
		t.Fatal(err)
	}
	ls := l.(listStore)
	setKey(t, b, "k")
	grown, shrunk, replaced := []byte("grown"), []byte("shrunk"), []byte("replaced")
	for _, ns := range [][]byte{grown, shrunk, replaced} {
		if err := l.Append(ns, cellsOf(1, 2, 3)...); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.commitWrites(); err != nil {
		t.Fatal(err)
	}
	// Writes that stay in the cache: two more elements, a list cut to one.
	if err := l.Append(grown, cellsOf(4, 5)...); err != nil {
		t.Fatal(err)
	}
	if err := l.Replace(shrunk, cellsOf(9)); err != nil {
		t.Fatal(err)
	}
	if b.cache.empty() {
		t.Fatal("the cache is empty after the writes")
	}
	for i := range listMemoSize {
		listValues(t, l, binary.BigEndian.AppendUint64(nil, uint64(i)))
	}
	for _, ns := range [][]byte{grown, shrunk, replaced} {
		p, _ := ls.prefix(ns)
		if _, ok := b.listEnds.of(p); ok {
			t.Fatalf("list %s still remembered", ns)
		}
	}
	// Neither probe: an append finds its end by a seek.
	ls.s.emptyLists = -8
	if err := l.Append(grown, cellsOf(6)...); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(shrunk, cellsOf(10)...); err != nil {
		t.Fatal(err)
	}
	if err := l.Replace(replaced, cellsOf(7)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ns   []byte
		want []int64
	}{{grown, []int64{1, 2, 3, 4, 5, 6}}, {shrunk, []int64{9, 10}}, {replaced, []int64{7}}} {
		if got := listValues(t, l, c.ns); !slices.Equal(got, c.want) {
			t.Fatalf("list %s is %v, want %v", c.ns, got, c.want)
		}
		if seqs := listSeqs(t, b, l, c.ns); len(seqs) != len(c.want) || seqs[len(seqs)-1] != uint64(len(c.want)-1) {
			t.Fatalf("list %s has sequences %v", c.ns, seqs)
		}
	}
}

// TestListReadMixed reads remembered short lists whose elements lie partly
// in the write cache and partly below it, with the cache also holding a
// sweeper's deletion of an element below: by one lookup below when one
// element is not cached, by an iterator below when more are not.
func TestListReadMixed(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	l, err := b.RegisterList(state.NewList("l", serializers.Int64(), sweepTTL(1000)).Spec())
	if err != nil {
		t.Fatal(err)
	}
	setKey(t, b, "k")
	p, _ := l.(listStore).prefix([]byte("a"))
	check := func(want ...int64) {
		t.Helper()
		if _, ok := b.listEnds.of(p); !ok {
			t.Fatal("end of list a not remembered")
		}
		if got := listValues(t, l, []byte("a")); !slices.Equal(got, want) {
			t.Fatalf("list a is %v, want %v", got, want)
		}
	}
	if err := l.Append([]byte("a"), cellsOf(1)...); err != nil {
		t.Fatal(err)
	}
	if err := b.commitWrites(); err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]byte("a"), cellsOf(2)...); err != nil {
		t.Fatal(err)
	}
	check(1, 2)
	if err := b.commitWrites(); err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]byte("a"), cellsOf(3, 4)...); err != nil {
		t.Fatal(err)
	}
	check(1, 2, 3, 4)
	if err := b.del(binary.BigEndian.AppendUint64(bytes.Clone(p), 1)); err != nil {
		t.Fatal(err)
	}
	check(1, 3, 4)
	if err := b.commitWrites(); err != nil {
		t.Fatal(err)
	}
	check(1, 3, 4)
}
