package pebblebackend

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/stateproc/stateproc/engine/state"
)

// listStore keeps one Pebble key per element, [kg][id][key][namespace][u64
// sequence], so elements sort in list order and an append writes only the
// new elements.
type listStore struct{ s *stateInfo }

const seqLen = 8

// prefix returns [kg][id][key][namespace], in a fresh slice because
// iterators hold on to their bounds.
func (l listStore) prefix(ns []byte) ([]byte, error) {
	p, err := l.s.b.keyPrefix(nil, l.s.id)
	if err != nil {
		return nil, err
	}
	return appendEscaped(p, ns), nil
}

func (l listStore) Get(ns []byte) (cells []state.Cell, err error) {
	p, err := l.prefix(ns)
	if err != nil {
		return nil, err
	}
	end, known := l.s.b.listEnds.of(p)
	below := true
	if !known {
		if below, err = l.s.b.listsBelow(p); err != nil {
			return nil, err
		}
	}
	switch {
	case known && end <= pointReadMax:
		return l.getByPoint(p, end)
	case !known && (!below || l.probing()):
		// A list with nothing below the cache is one the cache holds
		// nothing of either (see listEnds), so the probe finds it empty.
		var done bool
		if cells, done, err = l.probe(p, below); err != nil || done {
			l.sawList(len(cells) == 0)
			return cells, err
		}
	}
	lower := p
	if len(cells) > 0 {
		lower = binary.BigEndian.AppendUint64(bytes.Clone(p), uint64(len(cells)))
	}
	// The cache holds no element of a list whose end is forgotten, nor,
	// without TTL, a sweeper's deletion of one, so such a list is read
	// below it without a spill.
	open := l.s.b.iterRange
	if !known && l.s.spec.TTL == nil {
		open = l.s.b.iterBelow
	}
	it, err := open(lower, prefixEnd(p))
	if err != nil {
		return nil, err
	}
	defer l.s.b.closeIter(it, &err)
	end = uint64(len(cells))
	for it.First(); it.Valid(); it.Next() {
		c, err := l.s.decodeCell(it.Value())
		if err != nil {
			return nil, err
		}
		cells = append(cells, c)
		if k := it.Key(); len(k) == len(p)+seqLen {
			end = binary.BigEndian.Uint64(k[len(p):]) + 1
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	if !known {
		l.sawList(len(cells) == 0)
	}
	return cells, l.s.b.setListEnd(p, end, seqRange{})
}

// probing tells whether a list without a remembered end is read by point
// lookups (probe) rather than by an iterator. Without TTL no sweep leaves
// gaps, so the elements are sequences 0 to n-1 and the first missing one
// ends the list. One lookup settles a new list, the most common one read
// without its end remembered, where an iterator seeks every level of the
// database and first spills the cache; but a list that holds elements costs
// a lookup per element, so the state probes only while most such lists
// have been empty.
func (l listStore) probing() bool { return l.s.spec.TTL == nil && l.s.emptyLists >= 0 }

// sawList counts a list read without a remembered end as empty or not.
func (l listStore) sawList(empty bool) {
	switch s := l.s; {
	case empty && s.emptyLists < 8:
		s.emptyLists++
	case !empty && s.emptyLists > -8:
		s.emptyLists--
	}
}

// probe reads a gapless list by point lookups of sequences 0, 1, ... until
// one is missing, which ends the list, or pointReadMax are found, when the
// rest is for an iterator to read.
func (l listStore) probe(p []byte, below bool) (cells []state.Cell, done bool, err error) {
	b := l.s.b
	for seq := range uint64(pointReadMax) {
		b.kbuf = binary.BigEndian.AppendUint64(append(b.kbuf[:0], p...), seq)
		found, err := b.getFrom(b.kbuf, below, func(v []byte) error {
			c, err := l.s.decodeCell(v)
			cells = append(cells, c)
			return err
		})
		if err != nil {
			return nil, false, err
		}
		if !found {
			return cells, true, b.setListEnd(p, seq, seqRange{})
		}
	}
	return cells, false, nil
}

// pointReadMax is the longest remembered list read element by element
// rather than by an iterator over the cache and what is below it, which
// spills the cache first.
const pointReadMax = 8

// getByPoint reads the list with prefix p, which is known to end before
// sequence end, without spilling the cache: each sequence from the cache
// where it holds it, the rest from below it, by a point lookup when one
// is missing (a lookup stops at the first level that holds its key and
// skips sstables by their bloom filters) and by an iterator when more are
// (one seek through every level beats a lookup each). A sequence held
// nowhere is a gap that the sweeper left.
func (l listStore) getByPoint(p []byte, end uint64) ([]state.Cell, error) {
	b := l.s.b
	below, err := b.listsBelow(p)
	if err != nil {
		return nil, err
	}
	var slots [pointReadMax]listSlot
	missing, lastMissing := 0, uint64(0)
	for seq := range end {
		b.kbuf = binary.BigEndian.AppendUint64(append(b.kbuf[:0], p...), seq)
		sl := &slots[seq]
		if e, ok := b.cache.lookup(b.kbuf); ok {
			sl.known, sl.found = true, e.present
			if e.present {
				if sl.c, err = l.s.decodeCell(e.val); err != nil {
					return nil, err
				}
			}
		} else if !below {
			sl.known = true
		} else {
			missing, lastMissing = missing+1, seq
		}
	}
	switch {
	case missing == 1:
		b.kbuf = binary.BigEndian.AppendUint64(append(b.kbuf[:0], p...), lastMissing)
		sl := &slots[lastMissing]
		if sl.found, err = b.get(b.kbuf, func(v []byte) (err error) {
			sl.c, err = l.s.decodeCell(v)
			return err
		}); err != nil {
			return nil, err
		}
	case missing > 1:
		if err := l.fillBelow(p, end, &slots); err != nil {
			return nil, err
		}
	}
	var cells []state.Cell
	for _, sl := range slots[:end] {
		if sl.found {
			cells = append(cells, sl.c)
		}
	}
	return cells, nil
}

// listSlot is one sequence of a list read by getByPoint: its element c when
// found, and whether that is settled (known) before looking below the cache.
type listSlot struct {
	c            state.Cell
	known, found bool
}

// fillBelow reads from below the cache the elements of the sequences
// before end that the cache does not hold.
func (l listStore) fillBelow(p []byte, end uint64, slots *[pointReadMax]listSlot) (err error) {
	b := l.s.b
	it, err := b.iterBelow(p, binary.BigEndian.AppendUint64(bytes.Clone(p), end))
	if err != nil {
		return err
	}
	defer b.closeIter(it, &err)
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) != len(p)+seqLen {
			return fmt.Errorf("%w: list element key of %d bytes", errKey, len(k))
		}
		sl := &slots[binary.BigEndian.Uint64(k[len(p):])]
		if sl.known {
			continue
		}
		if sl.c, err = l.s.decodeCell(it.Value()); err != nil {
			return err
		}
		sl.found = true
	}
	return it.Error()
}

