package savepoint

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"
)

func refsMeta() *Metadata {
	return &Metadata{Operators: []Operator{
		{UID: "src"},
		{UID: "features", States: []KeyedState{{Name: "a"}, {Name: "b"}}, Timers: []TimerService{{Name: "t"}}},
	}}
}

func TestRefs(t *testing.T) {
	m := refsMeta()
	refs := m.Refs(1)
	want := []StateRef{{Operator: 1, State: 0}, {Operator: 1, State: 1}, {Operator: 1, State: 0, Timer: true}}
	if !slices.Equal(refs, want) {
		t.Fatalf("Refs = %v, want %v", refs, want)
	}
	if !slices.IsSortedFunc(refs, StateRef.Compare) || (StateRef{Operator: 0, Timer: true}).Compare(StateRef{Operator: 1}) >= 0 {
		t.Error("refs do not sort by operator, states before timers")
	}
	if len(m.Refs(0)) != 0 {
		t.Error("a non-keyed operator has refs")
	}
	for _, ref := range refs {
		if err := m.Check(ref); err != nil {
			t.Errorf("Check(%v) = %v", ref, err)
		}
		if got, ok := m.Find(1, m.RefName(ref)); !ok || got != ref {
			t.Errorf("Find(%q) = %v, want %v", m.RefName(ref), got, ref)
		}
		if (m.KeyedState(ref) == nil) != ref.Timer || (m.TimerService(ref) == nil) == ref.Timer {
			t.Errorf("%v: state %v, timer service %v", ref, m.KeyedState(ref), m.TimerService(ref))
		}
	}
	if got := m.Describe(refs[2]); got != `operator "features" timer service "t"` {
		t.Errorf("Describe = %s", got)
	}
	for _, bad := range []StateRef{{Operator: 2}, {Operator: -1}, {Operator: 1, State: 2}, {Operator: 1, State: 1, Timer: true}, {Operator: 0}} {
		if err := m.Check(bad); err == nil {
			t.Errorf("Check(%v) accepted", bad)
		}
	}
	if _, ok := m.Find(1, "nope"); ok {
		t.Error("Find of a missing name")
	}
}

// sliceIter iterates entries held in memory, without batching.
type sliceIter struct {
	es []Entry
	i  int
}

func (s *sliceIter) Next() bool    { s.i++; return s.i <= len(s.es) }
func (s *sliceIter) Entry() *Entry { return &s.es[s.i-1] }
func (s *sliceIter) Err() error    { return nil }
func (s *sliceIter) Close() error  { return nil }

// NextValues gives an iterator that does not batch the batches it would.
func TestNextValuesWithoutBatching(t *testing.T) {
	var es []Entry
	for i := range 5 {
		es = append(es, Entry{Value: append(binary.BigEndian.AppendUint64(nil, uint64(100+i)), make([]byte, i)...)})
	}
	it := &sliceIter{es: es}
	sizes, times := make([]int, 3), make([]int64, 3)
	if n := NextValues(it, true, sizes, times); n != 3 || !slices.Equal(sizes, []int{0, 1, 2}) || !slices.Equal(times, []int64{100, 101, 102}) {
		t.Fatalf("first batch: %d, %v, %v", n, sizes, times)
	}
	if n := NextValues(it, true, sizes, times); n != 2 || !slices.Equal(sizes[:2], []int{3, 4}) || !slices.Equal(times[:2], []int64{103, 104}) {
		t.Fatalf("second batch: %d, %v, %v", n, sizes[:n], times[:n])
	}
}

func TestChainAndErrors(t *testing.T) {
	parts := [][]Entry{{{Key: []byte("a")}}, nil, {{Key: []byte("b")}, {Key: []byte("c")}}}
	it := Chain(func() EntryIterator {
		if len(parts) == 0 {
			return nil
		}
		p := parts[0]
		parts = parts[1:]
		return &sliceIter{es: p}
	})
	var keys []string
	for it.Next() {
		keys = append(keys, string(it.Entry().Key))
	}
	if strings.Join(keys, "") != "abc" || it.Err() != nil {
		t.Errorf("chain gave %q, %v", keys, it.Err())
	}
	boom := errors.New("boom")
	if f := Failed(boom); f.Next() || f.Err() != boom {
		t.Error("Failed does not fail")
	}
	e := &Error{Reader: "snapshotfmt", File: "data-000", KeyGroup: 3, Offset: 12, Err: ErrCorrupt}
	if e.Error() != "snapshotfmt: data-000: key group 3: offset 12: savepoint: corrupt" || !BadInput(e) {
		t.Errorf("Error() = %q", e.Error())
	}
	if e := (&Error{KeyGroup: -1, Offset: -1, Err: boom}); e.Error() != "boom" || BadInput(e) {
		t.Errorf("bare Error() = %q", e.Error())
	}
}
