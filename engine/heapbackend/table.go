package heapbackend

import (
	"math/bits"
	"slices"
	"strings"

	"github.com/stateproc/stateproc/engine/state"
)

// table holds one state's records for the owned key groups. A record is the
// data of one (key, namespace): a cell, a list or a map.
//
// Each key group keeps its records in a dense slice, found through a map
// from record identifier to position; a removal moves the last record into
// the hole. The slice, unlike a Go map, gives incremental cleanup a position
// to resume from on the next call.
type table[P any] struct {
	b      *Backend
	spec   *state.Spec
	groups []group[P]
	// occupied has a bit per key group holding records, so that cleanup
	// skips empty key groups 64 at a time instead of one by one.
	occupied []uint64
	n        int    // records in all groups
	id       []byte // scratch: the identifier of (current key, namespace)
	order    []*record[P]
	clean    cursor
}

type group[P any] struct {
	slots map[string]int
	recs  []record[P]
}

type record[P any] struct {
	id string // see ident.go
	p  P
}

// cursor is where incremental cleanup resumes. A record is examined whole,
// so one call may go over its budget on a long list or a big map; credit
// carries that debt over to the next calls, keeping the work per call O(n)
// amortized.
type cursor struct {
	g, i   int
	credit int
}

func newTable[P any](b *Backend, spec *state.Spec) *table[P] {
	n := b.kgs.Len()
	return &table[P]{b: b, spec: spec, groups: make([]group[P], n), occupied: make([]uint64, (n+63)/64)}
}

// current returns the index of the current key's group and leaves the
// identifier of (current key, ns) in t.id.
func (t *table[P]) current(ns []byte) (int, error) {
	switch {
	case t.b.closed:
		return 0, errClosed
	case t.b.gi < 0:
		return 0, errNoKey
	}
	t.id = append(append(t.id[:0], t.b.prefix...), ns...)
	return t.b.gi, nil
}

// at leaves the identifier of (key, ns) in t.id: it is how restore
// addresses records of keys other than the current one.
func (t *table[P]) at(key, ns []byte) {
	t.id = append(appendKey(t.id[:0], key), ns...)
}

// find returns the payload of record id in group gi, or nil. The pointer is
// valid until the group changes.
func (t *table[P]) find(gi int, id []byte) *P {
	g := &t.groups[gi]
	if i, ok := g.slots[string(id)]; ok {
		return &g.recs[i].p
	}
	return nil
}

// get returns the record id of group gi, adding an empty one, with a copy
// of id, when it is absent.
func (t *table[P]) get(gi int, id []byte) *P {
	if p := t.find(gi, id); p != nil {
		return p
	}
	g := &t.groups[gi]
	if g.slots == nil {
		g.slots = make(map[string]int)
	}
	s := string(id)
	g.slots[s] = len(g.recs)
	g.recs = append(g.recs, record[P]{id: s})
	t.n++
	t.occupied[gi/64] |= 1 << (gi % 64)
	return &g.recs[len(g.recs)-1].p
}

func (t *table[P]) delete(gi int, id []byte) {
	if i, ok := t.groups[gi].slots[string(id)]; ok {
		t.removeAt(gi, i)
	}
}

func (t *table[P]) removeAt(gi, i int) {
	g := &t.groups[gi]
	last := len(g.recs) - 1
	delete(g.slots, g.recs[i].id)
	if i != last {
		g.recs[i] = g.recs[last]
		g.slots[g.recs[i].id] = i
	}
	g.recs[last] = record[P]{} // let the collector have the payload
	g.recs = g.recs[:last]
	t.n--
	if last == 0 {
		t.occupied[gi/64] &^= 1 << (gi % 64)
	}
}

func (t *table[P]) empty(gi int) bool { return len(t.groups[gi].recs) == 0 }

// sorted returns the records of group gi in identifier order, that is by
// (key, namespace). The slice is reused by the next call.
func (t *table[P]) sorted(gi int) []*record[P] {
	g := &t.groups[gi]
	t.order = t.order[:0]
	for i := range g.recs {
		t.order = append(t.order, &g.recs[i])
	}
	slices.SortFunc(t.order, func(a, b *record[P]) int { return strings.Compare(a.id, b.id) })
	return t.order
}

// cleanup examines records from the cursor on, wrapping around the key
// groups, until n elements have been examined. examine reports how many
// elements (1 for a value) it looked at and whether the record is now empty,
// in which case it is removed.
func (t *table[P]) cleanup(n int, examine func(p *P) (examined int, empty bool)) {
	if n <= 0 || t.n == 0 {
		return
	}
	c := &t.clean
	c.credit = min(c.credit+n, n)
	for c.credit > 0 {
		if c.i >= len(t.groups[c.g].recs) {
			next, ok := t.nextOccupied(c.g + 1)
			if !ok {
				return // the state is empty
			}
			c.g, c.i = next, 0
			continue
		}
		examined, empty := examine(&t.groups[c.g].recs[c.i].p)
		c.credit -= examined
		if empty {
			t.removeAt(c.g, c.i) // the last record moved to c.i: examine it next
		} else {
			c.i++
		}
	}
}

// nextOccupied returns the first group from from on, wrapping around, that
// holds records.
func (t *table[P]) nextOccupied(from int) (int, bool) {
	if from >= len(t.groups) {
		from = 0
	}
	if gi := firstSet(t.occupied, from, len(t.groups)); gi >= 0 {
		return gi, true
	}
	if gi := firstSet(t.occupied, 0, from); gi >= 0 {
		return gi, true
	}
	return 0, false
}

// firstSet returns the first set bit of words in [from, to), or -1.
func firstSet(words []uint64, from, to int) int {
	for from < to {
		if w := words[from/64] >> (from % 64); w != 0 {
			if i := from + bits.TrailingZeros64(w); i < to {
				return i
			}
			return -1
		}
		from = (from/64 + 1) * 64
	}
	return -1
}

func (t *table[P]) drop() {
	t.groups, t.occupied, t.order, t.n = nil, nil, nil, 0
}
