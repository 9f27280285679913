package sst

import (
	"bytes"
)

// Iter walks a table's point entries in internal-key order: user keys
// ascending, the newest entry of a user key first. It reads one data block
// at a time. It checks that every key is greater than the one before it and
// lies within its index entry's bounds, so a corrupt table cannot make it
// return entries out of order. Positioning methods return whether an entry
// is there; after false, Err tells an error from the end.
type Iter struct {
	t     *Table
	index blockIter
	data  blockIter
	bufs  buffers
	// lastKey is the last key of the previous data block, when the
	// iterator came to the current block by Next.
	lastKey []byte
	hasLast bool
	target  []byte
	key     InternalKey
	valid   bool
	err     error
	// loaded is the handle of the data block in data, when hasLoaded: a
	// seek into the block already there (the next key group's seek after
	// a scan of the previous one) reuses it instead of reading it again.
	loaded    BlockHandle
	hasLoaded bool
}

// NewIter returns an iterator positioned before the first entry.
func (t *Table) NewIter() *Iter {
	it := &Iter{t: t}
	if err := it.index.init(t.indexLoc, t.index, t.props.IndexValueIsDeltaEncoded, t.indexCompare()); err != nil {
		it.err = err
	}
	return it
}

// indexCompare orders index keys: user keys when the properties say so,
// internal keys otherwise.
func (t *Table) indexCompare() func(a, b []byte) int {
	if t.props.IndexKeyIsUserKey {
		return bytes.Compare
	}
	return compareInternal
}

// First positions at the table's first entry.
func (it *Iter) First() bool {
	if it.err != nil {
		return false
	}
	it.hasLast = false
	if !it.index.first() {
		return it.stop(it.index.err)
	}
	if !it.loadBlock() {
		return false
	}
	if it.data.first() {
		return it.entry()
	}
	if it.data.err != nil {
		return it.stop(it.data.err)
	}
	return it.nextBlock()
}

// SeekGE positions at the first entry whose user key is at least userKey.
func (it *Iter) SeekGE(userKey []byte) bool {
	if it.err != nil {
		return false
	}
	it.hasLast = false
	it.target = seekKey(it.target, userKey)
	target := it.target
	if it.t.props.IndexKeyIsUserKey {
		target = userKey
	}
	if !it.index.seekGE(target, it.t.indexCompare()) {
		return it.stop(it.index.err)
	}
	if !it.loadBlock() {
		return false
	}
	ok := it.data.seekGE(it.target, compareInternal)
	if ok {
		ok = it.entry()
	} else if it.data.err != nil {
		return it.stop(it.data.err)
	} else {
		ok = it.nextBlock()
	}
	// A separator that overlaps the next block could leave the iterator
	// short of target; step up to it rather than return a smaller key.
	for ok && bytes.Compare(it.key.UserKey, userKey) < 0 {
		ok = it.Next()
	}
	return ok
}

// Next moves to the next entry.
func (it *Iter) Next() bool {
	if !it.valid {
		return false
	}
	if it.data.nextEntry() {
		return it.entry()
	}
	if it.data.err != nil {
		return it.stop(it.data.err)
	}
	return it.nextBlock()
}

// Key is the current entry's key; it and Value stay valid until the
// iterator moves.
func (it *Iter) Key() InternalKey { return it.key }

// Value is the current entry's value.
func (it *Iter) Value() []byte { return it.data.val }

// Err is the error that stopped the iterator, if any.
func (it *Iter) Err() error { return it.err }

// Close releases the iterator's buffers.
func (it *Iter) Close() error {
	*it = Iter{t: it.t, err: it.err}
	return nil
}

// nextBlock moves to the first entry of the next non-empty data block.
func (it *Iter) nextBlock() bool {
	for {
		if len(it.data.key) > 0 {
			// The block ended: its last key must not pass its separator.
			if it.pastSeparator(it.data.key) {
				return it.stop(it.data.loc.corrupt("last key %q is past its index entry", it.data.key))
			}
			it.lastKey = append(it.lastKey[:0], it.data.key...)
			it.hasLast = true
		}
		if !it.index.nextEntry() {
			return it.stop(it.index.err)
		}
		if !it.loadBlock() {
			return false
		}
		if it.data.first() {
			return it.entry()
		}
		if it.data.err != nil {
			return it.stop(it.data.err)
		}
	}
}

// loadBlock reads the data block the index iterator points at.
func (it *Iter) loadBlock() bool {
	h := it.index.handle
	if !it.index.deltaHandles {
		var n int
		h, n = decodeHandle(it.index.val)
		if n == 0 || n != len(it.index.val) {
			return it.stop(it.index.loc.corrupt("entry at %d: bad block handle", it.index.off))
		}
	}
	loc := location{file: it.t.name, off: int64(h.Offset), what: "data block"}
	if it.hasLoaded && h == it.loaded {
		// The block's bytes are still in the buffers and were checked
		// when read.
		it.data.init(loc, it.data.data, false, compareInternal)
		return true
	}
	it.hasLoaded = false
	data, err := it.t.readBlock(h, loc, &it.bufs)
	if err != nil {
		return it.stop(err)
	}
	if err := it.data.init(loc, data, false, compareInternal); err != nil {
		return it.stop(err)
	}
	it.loaded, it.hasLoaded = h, true
	return true
}

// entry checks and parses the data iterator's current key.
func (it *Iter) entry() bool {
	d := &it.data
	k, err := parseKey(d.key)
	if err != nil {
		return it.stop(d.loc.corrupt("entry at %d: %v", d.off, err))
	}
	switch k.Kind {
	case KindSet, KindDelete, KindSingleDelete, KindMerge:
	case KindRangeDelete:
		return it.stop(d.loc.corrupt("entry at %d: range deletion in a data block", d.off))
	default:
		if name := kindName(k.Kind); name != "" {
			return it.stop(d.loc.unsupported("entry at %d: %s entry", d.off, name))
		}
		return it.stop(d.loc.corrupt("entry at %d: unknown entry %v", d.off, k.Kind))
	}
	if !d.ordered {
		// The first key of a block: it must follow the previous block's
		// last key and, as a separator is at most the next block's first
		// key, come after the previous separator's range.
		if it.hasLast && compareInternal(d.key, it.lastKey) <= 0 {
			return it.stop(d.loc.corrupt("first key %q is not greater than the previous block's last", d.key))
		}
		if it.pastSeparator(d.key) {
			return it.stop(d.loc.corrupt("first key %q is past its index entry", d.key))
		}
	}
	it.key, it.valid = k, true
	return true
}

// pastSeparator tells whether an internal key of the current data block
// sorts after the block's index entry, which bounds the block from above.
func (it *Iter) pastSeparator(k []byte) bool {
	sep := it.index.key
	if it.t.props.IndexKeyIsUserKey {
		u, _ := splitInternal(k)
		return bytes.Compare(u, sep) > 0
	}
	return compareInternal(k, sep) > 0
}

func (it *Iter) stop(err error) bool {
	if it.err == nil {
		it.err = err
	}
	it.valid = false
	return false
}
