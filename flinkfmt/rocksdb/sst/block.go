package sst

import (
	"encoding/binary"
	"math"
)

// A block is RocksDB's sorted key-value block: entries whose keys share a
// prefix with the previous key, then an array of restart offsets (entries
// stored with their full key), then the number of restarts. The same layout
// holds data, index, metaindex, properties and range-deletion blocks:
//
//	entry:   varint32 shared, varint32 non_shared, varint32 value_length,
//	         key[shared:] (non_shared bytes), value
//	trailer: fixed32 restart[num_restarts], fixed32 num_restarts
//
// Index blocks of format version 4 and later whose properties say
// "index.value.is.delta.encoded" omit value_length: the value is a block
// handle, written in full where the entry shares no key bytes and otherwise
// as the signed difference of its size from the previous handle's, its
// offset following that block and its trailer.

// dataBlockHashBit marks, in num_restarts, a data block with a hash index
// behind its restart array (data_block_index_type kDataBlockBinaryAndHash).
const dataBlockHashBit = 1 << 31

// blockIter walks the entries of one block. Every offset, varint and
// length is checked against the block before it is used; each problem
// becomes an error located at the block.
type blockIter struct {
	loc         location
	data        []byte
	restarts    int // offset of the restart array: the end of the entries
	numRestarts int
	// deltaHandles: values are delta-encoded block handles (see above).
	deltaHandles bool
	// cmp, when set, must find every key greater than the one before it.
	cmp func(a, b []byte) int

	off, next  int // current entry and the one after it
	restartIdx int // restart interval of the current entry
	key, prev  []byte
	val        []byte
	handle     BlockHandle // current value when deltaHandles
	valid      bool
	ordered    bool // it.prev holds the previous key (false right after a seek)
	err        error
}

// location names a block for error messages.
type location struct {
	file string
	off  int64
	what string
}

func (l location) corrupt(format string, args ...any) error {
	return At(l.file, l.off, Corruptf(l.what+": "+format, args...))
}

func (l location) unsupported(format string, args ...any) error {
	return At(l.file, l.off, Unsupportedf(l.what+": "+format, args...))
}

// init checks the restart array of data and positions the iterator before
// the first entry.
func (it *blockIter) init(loc location, data []byte, deltaHandles bool, cmp func(a, b []byte) int) error {
	*it = blockIter{loc: loc, key: it.key[:0], prev: it.prev[:0], deltaHandles: deltaHandles, cmp: cmp}
	if len(data) < 4 {
		return loc.corrupt("%d bytes, too short for a restart count", len(data))
	}
	packed := binary.LittleEndian.Uint32(data[len(data)-4:])
	if packed&dataBlockHashBit != 0 {
		return loc.unsupported("data block hash index")
	}
	n := int(packed)
	if n > (len(data)-4)/4 {
		return loc.corrupt("%d restart points do not fit in %d bytes", n, len(data))
	}
	restarts := len(data) - 4 - 4*n
	if n == 0 && restarts != 0 {
		return loc.corrupt("%d bytes of entries without a restart point", restarts)
	}
	prev := -1
	for i := 0; i < n; i++ {
		r := int(binary.LittleEndian.Uint32(data[restarts+4*i:]))
		if restarts == 0 && n == 1 && r == 0 {
			break // RocksDB's empty block: one restart point, no entries
		}
		if r >= restarts || r <= prev || (i == 0 && r != 0) {
			return loc.corrupt("restart point %d at %d is out of order or past the entries (%d bytes)", i, r, restarts)
		}
		prev = r
	}
	it.data, it.restarts, it.numRestarts = data, restarts, n
	return nil
}

func (it *blockIter) restart(i int) int {
	return int(binary.LittleEndian.Uint32(it.data[it.restarts+4*i:]))
}

// first positions at the first entry.
func (it *blockIter) first() bool {
	if it.err != nil || it.restarts == 0 {
		it.valid = false
		return false
	}
	it.key = it.key[:0]
	it.ordered = false
	it.restartIdx = 0
	return it.decode(0)
}

// nextEntry moves to the entry after the current one.
func (it *blockIter) nextEntry() bool {
	if !it.valid {
		return false
	}
	if it.next >= it.restarts {
		it.valid = false
		return false
	}
	if it.restartIdx+1 < it.numRestarts && it.next == it.restart(it.restartIdx+1) {
		it.restartIdx++
	}
	it.ordered = true
	return it.decode(it.next)
}

