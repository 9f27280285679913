package diff

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/stateproc/stateproc/savepoint"
)

// sortedSegment is one segment of a source whose entries come in another
// order than the merge's (savepoint.Layout.Unsorted: Apache Flink's), read
// whole and sorted: memory holds the segment, one state's entries in one
// key group, as Flink's heap backend itself holds a key group to restore
// it. The sort is stable, so a list's elements keep their order.
type sortedSegment struct {
	// data holds the entries' bytes; an entry's parts are spans of it.
	data    []byte
	entries []sortedEntry
	next    int
	e       savepoint.Entry
}

type sortedEntry struct {
	key, ns, mk, value span32
	kg                 int
	ts                 int64
	hasMK              bool // a map state's entry
}

type span32 struct{ at, n uint32 }

// maxSorted bounds the bytes of one sorted segment: its spans are 32-bit.
const maxSorted = 1<<32 - 1

func (s *sortedSegment) part(p span32) []byte { return s.data[p.at : p.at+p.n : p.at+p.n] }

// load reads it to its end, which checks the segment against its figures,
// closes it and sorts what it read.
func (s *sortedSegment) load(it savepoint.EntryIterator, timers bool) error {
	s.data, s.entries, s.next = s.data[:0], s.entries[:0], 0
	add := func(b []byte) span32 {
		at := len(s.data)
		s.data = append(s.data, b...)
		return span32{uint32(at), uint32(len(b))}
	}
	for it.Next() {
		e := it.Entry()
		if len(s.data)+len(e.Key)+len(e.Namespace)+len(e.MapKey)+len(e.Value) > maxSorted {
			it.Close()
			return fmt.Errorf("diff: one key group of one state holds more than %d bytes in a layout that does not sort them, more than diff sorts", maxSorted)
		}
		s.entries = append(s.entries, sortedEntry{key: add(e.Key), ns: add(e.Namespace), mk: add(e.MapKey), value: add(e.Value),
			kg: e.KeyGroup, ts: e.Timestamp, hasMK: e.MapKey != nil})
	}
	err := cmp.Or(it.Err(), it.Close())
	if err != nil {
		return err
	}
	if timers {
		slices.SortStableFunc(s.entries, func(a, b sortedEntry) int {
			return cmp.Or(cmp.Compare(a.ts, b.ts), bytes.Compare(s.part(a.key), s.part(b.key)), bytes.Compare(s.part(a.ns), s.part(b.ns)))
		})
		return nil
	}
	slices.SortStableFunc(s.entries, func(a, b sortedEntry) int {
		return cmp.Or(bytes.Compare(s.part(a.key), s.part(b.key)), bytes.Compare(s.part(a.ns), s.part(b.ns)), bytes.Compare(s.part(a.mk), s.part(b.mk)))
	})
	return nil
}

func (s *sortedSegment) Next() bool {
	if s.next >= len(s.entries) {
		return false
	}
	r := &s.entries[s.next]
	s.next++
	s.e = savepoint.Entry{KeyGroup: r.kg, Key: s.part(r.key), Namespace: s.part(r.ns), Value: s.part(r.value), Timestamp: r.ts}
	if r.hasMK {
		s.e.MapKey = s.part(r.mk)
	}
	return true
}

func (s *sortedSegment) Entry() *savepoint.Entry { return &s.e }
func (s *sortedSegment) Err() error              { return nil }

// Close keeps the buffers for the next segment.
func (s *sortedSegment) Close() error { return nil }
