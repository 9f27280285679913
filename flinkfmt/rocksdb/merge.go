package rocksdb

import (
	"bytes"
	"container/heap"
	"errors"

	"github.com/stateproc/stateproc/flinkfmt/rocksdb/sst"
)

// The string-append merge operators: the one Flink configures
// ("stringappendtest", StringAppendTESTOperator) and its associative
// sibling, whose full merge is the same.
const (
	StringAppendTESTOperator = "StringAppendTESTOperator"
	StringAppendOperator     = "StringAppendOperator"
)

// DefaultDelimiter is what StringAppendTESTOperator joins with when the
// OPTIONS file names no delimiter: Flink's list-element separator.
var DefaultDelimiter = []byte{','}

// ColumnFamily is the tables of one column family, as one snapshot of a
// RocksDB instance lists them (one Flink keyed-state handle), to be read as
// the column family's current contents.
type ColumnFamily struct {
	Name string
	// MaxValueSize bounds the value of one user key after its merge
	// operands are joined (0: no bound). Each operand is bounded by its
	// block, but a key may have any number of them.
	MaxValueSize int
	tables       []*sst.Table
	frags        []fragment
	delimiter    []byte
	// appendOp: the tables name a string-append merge operator; merge
	// operands of any other operator are refused when met.
	appendOp bool
	mergeOp  string
}

// NewColumnFamily checks that the tables belong to one column family and
// reads their range tombstones. delimiter is the string-append operator's
// delimiter, nil for the default ','.
func NewColumnFamily(tables []*sst.Table, delimiter []byte) (*ColumnFamily, error) {
	if len(tables) == 0 {
		return nil, errors.New("rocksdb: a column family needs at least one table")
	}
	if delimiter == nil {
		delimiter = DefaultDelimiter
	}
	first := tables[0].Properties()
	cf := &ColumnFamily{Name: first.ColumnFamilyName, tables: tables, delimiter: delimiter, mergeOp: first.MergeOperator}
	var ts []sst.Tombstone
	for _, t := range tables {
		p := t.Properties()
		if p.ColumnFamilyName != cf.Name || p.ColumnFamilyID != first.ColumnFamilyID {
			return nil, sst.At(t.Name(), -1, sst.Corruptf("column family %q (id %d), not %q (id %d) as %s",
				p.ColumnFamilyName, p.ColumnFamilyID, cf.Name, first.ColumnFamilyID, tables[0].Name()))
		}
		if p.MergeOperator != cf.mergeOp {
			return nil, sst.At(t.Name(), -1, sst.Corruptf("merge operator %q, not %q as %s", p.MergeOperator, cf.mergeOp, tables[0].Name()))
		}
		if p.ExternalFileVersion != 0 && len(tables) > 1 {
			// An ingested table's keys carry sequence number 0; its real
			// place among the others is recorded only in the MANIFEST.
			return nil, sst.At(t.Name(), -1, sst.Unsupportedf("ingested (external) table among %d of column family %q", len(tables), cf.Name))
		}
		more, err := t.RangeTombstones()
		if err != nil {
			return nil, err
		}
		ts = append(ts, more...)
	}
	cf.appendOp = cf.mergeOp == StringAppendTESTOperator || cf.mergeOp == StringAppendOperator
	cf.frags = fragmentTombstones(ts)
	return cf, nil
}

// Group opens one ColumnFamily per column family name among tables, in
// order of first appearance, with the delimiters opts names (opts may be
// nil).
func Group(tables []*sst.Table, opts *Options) ([]*ColumnFamily, error) {
	var names []string
	byName := map[string][]*sst.Table{}
	for _, t := range tables {
		n := t.Properties().ColumnFamilyName
		if _, ok := byName[n]; !ok {
			names = append(names, n)
		}
		byName[n] = append(byName[n], t)
	}
	var out []*ColumnFamily
	for _, n := range names {
		var delim []byte
		if opts != nil {
			if o, ok := opts.ColumnFamily(n); ok {
				delim = o.Delimiter
			}
		}
		cf, err := NewColumnFamily(byName[n], delim)
		if err != nil {
			return nil, err
		}
		out = append(out, cf)
	}
	return out, nil
}

// Tables are the column family's tables.
func (cf *ColumnFamily) Tables() []*sst.Table { return cf.tables }

// Iter yields the column family's live user keys in ascending order, each
// once, with its current value: the newest entry over all tables wins;
// point and range deletions hide what is older; merge operands are joined
// oldest first onto the newest value below them, or onto nothing. It holds
// one data block per table, the versions of one user key and the
// column family's range tombstones in memory.
type Iter struct {
	cf      *ColumnFamily
	srcs    []*source
	h       srcHeap
	tombs   tombCursor
	upper   []byte
	key     []byte
	value   []byte
	base    []byte
	ops     []byte // merge operands, newest first, back to back
	opEnds  []int
	started bool
	err     error
}

type source struct {
	it  *sst.Iter
	idx int
}

// NewIter returns an iterator; position it with First, SeekGE or
// SeekPrefix.
func (cf *ColumnFamily) NewIter() *Iter {
	m := &Iter{cf: cf, tombs: tombCursor{frags: cf.frags}}
	for i, t := range cf.tables {
		m.srcs = append(m.srcs, &source{it: t.NewIter(), idx: i})
	}
	return m
}

// First positions at the first live key.
func (m *Iter) First() bool {
	return m.position(nil, nil, func(it *sst.Iter) bool { return it.First() })
}

// SeekGE positions at the first live key at least lower and stops before
// upper (nil: no bound).
func (m *Iter) SeekGE(lower, upper []byte) bool {
	return m.position(lower, upper, func(it *sst.Iter) bool { return it.SeekGE(lower) })
}

