package snapshotfmt

import (
	"encoding/binary"
	"fmt"
)

// itemBatch is how many items NextItems counts per call of the reader's
// batched loop.
const itemBatch = 64

// NextItems reads a keyed state's segment a record at a time, for a caller
// that moves items as they are (rescale): the key and namespace of the
// next record, as many of its items as the current block holds, framed as
// FORMAT.md lays items out, and their count. Everything Next checks is
// checked, through the reader's batched loop where it can be. A record
// that continues in the next block comes in two calls with the same key
// and namespace, and a record in a block larger than the reader's window
// comes an item at a time. The slices are valid until the next call. It
// returns n = 0 at the end of the segment or on an error, which Err then
// returns.
func (it *Iterator) NextItems() (key, ns, items []byte, n int) {
	if it.err != nil || it.done {
		return nil, nil, nil, 0
	}
	if it.rr.timers() {
		it.err = fmt.Errorf("snapshotfmt: NextItems on the timers of %s, which have no items", it.seg.File)
		return nil, nil, nil, 0
	}
	if it.sizes == nil {
		it.sizes, it.times = make([]int, itemBatch), make([]int64, itemBatch)
	}
	for {
		if items, n = it.recordItems(); n > 0 {
			if it.untilCtx -= n; it.untilCtx <= 0 {
				it.untilCtx = ctxCheckEvery
				if err := it.ctx.Err(); err != nil {
					it.err = err
					return nil, nil, nil, 0
				}
			}
			return it.entry.Key, it.entry.Namespace, items, n
		}
		if !it.nextBlock() {
			it.br.endBlock()
			return nil, nil, nil, 0
		}
	}
}

// recordItems reads the items of the current record that the block holds,
// starting the next record first if the current one is done, and returns
// their bytes and count; 0 at the end of the block or on an error, which
// rr.failure reports.
func (it *Iterator) recordItems() ([]byte, int) {
	rr := it.rr
	d := &rr.d
	if d.err != nil || d.more > 0 && !rr.ensure() {
		return nil, 0
	}
	if rr.left == 0 && (d.remaining() == 0 || !rr.startRecord()) {
		return nil, 0
	}
	start := d.off
	if d.more > 0 {
		// ensure made the window hold the header and the first item, but
		// not necessarily more.
		if _, _, ok := rr.item(); !ok {
			return nil, 0
		}
		return d.buf[start:d.off], 1
	}
	n := 0
	for rr.left > 0 {
		k := rr.values(it.sizes[:min(uint64(len(it.sizes)), rr.left)], it.times)
		if k == 0 {
			if _, _, ok := rr.item(); !ok {
				return nil, 0
			}
			k = 1
		}
		n += k
	}
	return d.buf[start:d.off], n
}

// FilterItems appends to dst the items of items, framed as NextItems gives
// them, whose last-modified time keep accepts, and returns dst and how many
// items it appended. The items are those of a value, list or map state with
// TTL (mapState says which layout), each value led by its 8-byte time; they
// are copied as they are, in runs. It takes items that a reader has checked
// and refuses framing that does not parse.
func FilterItems(dst, items []byte, mapState bool, keep func(lastModified int64) bool) ([]byte, int, error) {
	kept, run := 0, 0 // run: where the current run of kept items starts
	for off := 0; off < len(items); {
		start := off
		if mapState {
			n, ok := skipBytes(items, off)
			if !ok {
				return dst, kept, fmt.Errorf("snapshotfmt: map key at item offset %d does not parse", start)
			}
			off = n
		}
		l, w := binary.Uvarint(items[off:])
		if w <= 0 || l < 8 || l > uint64(len(items)-off-w) {
			return dst, kept, fmt.Errorf("snapshotfmt: TTL value at item offset %d does not parse", start)
		}
		value := items[off+w:]
		off += w + int(l)
		if keep(int64(binary.BigEndian.Uint64(value))) {
			kept++
			continue
		}
		dst = append(dst, items[run:start]...)
		run = off
	}
	return append(dst, items[run:]...), kept, nil
}

// skipBytes returns the offset after the length-prefixed bytes at b[off:].
func skipBytes(b []byte, off int) (int, bool) {
	l, w := binary.Uvarint(b[off:])
	if w <= 0 || l > uint64(len(b)-off-w) {
		return 0, false
	}
	return off + w + int(l), true
}
