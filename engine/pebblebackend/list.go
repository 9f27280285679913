package pebblebackend

import (
	"bytes"
	"encoding/binary"
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
	it, err := l.s.b.iter(p)
	if err != nil {
		return nil, err
	}
	defer l.s.b.closeIter(it, &err)
	end := uint64(0)
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
	l.s.b.lastList.set(p, end)
	return cells, nil
}

// listEnd remembers where the list read or written last ends: its prefix
// and the sequence after its last element. A list is most often read and
// then appended to or replaced in the same record, and the memo saves that
// write a seek. It may run high, never low: an element the sweeper deletes
// leaves a gap, which lists allow, while every write of list elements
// updates the memo and a restore clears it.
type listEnd struct {
	prefix []byte
	end    uint64
	ok     bool
}

func (m *listEnd) set(p []byte, end uint64) {
	m.prefix, m.end, m.ok = append(m.prefix[:0], p...), end, true
}

// of returns the end of the list with prefix p, if remembered.
func (m *listEnd) of(p []byte) (uint64, bool) {
	if !m.ok || !bytes.Equal(m.prefix, p) {
		return 0, false
	}
	return m.end, true
}

func (m *listEnd) clear() { m.ok = false }

// lastSeq finds the sequence of the last element by a reverse seek, without
// reading the list.
func (l listStore) lastSeq(p []byte) (seq uint64, ok bool, err error) {
	it, err := l.s.b.iter(p)
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
	next, known := l.s.b.lastList.of(p)
	if !known {
		last, ok, err := l.lastSeq(p)
		if err != nil {
			return err
		}
		if ok {
			next = last + 1
		}
	}
	if err := l.write(p, next, cells, nil); err != nil {
		l.s.b.lastList.clear()
		return err
	}
	l.s.b.lastList.set(p, next+uint64(len(cells)))
	return nil
}

// Replace overwrites sequences 0..n-1 and deletes the elements after them.
// It uses point deletes rather than a range deletion: range tombstones sit in
// the memtable and slow down every iterator created until the next flush,
// and a list is replaced on every read of an OnReadAndWrite TTL state.
func (l listStore) Replace(ns []byte, cells []state.Cell) error {
	p, err := l.prefix(ns)
	if err != nil {
		return err
	}
	b, n := l.s.b, uint64(len(cells))
	end, known := b.lastList.of(p)
	b.lastList.clear()
	if !known {
		err = l.write(p, 0, cells, binary.BigEndian.AppendUint64(p[:len(p):len(p)], n))
	} else if err = l.write(p, 0, cells, nil); err == nil {
		// The elements past the new ones are known without a seek.
		for seq := n; seq < end && err == nil; seq++ {
			b.kbuf = binary.BigEndian.AppendUint64(append(b.kbuf[:0], p...), seq)
			if err = b.del(b.kbuf); err == nil {
				err = b.commitIfFull()
			}
		}
	}
	if err != nil {
		return err
	}
	b.lastList.set(p, n)
	return nil
}

// write stores cells from sequence first on, and when staleFrom is set
// deletes every element of the list from that key on.
func (l listStore) write(p []byte, first uint64, cells []state.Cell, staleFrom []byte) error {
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
	if staleFrom != nil {
		return b.deleteRange(staleFrom, prefixEnd(p))
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