// seekGE positions at the first entry whose key is at least target under
// cmp: a binary search over the restart points for the last one whose key
// is less than target, then a scan.
func (it *blockIter) seekGE(target []byte, cmp func(a, b []byte) int) bool {
	if it.err != nil || it.restarts == 0 {
		it.valid = false
		return false
	}
	lo, hi := 0, it.numRestarts-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		k, ok := it.restartKey(mid)
		if !ok {
			it.valid = false
			return false
		}
		if cmp(k, target) < 0 {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	it.key = it.key[:0]
	it.ordered = false
	it.restartIdx = lo
	for ok := it.decode(it.restart(lo)); ok; ok = it.nextEntry() {
		if cmp(it.key, target) >= 0 {
			return true
		}
	}
	return false
}

// restartKey is the full key stored at restart point i, for the binary
// search; it aliases the block.
func (it *blockIter) restartKey(i int) ([]byte, bool) {
	p := it.restart(i)
	shared, p, ok := it.uvarint32(p)
	if !ok {
		return nil, false
	}
	nonShared, p, ok := it.uvarint32(p)
	if !ok {
		return nil, false
	}
	if !it.deltaHandles {
		if _, p, ok = it.uvarint32(p); !ok {
			return nil, false
		}
	}
	if shared != 0 {
		it.fail(it.loc.corrupt("entry at %d: restart point shares %d key bytes", it.restart(i), shared))
		return nil, false
	}
	if nonShared > it.restarts-p {
		it.fail(it.loc.corrupt("entry at %d: key of %d bytes runs past the entries", it.restart(i), nonShared))
		return nil, false
	}
	return it.data[p : p+nonShared], true
}

// decode reads the entry at off. The previous entry's key is in it.key.
func (it *blockIter) decode(off int) bool {
	p := off
	shared, p, ok := it.uvarint32(p)
	if !ok {
		return false
	}
	nonShared, p, ok := it.uvarint32(p)
	if !ok {
		return false
	}
	valueLen := 0
	if !it.deltaHandles {
		if valueLen, p, ok = it.uvarint32(p); !ok {
			return false
		}
	}
	atRestart := off == it.restart(it.restartIdx)
	switch {
	case atRestart && shared != 0:
		return it.fail(it.loc.corrupt("entry at %d: restart point shares %d key bytes", off, shared))
	case shared > len(it.key):
		return it.fail(it.loc.corrupt("entry at %d: shares %d bytes of a %d-byte key", off, shared, len(it.key)))
	case nonShared > it.restarts-p:
		return it.fail(it.loc.corrupt("entry at %d: key of %d bytes runs past the entries", off, nonShared))
	}
	it.prev, it.key = it.key, it.prev
	it.key = append(append(it.key[:0], it.prev[:shared]...), it.data[p:p+nonShared]...)
	p += nonShared
	if it.deltaHandles {
		n, ok := it.decodeHandle(off, p, shared != 0)
		if !ok {
			return false
		}
		it.val = it.data[p : p+n]
		p += n
	} else {
		if valueLen > it.restarts-p {
			return it.fail(it.loc.corrupt("entry at %d: value of %d bytes runs past the entries", off, valueLen))
		}
		it.val = it.data[p : p+valueLen]
		p += valueLen
	}
	if it.cmp != nil && it.ordered && it.cmp(it.key, it.prev) <= 0 {
		return it.fail(it.loc.corrupt("entry at %d: key %q is not greater than the one before it", off, it.key))
	}
	it.off, it.next, it.valid = off, p, true
	return true
}

// decodeHandle reads a delta-encoded index value at p and returns its size.
func (it *blockIter) decodeHandle(off, p int, delta bool) (int, bool) {
	b := it.data[p:it.restarts]
	if !delta {
		h, n := decodeHandle(b)
		if n == 0 {
			return 0, it.fail(it.loc.corrupt("entry at %d: bad block handle", off))
		}
		it.handle = h
		return n, true
	}
	d, n := binary.Varint(b)
	if n <= 0 {
		return 0, it.fail(it.loc.corrupt("entry at %d: bad block size delta", off))
	}
	prev := it.handle
	size := int64(prev.Length) + d
	if prev.Length > math.MaxInt64 || (d > 0 && size < 0) || size < 0 ||
		prev.Offset > math.MaxUint64-prev.Length-blockTrailerLen {
		return 0, it.fail(it.loc.corrupt("entry at %d: block size delta %d out of range", off, d))
	}
	it.handle = BlockHandle{Offset: prev.Offset + prev.Length + blockTrailerLen, Length: uint64(size)}
	return n, true
}

// uvarint32 reads a varint32 at p within the entries.
func (it *blockIter) uvarint32(p int) (int, int, bool) {
	if p < it.restarts {
		if b := it.data[p]; b < 0x80 {
			return int(b), p + 1, true
		}
	}
	v, n := binary.Uvarint(it.data[p:it.restarts])
	if n <= 0 || v > math.MaxUint32 {
		return 0, 0, it.fail(it.loc.corrupt("entry near %d: bad varint", p))
	}
	return int(v), p + n, true
}

func (it *blockIter) fail(err error) bool {
	if it.err == nil {
		it.err = err
	}
	it.valid = false
	return false
}
