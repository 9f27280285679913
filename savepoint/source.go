package savepoint

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/stateproc/stateproc/keygroup"
)

// Source is a savepoint or checkpoint, whatever its layout: the one way the
// engine's restore and every tool read keyed data, timers, operator and
// broadcast state. stateproc's own savepoints (snapshotfmt.Reader) and the
// engine's incremental checkpoints implement it; package layouts opens any
// of them. Its methods may be called from several goroutines at once,
// except Close.
type Source interface {
	// Layout says what the source is, for a report's header.
	Layout() Layout
	// Metadata is the savepoint's model, operator and broadcast state
	// included. Callers must not modify it.
	Metadata() *Metadata
	// Segments lists the segments of ref whose key groups lie in kgs, in
	// key-group order: one per key group that holds entries of ref. A ref
	// that Metadata does not have is an error.
	Segments(ctx context.Context, ref StateRef, kgs keygroup.Range) ([]Segment, error)
	// Entries iterates the entries of ref whose key groups lie in kgs, key
	// group by key group in ascending order, each in the order Entry gives.
	// Reading a key group to its end checks it against its segment's
	// figures. A ref that Metadata does not have is an error of the
	// iterator.
	Entries(ctx context.Context, ref StateRef, kgs keygroup.Range) EntryIterator
	// Close releases the source's files; iterators must be closed first.
	Close() error
}

// Layout says what a source is: which layout, in which version of it.
type Layout struct {
	// Name is the layout's: "stateproc savepoint", "stateproc incremental
	// checkpoint", "Apache Flink savepoint".
	Name string
	// Version is the layout's format version, numbered as the layout
	// numbers its versions.
	Version uint32
	// VersionName is what the layout calls its version ("metadata
	// version"); "format version" when empty.
	VersionName string
	// Releases names the releases that write this version ("Flink
	// 1.16–1.20"), when the layout is another project's.
	Releases string
	// Details are what else sets the source apart ("zstd").
	Details []string
	// Checks says what reading every entry checks, for a verification's
	// report, when it is not what stateproc's layouts check (checksums,
	// structure, index).
	Checks string
	// Unsorted says that a segment's entries may come in another order
	// than Entry's: by (key, namespace, map key) bytes, timers by (time,
	// key, namespace). Apache Flink's heap snapshots write keys in hash
	// table order, RocksDB orders them by the concatenated bytes, and timers
	// come in heap order. A tool that merges by Entry's order sorts such a
	// segment first.
	Unsorted bool
}

// String reads "stateproc savepoint, format version 1", or "Apache Flink
// savepoint, metadata version 4 (Flink 1.16–1.20)", with the details after.
func (l Layout) String() string {
	name := l.VersionName
	if name == "" {
		name = "format version"
	}
	s := fmt.Sprintf("%s, %s %d", l.Name, name, l.Version)
	if l.Releases != "" {
		s += " (" + l.Releases + ")"
	}
	if len(l.Details) > 0 {
		s += ", " + strings.Join(l.Details, ", ")
	}
	return s
}

// Segment is the entries of one keyed state or timer service in one key
// group, with the figures the layout keeps about them: what inspect reports
// without reading data, and what a rewrite copies as opaque bytes when it
// does not change them.
type Segment struct {
	Ref StateRef
	Stats
	// File, Offset and Length say where the layout stores the segment: File
	// is relative to the savepoint's directory, Length what the segment
	// takes there (compressed). File is empty when the entries lie in no
	// file of the layout's own, as in the databases of an incremental
	// checkpoint; Length is then Bytes, what a savepoint of them would
	// take before compression.
	File   string
	Offset int64
	Length int64
}

// AllSegments lists the segments of every keyed state and timer service of
// src, operator by operator, each ref's in key-group order.
func AllSegments(ctx context.Context, src Source) ([]Segment, error) {
	m := src.Metadata()
	var out []Segment
	for op := range m.Operators {
		for _, ref := range m.Refs(op) {
			segs, err := src.Segments(ctx, ref, keygroup.All(m.Operators[op].MaxParallelism))
			if err != nil {
				return nil, err
			}
			out = append(out, segs...)
		}
	}
	return out, nil
}

// SegmentEntries iterates the entries of seg.
func SegmentEntries(ctx context.Context, src Source, seg Segment) EntryIterator {
	return src.Entries(ctx, seg.Ref, keygroup.Range{Start: seg.KeyGroup, End: seg.KeyGroup})
}

// EntryIterator streams entries with a sticky error, as archive/tar's
// Reader does: Next until it returns false, then Err. It looks at its
// context every few thousand entries.
type EntryIterator interface {
	// Next advances to the next entry; it returns false at the end or on an
	// error.
	Next() bool
	// Entry returns the current entry. It and its slices are valid until the
	// next call of Next, and read-only.
	Entry() *Entry
	Err() error
	Close() error
}

// ValueBatcher is implemented by the iterators that can give, for a tool
// that needs nothing else of an entry, the sizes and TTL times of many
// values at once without filling an Entry. NextValues reads up to
// len(sizes) entries of a keyed state and stores each value's size in
// sizes; when the state has TTL, each value's last-modified time in
// lastModified, which must be as long, with those 8 bytes left out of the
// size. It returns how many entries it read, fewer than asked only at the
// end or on an error, which Err then returns.
type ValueBatcher interface {
	NextValues(sizes []int, lastModified []int64) int
}

// NextValues is ValueBatcher's NextValues for any iterator over a keyed
// state, ttl saying whether the state has TTL: the iterator's own when it
// has one, Next otherwise.
func NextValues(it EntryIterator, ttl bool, sizes []int, lastModified []int64) int {
	if b, ok := it.(ValueBatcher); ok {
		return b.NextValues(sizes, lastModified)
	}
	n := 0
	for n < len(sizes) && it.Next() {
		v := it.Entry().Value
		if ttl {
			// Every layout checks that a TTL value holds its timestamp.
			lastModified[n] = int64(binary.BigEndian.Uint64(v))
			v = v[8:]
		}
		sizes[n] = len(v)
		n++
	}
	return n
}

// Chain iterates the iterators that next returns, one after another, until
// next returns nil; it opens each only when the previous one is done.
func Chain(next func() EntryIterator) EntryIterator { return &chain{next: next} }

type chain struct {
	next func() EntryIterator
	cur  EntryIterator
	err  error
	done bool
}

func (c *chain) Next() bool {
	for c.err == nil && !c.done {
		if c.cur == nil {
			if c.cur = c.next(); c.cur == nil {
				c.done = true
				return false
			}
		}
		if c.cur.Next() {
			return true
		}
		c.err = c.cur.Err()
		if cerr := c.cur.Close(); c.err == nil {
			c.err = cerr
		}
		c.cur = nil
	}
	return false
}

func (c *chain) Entry() *Entry { return c.cur.Entry() }

func (c *chain) Err() error { return c.err }

func (c *chain) Close() error {
	c.done = true
	if c.cur == nil {
		return nil
	}
	err := c.cur.Close()
	c.cur = nil
	return err
}

// Failed returns an iterator that yields no entry and err.
func Failed(err error) EntryIterator { return failed{err} }

type failed struct{ err error }

func (failed) Next() bool    { return false }
func (failed) Entry() *Entry { return nil }
func (f failed) Err() error  { return f.err }
func (failed) Close() error  { return nil }

// Empty returns an iterator that yields no entry.
func Empty() EntryIterator { return failed{} }