// listEnds remembers where recently used lists end: per prefix, the
// sequence after its last element. A list is most often read and then
// appended to or replaced, and read again later (a timer's pending
// records), and the memo saves an append its seek for the last sequence
// and a read its iterator. An end may run high, never low: an element the
// sweeper deletes leaves a gap, which lists allow, while every write of
// list elements updates the memo and a restore clears it.
//
// It holds at most listMemoSize lists and forgets the one remembered
// first when full. The write cache holds no written element of a list the
// memo does not remember (the sweeper's deletions aside, which only make a
// list look longer below the cache), so that lastSeq can seek below the
// cache without spilling it: forgetting a list spills its elements, the
// sequences below its written bound, out of the cache.
type listEnds struct {
	ends map[string]listEnd
	// order holds the remembered prefixes in the order they came, a ring
	// whose oldest entry is at next once it is full.
	order []string
	next  int
}

type listEnd struct {
	end uint64
	// written is the range of sequences whose elements writes may have
	// left in the write cache since the list was remembered.
	written seqRange
}

// seqRange is the sequences [from, to); empty when from >= to.
type seqRange struct{ from, to uint64 }

func (r seqRange) union(o seqRange) seqRange {
	switch {
	case r.from >= r.to:
		return o
	case o.from >= o.to:
		return r
	}
	return seqRange{min(r.from, o.from), max(r.to, o.to)}
}

// listMemoSize bounds the memo, at about 100 bytes a list: large enough
// that lists read and appended to in rotation over some thousands of keys
// stay remembered, each remembered append saving a seek of several
// microseconds.
const listMemoSize = 16384

// of returns the end of the list with prefix p, if remembered.
func (m *listEnds) of(p []byte) (uint64, bool) {
	e, ok := m.ends[string(p)]
	return e.end, ok
}

// setListEnd remembers that the list with prefix p ends before sequence end
// and that the write cache may hold its elements of the sequences written.
func (b *Backend) setListEnd(p []byte, end uint64, written seqRange) error {
	m := &b.listEnds
	if e, ok := m.ends[string(p)]; ok {
		m.ends[string(p)] = listEnd{end: end, written: e.written.union(written)}
		return nil
	}
	if m.ends == nil {
		m.ends = make(map[string]listEnd)
	}
	k := string(p)
	var err error
	if len(m.order) < listMemoSize {
		m.order = append(m.order, k)
	} else {
		oldest := m.order[m.next]
		err = b.spillList(oldest, m.ends[oldest].written)
		delete(m.ends, oldest)
		m.order[m.next] = k
		m.next = (m.next + 1) % listMemoSize
	}
	m.ends[k] = listEnd{end: end, written: written}
	return err
}

// forgetListEnds empties the memo, spilling the cache first so that no
// forgotten list keeps elements there.
func (b *Backend) forgetListEnds() error {
	if err := b.spillAll(); err != nil {
		return err
	}
	m := &b.listEnds
	clear(m.ends)
	m.order, m.next = m.order[:0], 0
	return nil
}