// SeekPrefix positions at the first live key with the prefix and yields
// only such keys: with a Flink key-group prefix, one key group.
func (m *Iter) SeekPrefix(prefix []byte) bool {
	return m.SeekGE(prefix, prefixEnd(prefix))
}

// prefixEnd is the smallest key greater than every key with the prefix, or
// nil when there is none (all 0xff).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func (m *Iter) position(lower, upper []byte, seek func(*sst.Iter) bool) bool {
	if m.err != nil {
		return false
	}
	m.upper = bytes.Clone(upper)
	m.h = m.h[:0]
	for _, s := range m.srcs {
		if seek(s.it) {
			m.h = append(m.h, s)
		} else if err := s.it.Err(); err != nil {
			return m.fail(err)
		}
	}
	heap.Init(&m.h)
	m.tombs.seek(lower)
	m.started = true
	return m.Next()
}

// Next moves to the next live key.
func (m *Iter) Next() bool {
	if m.err != nil || !m.started {
		return false
	}
	for len(m.h) > 0 {
		uk := m.h[0].it.Key().UserKey
		if m.upper != nil && bytes.Compare(uk, m.upper) >= 0 {
			break
		}
		m.key = append(m.key[:0], uk...)
		live, err := m.resolve()
		if err != nil {
			return m.fail(err)
		}
		if live {
			return true
		}
	}
	m.started = false
	return false
}

// resolve consumes every entry of user key m.key from the heap and
// computes its value. It reports whether the key is live.
func (m *Iter) resolve() (bool, error) {
	cover := m.tombs.coverSeq(m.key)
	m.ops, m.opEnds = m.ops[:0], m.opEnds[:0]
	hasBase, done := false, false
	var prevSeq uint64
	prevTable := ""
	for len(m.h) > 0 {
		s := m.h[0]
		k := s.it.Key()
		if !bytes.Equal(k.UserKey, m.key) {
			break
		}
		name := m.cf.tables[s.idx].Name()
		if prevTable != "" && k.Seq == prevSeq {
			return false, sst.At(name, -1, sst.Corruptf("user key %q has sequence number %d here and in %s", m.key, k.Seq, prevTable))
		}
		prevSeq, prevTable = k.Seq, name
		if !done {
			switch {
			case k.Seq < cover:
				done = true // a range tombstone deleted this and all older
			case k.Kind == sst.KindSet:
				m.base = append(m.base[:0], s.it.Value()...)
				hasBase, done = true, true
			case k.Kind == sst.KindMerge:
				if !m.cf.appendOp {
					return false, sst.At(name, -1, sst.Unsupportedf("merge operand of user key %q with merge operator %q", m.key, m.cf.mergeOp))
				}
				m.ops = append(m.ops, s.it.Value()...)
				m.opEnds = append(m.opEnds, len(m.ops))
				if max := m.cf.MaxValueSize; max > 0 && len(m.ops)+(len(m.opEnds)-1)*len(m.cf.delimiter) > max {
					return false, sst.At(name, -1, sst.Unsupportedf("the merge operands of user key %q join to more than %d bytes", m.key, max))
				}
			default: // DELETE, SINGLEDEL
				done = true
			}
		}
		if s.it.Next() {
			heap.Fix(&m.h, 0)
		} else {
			if err := s.it.Err(); err != nil {
				return false, err
			}
			heap.Pop(&m.h)
		}
	}
	switch {
	case len(m.opEnds) == 0 && !hasBase:
		return false, nil
	case len(m.opEnds) == 0:
		m.value = append(m.value[:0], m.base...)
		return true, nil
	}
	// StringAppendTESTOperator's full merge: the base value if there is
	// one, then each operand oldest first, a delimiter between any two.
	m.value = m.value[:0]
	if hasBase {
		m.value = append(append(m.value, m.base...), m.cf.delimiter...)
	}
	for i := len(m.opEnds) - 1; i >= 0; i-- {
		start := 0
		if i > 0 {
			start = m.opEnds[i-1]
		}
		m.value = append(m.value, m.ops[start:m.opEnds[i]]...)
		if i > 0 {
			m.value = append(m.value, m.cf.delimiter...)
		}
	}
	return true, nil
}

// Key is the current user key; Key and Value are valid until the iterator
// moves.
func (m *Iter) Key() []byte { return m.key }

// Value is the current key's value.
func (m *Iter) Value() []byte { return m.value }

// Err is the error that stopped the iterator, if any.
func (m *Iter) Err() error { return m.err }

// Close releases the tables' iterators.
func (m *Iter) Close() error {
	for _, s := range m.srcs {
		s.it.Close()
	}
	m.srcs, m.h = nil, nil
	return nil
}

func (m *Iter) fail(err error) bool {
	if m.err == nil {
		m.err = err
	}
	m.started = false
	return false
}

// srcHeap orders the tables' iterators by their current internal key, then
// by table order so that results do not depend on the heap's history.
type srcHeap []*source

func (h srcHeap) Len() int { return len(h) }
func (h srcHeap) Less(i, j int) bool {
	a, b := h[i].it.Key(), h[j].it.Key()
	if c := bytes.Compare(a.UserKey, b.UserKey); c != 0 {
		return c < 0
	}
	if a.Seq != b.Seq {
		return a.Seq > b.Seq
	}
	if a.Kind != b.Kind {
		return a.Kind > b.Kind
	}
	return h[i].idx < h[j].idx
}
func (h srcHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *srcHeap) Push(x any)   { *h = append(*h, x.(*source)) }
func (h *srcHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	*h = old[:len(old)-1]
	return s
}