// lastSeq finds the sequence of the last element of a list whose end is not
// remembered by a reverse seek, without reading the list. It seeks below the
// write cache, which holds no element of such a list that the sweeper has
// not deleted (see listEnds).
func (l listStore) lastSeq(p []byte) (seq uint64, ok bool, err error) {
	it, err := l.s.b.iterBelow(p, prefixEnd(p))
	if err != nil {
		return 0, false, err
	}
	defer l.s.b.closeIter(it, &err)
	if !it.Last() {
		return 0, false, it.Error()
	}
	k := it.Key()
	if len(k) != len(p)+seqLen {
		return 0, false, fmt.Errorf("%w: list element key of %d bytes", errKey, len(k))
	}
	return binary.BigEndian.Uint64(k[len(p):]), true, nil
}

func (l listStore) Append(ns []byte, cells ...state.Cell) error {
	if len(cells) == 0 {
		return nil
	}
	p, err := l.prefix(ns)
	if err != nil {
		return err
	}
	b := l.s.b
	next, known := b.listEnds.of(p)
	below := true
	if !known {
		if below, err = b.listsBelow(p); err != nil {
			return err
		}
	}
	if !known && (!below || l.probing()) {
		// A missing first element settles where a new list starts.
		b.kbuf = binary.BigEndian.AppendUint64(append(b.kbuf[:0], p...), 0)
		found, err := b.getFrom(b.kbuf, below, func([]byte) error { return nil })
		if err != nil {
			return err
		}
		known = !found
		l.sawList(!found)
	}
	if !known {
		last, ok, err := l.lastSeq(p)
		if err != nil {
			return err
		}
		if ok {
			next = last + 1
		}
	}
	end := next + uint64(len(cells))
	// After an error the end is unknown, but no written element may
	// escape the memo.
	err = l.write(p, next, cells)
	return errors.Join(err, l.s.b.setListEnd(p, end, seqRange{next, end}))
}

// Replace overwrites sequences 0..n-1 and deletes the elements after them,
// found by the list's end. It uses point deletes rather than a range
// deletion: range tombstones sit in the memtable and slow down every
// iterator created until the next flush, and a list is replaced on every
// read of an OnReadAndWrite TTL state.
func (l listStore) Replace(ns []byte, cells []state.Cell) error {
	p, err := l.prefix(ns)
	if err != nil {
		return err
	}
	b, n := l.s.b, uint64(len(cells))
	end, known := b.listEnds.of(p)
	if !known {
		below, err := b.listsBelow(p)
		if err != nil {
			return err
		}
		known = !below
	}
	if !known {
		last, ok, err := l.lastSeq(p)
		if err != nil {
			return err
		}
		if end = 0; ok {
			end = last + 1
		}
	}
	err = l.write(p, 0, cells)
	for seq := n; seq < end && err == nil; seq++ {
		b.kbuf = binary.BigEndian.AppendUint64(append(b.kbuf[:0], p...), seq)
		if err = b.del(b.kbuf); err == nil {
			err = b.commitIfFull()
		}
	}
	return errors.Join(err, b.setListEnd(p, n, seqRange{0, max(n, end)}))
}

// write stores cells from sequence first on.
func (l listStore) write(p []byte, first uint64, cells []state.Cell) error {
	b := l.s.b
	for i, c := range cells {
		var err error
		if b.vbuf, err = l.s.appendCell(b.vbuf[:0], c); err != nil {
			return err
		}
		b.kbuf = binary.BigEndian.AppendUint64(append(b.kbuf[:0], p...), first+uint64(i))
		if err := b.set(b.kbuf, b.vbuf); err != nil {
			return err
		}
		if err := b.commitIfFull(); err != nil {
			return err
		}
	}
	return nil
}

// deleteRange deletes every key in [lower, upper). The write batch cannot be
// committed under the iterator that finds the keys, so a range larger than
// the batch's bound is deleted in rounds, each with an iterator of its own.
func (b *Backend) deleteRange(lower, upper []byte) error {
	for {
		next, err := b.deleteSome(lower, upper)
		if err != nil {
			return err
		}
		if err := b.commitIfFull(); err != nil || next == nil {
			return err
		}
		lower = next
	}
}

// deleteSome deletes keys of [lower, upper) until the write batch is full,
// and returns where to go on from, nil when the range is done.
func (b *Backend) deleteSome(lower, upper []byte) (next []byte, err error) {
	it, err := b.iterRange(lower, upper)
	if err != nil {
		return nil, err
	}
	defer b.closeIter(it, &err)
	for it.First(); it.Valid(); it.Next() {
		if err := b.del(it.Key()); err != nil {
			return nil, err
		}
		// Only with no other iterator open can the batch be committed.
		if b.full() && b.openIters == 1 {
			// key+0x00 is the smallest key after key.
			return append(bytes.Clone(it.Key()), 0), nil
		}
	}
	return nil, it.Error()
}
