package snapshotfmt

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/stateproc/stateproc/internal/uvarint"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
)

// shape is what the records of one segment look like and which key group
// their keys must hash to.
type shape struct {
	// kind is the state's kind, or 0 for a timer service.
	kind savepoint.Kind
	ttl  bool
	hash keygroup.Hash
	maxP int
	kg   int
}

func shapeOf(op *savepoint.Operator, ref savepoint.StateRef, kg int) shape {
	s := shape{hash: op.KeyHash, maxP: op.MaxParallelism, kg: kg}
	if !ref.Timer {
		s.kind = op.States[ref.State].Kind
		s.ttl = op.States[ref.State].TTL != nil
	}
	return s
}

func (s *shape) timers() bool { return s.kind == 0 }

// timestamps reports whether the segment's stats carry min and max times.
func (s *shape) timestamps() bool { return s.ttl || s.timers() }

// checkKeyGroup checks that key belongs in the segment's key group: a key in
// the wrong one would be invisible to whoever restores that key group.
func (s *shape) checkKeyGroup(key []byte) error {
	h, err := s.hash.Sum(key)
	if err != nil {
		return err
	}
	if kg := int(h % uint32(s.maxP)); kg != s.kg {
		return fmt.Errorf("key %q belongs to key group %d, not %d", truncateKey(key), kg, s.kg)
	}
	return nil
}

// truncateKey keeps error messages short when keys are large.
func truncateKey(k []byte) []byte {
	if len(k) > 64 {
		return k[:64]
	}
	return k
}

// compareKeyNamespace orders records: by key, then by namespace, each
// compared as bytes.
func compareKeyNamespace(k1, n1, k2, n2 []byte) int {
	return cmp.Or(bytes.Compare(k1, k2), bytes.Compare(n1, n2))
}

// after reports whether a sorts strictly after b as bytes, given pa and pb,
// their first eight bytes from prefix8. It is on the path of every map
// entry, whose keys are mostly short, so it compares those prefixes as
// numbers before it compares bytes.
func after(a, b []byte, pa, pb uint64) bool {
	if pa != pb {
		return pa > pb
	}
	if len(a) <= 8 || len(b) <= 8 {
		// One is a prefix of the other, padded with zeros to eight bytes:
		// the longer one sorts after.
		return len(a) > len(b)
	}
	return bytes.Compare(a[8:], b[8:]) > 0
}

// prefix8 returns the first eight bytes of the n bytes at buf[start:] as a
// big-endian number, with the bytes beyond n as zeros.
func prefix8(buf []byte, start, n int) uint64 {
	if start+8 <= len(buf) {
		x := binary.BigEndian.Uint64(buf[start:])
		if n < 8 {
			x &^= ^uint64(0) >> (8 * n)
		}
		return x
	}
	var x uint64
	for i := range 8 {
		x <<= 8
		if i < n {
			x |= uint64(buf[start+i])
		}
	}
	return x
}

func compareTimers(t1 int64, k1, n1 []byte, t2 int64, k2, n2 []byte) int {
	return cmp.Or(cmp.Compare(t1, t2), compareKeyNamespace(k1, n1, k2, n2))
}

// timerTimeBits stores a timer's time with the sign bit flipped, so that
// the bytes sort as the numbers do.
const timerTimeBits = 1 << 63

// counts accumulates what the index records about a segment.
type counts struct {
	keys, entries, bytes uint64
	minTS, maxTS         int64
	// hist, when set, gathers the histograms of a keyed state's segment;
	// reanchored, when set too, the last-modified histogram again at
	// another anchor (a copy into a savepoint of another creation time).
	hist, reanchored *histCounts
}

// histCounts gathers a segment's histograms densely: an increment per
// item, turned into the index's sparse form once the segment ends. The
// arrays are pooled and only their touched span is cleared, since a
// savepoint of many small segments starts one per segment.
type histCounts struct {
	ttlMillis, anchor int64
	ttl               bool
	sizesA            [savepoint.SizeBuckets]uint64
	modifiedA         [savepoint.ModifiedBuckets]uint64 // TTL states only
	sizes, modified   histSpan
	// cuts are the last-modified times that a reader counts the times at or
	// before (countCuts). A bucket of the last-modified histogram holds
	// at most one of them, and splitA of that bucket counts its times after
	// it: those of the buckets below all lie before it, those above after.
	// splitA of a bucket without a cut has a cut no time lies after.
	cuts   []int64
	splitA [savepoint.ModifiedBuckets]bucketSplit
	// exact, when set (countSizes), counts the value sizes exactly for a
	// reader: each size below len(exact) in it, larger ones by a call of
	// large per run of one size.
	exact []uint64
	large func(size int, n uint64)
	// sided is liveTable refined by the cuts, for modifiedTimes: of an
	// offset cell, twice its bucket, plus 1 when all of the cell lies after
	// the bucket's cut, or mixedCell when the cut lies within it. A time is
	// counted by it in pairs, with one increment, until settle adds pairs
	// to the buckets and to the counts after the cuts. sidedShift and
	// sidedCuts are the shift (nearBucket's) and cuts it was made for.
	sided      *[len(liveTable)]uint16
	sidedShift int64
	sidedCuts  []int64
	pairs      [2 * savepoint.ModifiedBuckets]uint64
}

// mixedCell is a cell of histCounts.sided that a cut splits.
const mixedCell = math.MaxUint16

// bucketSplit is where a cut splits a bucket of the last-modified
// histogram, and how many times of the bucket lie after it.
type bucketSplit struct {
	cut   int64
	after uint64
}

// noCut is bucketSplit.cut of a bucket without a cut.
const noCut = math.MaxInt64

// histSpan is a dense histogram with the span of its touched buckets.
type histSpan struct {
	a      []uint64
	lo, hi int // the touched buckets are lo to hi - 1
}

func (h *histSpan) add(i int) { h.addN(i, 1) }

func (h *histSpan) addN(i int, n uint64) {
	h.touch(i)
	h.a[i] += n
}

// touch widens the span to bucket i.
func (h *histSpan) touch(i int) {
	if h.lo == h.hi {
		h.lo, h.hi = i, i+1
	} else {
		h.lo, h.hi = min(h.lo, i), max(h.hi, i+1)
	}
}

func (h *histSpan) sparse() savepoint.Histogram {
	var out savepoint.Histogram
	for i := h.lo; i < h.hi; i++ {
		if c := h.a[i]; c > 0 {
			out = append(out, savepoint.HistBucket{Bucket: i, Count: c})
		}
	}
	return out
}

func (h *histSpan) clear() {
	clear(h.a[h.lo:h.hi])
	h.lo, h.hi = 0, 0
}

var histPool = sync.Pool{New: func() any {
	h := new(histCounts)
	h.sizes.a, h.modified.a = h.sizesA[:], h.modifiedA[:]
	for i := range h.splitA {
		h.splitA[i].cut = noCut
	}
	return h
}}

func newHistCounts(s shape, ttlMillis, anchor int64) *histCounts {
	h := histPool.Get().(*histCounts)
	h.ttlMillis, h.anchor, h.ttl = ttlMillis, anchor, s.ttl
	return h
}

// release returns h to the pool; h must not be used after.
func (h *histCounts) release() {
	if h == nil {
		return
	}
	h.settle()
	h.sizes.clear()
	h.modified.clear()
	for _, c := range h.cuts {
		h.splitA[h.modifiedBucket(c)] = bucketSplit{cut: noCut}
	}
	h.cuts = h.cuts[:0]
	h.exact, h.large = nil, nil
	histPool.Put(h)
}

// countSizes has h count the value sizes it takes from now on exactly, as
// well as in buckets: those below len(small) in small, larger ones by a
// call of large per run of one size.
func (h *histCounts) countSizes(small []uint64, large func(size int, n uint64)) {
	h.exact, h.large = small, large
}

// exactN counts n values of one size exactly, when countSizes asked for it.
func (h *histCounts) exactN(size int, n uint64) {
	switch {
	case h.exact == nil:
	case size < len(h.exact):
		h.exact[size] += n
	default:
		h.large(size, n)
	}
}

// settle adds the counts that modifiedTimes keeps in pairs to the buckets
// and to the counts after the cuts.
func (h *histCounts) settle() {
	for b := h.modified.lo; b < h.modified.hi; b++ {
		p := h.pairs[2*b : 2*b+2]
		h.modifiedA[b] += p[0] + p[1]
		h.splitA[b].after += p[1]
		p[0], p[1] = 0, 0
	}
}

// countCuts has h count, of the times it takes from now on, those at or
// before each of cuts, for atOrBefore. It reports false, and counts
// nothing, when two different cuts fall in one bucket of the last-modified
// histogram.
func (h *histCounts) countCuts(cuts []int64) bool {
	for i, c := range cuts {
		for _, d := range cuts[:i] {
			if c != d && h.modifiedBucket(c) == h.modifiedBucket(d) {
				return false
			}
		}
	}
	for _, c := range cuts {
		h.splitA[h.modifiedBucket(c)].cut = c
	}
	h.cuts = append(h.cuts[:0], cuts...)
	return true
}

// atOrBefore stores in dst[i] how many of the times counted lie at or
// before the ith cut of countCuts. The bucket of a time rises with it, so
// those are the times of the buckets below the cut's and those of its
// bucket that are not after it.
func (h *histCounts) atOrBefore(dst []uint64) {
	h.settle()
	for i, c := range h.cuts {
		b := h.modifiedBucket(c)
		n := h.modifiedA[b] - h.splitA[b].after
		// Only the touched buckets count any.
		for _, k := range h.modifiedA[h.modified.lo:max(h.modified.lo, min(b, h.modified.hi))] {
			n += k
		}
		dst[i] = n
	}
}

// item counts a value, whose TTL timestamp, if any, is already taken off.
func (h *histCounts) item(size int, lastModified int64) {
	h.sizes.add(savepoint.SizeBucket(uint64(size)))
	h.exactN(size, 1)
	if h.ttl {
		h.modifiedOnly(lastModified)
	}
}

func (h *histCounts) modifiedOnly(lastModified int64) {
	b := h.modifiedBucket(lastModified)
	h.modified.add(b)
	s := &h.splitA[b]
	s.after += b2u(lastModified > s.cut)
}

// b2u is 1 for true; the compiler makes it a flag move, not a branch.
func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func (h *histCounts) modifiedBucket(lastModified int64) int {
	return savepoint.ModifiedBucket(savepoint.ExpiryOffset(lastModified, h.ttlMillis, h.anchor))
}

// fill sets the histograms of s.
func (h *histCounts) fill(s *savepoint.Stats) {
	h.settle()
	s.Sizes = h.sizes.sparse()
	if h.ttl {
		s.Modified, s.Anchor = h.modified.sparse(), h.anchor
	}
}

// record counts an item in the histograms kept.
func (c *counts) record(size int, lastModified int64) {
	if c.hist == nil {
		return
	}
	c.hist.item(size, lastModified)
	if c.reanchored != nil {
		c.reanchored.modifiedOnly(lastModified)
	}
}

func (c *counts) timestamp(t int64) {
	if c.entries == 0 {
		c.minTS, c.maxTS = t, t
		return
	}
	c.minTS = min(c.minTS, t)
	c.maxTS = max(c.maxTS, t)
}

// recordReader decodes the records of one segment, a block at a time, and
// checks every ordering and framing rule. It holds the last key, namespace
// and map key across blocks, because a list or map record may continue in
// the next block.
type recordReader struct {
	shape
	d decoder
	e *savepoint.Entry
	// src gives more of a streamed block's payload when d.more > 0.
	src *blockReader
	// left counts the items of the current record not read yet.
	left uint64
	// The previous item, for ordering. They alias the current block or,
	// across a block boundary, carry.
	lastKey, lastNs, lastMapKey []byte
	lastTime                    int64
	lastMapPrefix               uint64 // prefix8 of lastMapKey
	haveMapKey                  bool
	carry                       [3][]byte
	started                     bool // a record or timer has been read
	firstInBlock                bool
	counts
}

// newRecordReader returns a reader whose next fills e. A segment's entries
// all have the same shape, so next sets only the fields that change: the
// key and namespace once per record, the map key and value per item, the
// time per timer.
func newRecordReader(s shape, e *savepoint.Entry, src *blockReader) *recordReader {
	return &recordReader{shape: s, e: e, src: src}
}

// endBlock is called before the buffer of the block just read is reused:
// it keeps what the ordering checks still need.
func (rr *recordReader) endBlock() {
	rr.carry[0] = append(rr.carry[0][:0], rr.lastKey...)
	rr.carry[1] = append(rr.carry[1][:0], rr.lastNs...)
	rr.carry[2] = append(rr.carry[2][:0], rr.lastMapKey...)
	rr.lastKey, rr.lastNs, rr.lastMapKey = rr.carry[0], rr.carry[1], rr.carry[2]
}

// startBlock begins the records of the next block's raw payload, or of the
// start of it, with more bytes to come from rr.src.
func (rr *recordReader) startBlock(payload []byte, more int64) {
	rr.d = decoder{buf: payload, more: more}
	rr.firstInBlock = true
	rr.counts.bytes += uint64(len(payload)) + uint64(more)
}

// ensure makes the window onto a streamed block hold the next item whole,
// with its record's header where a record starts, or the next timer, so
// that the decoder never meets the end of the window inside one. A length
// beyond the block is left for the decoder to report. It returns false
// when the stream fails.
func (rr *recordReader) ensure() bool {
	d := &rr.d
	for d.err == nil && d.more > 0 {
		n, known := rr.span()
		avail := d.remaining()
		if known && (n <= avail || int64(n) > d.left()) {
			return true
		}
		// An unknown end needs the next length field: at most a uvarint.
		target := int64(n)
		if !known {
			target = int64(max(n, avail) + binary.MaxVarintLen64)
		}
		if !rr.fill(int(min(target, d.left()))) {
			return false
		}
	}
	return d.err == nil
}

// span returns the bytes from the decoder's position that the next item
// takes, as ensure describes it, and whether the window tells all of it;
// when it does not, n is what it tells so far.
func (rr *recordReader) span() (n int, known bool) {
	b := rr.d.buf[rr.d.off:]
	if rr.timers() {
		n = 8
		if n, known = lengthField(b, n); !known {
			return n, false
		}
		return lengthField(b, n)
	}
	known = true
	if rr.left == 0 {
		if n, known = lengthField(b, n); known {
			if n, known = lengthField(b, n); known {
				n, known = uvarintField(b, n)
			}
		}
		if !known {
			return n, false
		}
	}
	if rr.kind == savepoint.Map {
		if n, known = lengthField(b, n); !known {
			return n, false
		}
	}
	return lengthField(b, n)
}

// lengthField returns the end of the length-prefixed field at b[n:].
func lengthField(b []byte, n int) (int, bool) {
	end, known := uvarintField(b, n)
	if !known || end == n {
		return end, known
	}
	v, _ := binary.Uvarint(b[n:])
	if v > maxBlockRaw {
		// Beyond any block: the decoder refuses it.
		return end + maxBlockRaw + 1, true
	}
	return end + int(v), true
}

// uvarintField returns the end of the uvarint at b[n:]. A malformed one is
// known, and has no length: the decoder says what is wrong with it.
func uvarintField(b []byte, n int) (int, bool) {
	if n > len(b) {
		return n, false
	}
	_, k := binary.Uvarint(b[n:])
	switch {
	case k == 0 && len(b)-n < binary.MaxVarintLen64:
		return n, false
	case k <= 0:
		return n, true
	}
	return n + k, true
}

// fill refills the window of a streamed block to hold target bytes from
// the decoder's position. What the ordering checks and the current entry
// keep of the window moves to owned buffers first, as at a block's end.
func (rr *recordReader) fill(target int) bool {
	d := &rr.d
	rr.endBlock()
	if !rr.timers() {
		rr.e.Key, rr.e.Namespace = rr.lastKey, rr.lastNs
	}
	buf, more, err := rr.src.refill(d.buf, d.off, target)
	if err != nil {
		d.failAt(d.off, err)
		return false
	}
	d.base += int64(d.off)
	d.buf, d.off, d.more = buf, 0, more
	return true
}

// next decodes the next item of the block into the entry. It returns false
// at the end of the block or on an error, which rr.failure reports.
func (rr *recordReader) next() bool {
	if rr.timers() {
		if rr.d.more > 0 && !rr.ensure() {
			return false
		}
		if rr.d.err != nil || rr.d.remaining() == 0 {
			return false
		}
		return rr.nextTimer()
	}
	mk, v, ok := rr.item()
	if ok {
		rr.e.MapKey, rr.e.Value = mk, v
	}
	return ok
}

// item decodes the next item of a keyed state's block: its map key (nil
// but in a map state) and its value, and checks it. It returns false at the
// end of the block or on an error, which rr.failure reports. It is on the
// path of every entry a scan or restore reads, so the common case, an item
// of an open record, goes straight through.
func (rr *recordReader) item() (mk, v []byte, ok bool) {
	d := &rr.d
	if d.err != nil || d.more > 0 && !rr.ensure() {
		return nil, nil, false
	}
	if rr.left == 0 && (d.remaining() == 0 || !rr.startRecord()) {
		return nil, nil, false
	}
	start := d.off
	if rr.kind == savepoint.Map {
		if mk, ok = d.short(); !ok {
			if mk = d.bytes("map key"); d.err != nil {
				return nil, nil, false
			}
		}
		p := prefix8(d.buf, d.off-len(mk), len(mk))
		if rr.haveMapKey && !after(mk, rr.lastMapKey, p, rr.lastMapPrefix) {
			d.failf(start, "map keys not strictly increasing")
			return nil, nil, false
		}
		rr.lastMapPrefix, rr.lastMapKey, rr.haveMapKey = p, mk, true
	}
	valueAt := d.off
	if v, ok = d.short(); !ok {
		if v = d.bytes("value"); d.err != nil {
			return nil, nil, false
		}
	}
	if rr.ttl {
		if len(v) < 8 {
			d.failf(valueAt, "TTL value of %d bytes, shorter than its 8-byte timestamp", len(v))
			return nil, nil, false
		}
		t := int64(binary.BigEndian.Uint64(v))
		rr.timestamp(t)
		rr.record(len(v)-8, t)
	} else {
		rr.record(len(v), 0)
	}
	rr.left--
	rr.entries++
	return mk, v, true
}

// values is item over a batch, for NextValues: it reads up to len(sizes)
// items straight from the block's bytes, with every check and count of
// item and startRecord, and stores each value's size in sizes and, for a
// TTL state, its last-modified time in times. It stops at the end of the
// block and at whatever item looks at more closely (a length of more than
// one byte, a streamed block's window, the first record of a block,
// anything that breaks a rule), and returns how many items it read: item
// takes over from the first byte it did not consume, and reports any error
// there.
//
// The framing is walked by a loop that only checks and extracts, one for
// map states and one for the others, with the decoder's state in locals;
// the batch's times and sizes are counted by loops of their own. One loop
// doing all of it for every kind held more values than there are
// registers, and spilled them on every item.
func (rr *recordReader) values(sizes []int, times []int64) int {
	d := &rr.d
	if d.err != nil || d.more > 0 || rr.entries == 0 || rr.firstInBlock || rr.reanchored != nil {
		// entries > 0 lets the counts take min and max of the times
		// without a first-time case, and compare each record with the one
		// before.
		return 0
	}
	if rr.ttl {
		times = times[:len(sizes)]
	}
	var n int
	if rr.kind == savepoint.Map {
		n = rr.mapItems(sizes, times)
	} else {
		n = rr.singleItems(sizes, times)
	}
	if n == 0 {
		return 0
	}
	if rr.ttl {
		rr.countTimes(times[:n])
	}
	if rr.hist != nil {
		rr.hist.sizeRuns(sizes[:n])
	}
	rr.entries += uint64(n)
	return n
}

// valueLen reads the one-byte length of the value at buf[o:], which must
// fit in buf and, of a TTL state, hold its timestamp. It returns -1 for
// anything else, which item then decodes.
func valueLen(buf []byte, o int, ttl bool) int {
	if o >= len(buf) {
		return -1
	}
	l := int(buf[o])
	if l >= 0x80 || l >= len(buf)-o || ttl && l < 8 {
		return -1
	}
	return l
}

// singleItems is values' walk of a value or list state's items.
func (rr *recordReader) singleItems(sizes []int, times []int64) int {
	buf, off, left, ttl := rr.d.buf, rr.d.off, rr.left, rr.ttl
	n := 0
	for ; n < len(sizes); n++ {
		if left == 0 {
			o, ok := rr.nextRecord(buf, off)
			if !ok {
				break
			}
			off, left = o, rr.left
		}
		l := valueLen(buf, off, ttl)
		if l < 0 {
			break
		}
		if ttl {
			times[n] = int64(binary.BigEndian.Uint64(buf[off+1 : off+9]))
			sizes[n] = l - 8
		} else {
			sizes[n] = l
		}
		off += 1 + l
		left--
	}
	rr.d.off, rr.left = off, left
	return n
}

// mapItems is values' walk of a map state's items: each a map key, which
// must follow the one before in its record, and a value. It reads the
// records' headers and the map keys that mapRun leaves because their
// prefix8 ties with the last one's; mapRun reads the rest.
func (rr *recordReader) mapItems(sizes []int, times []int64) int {
	buf, ttl := rr.d.buf, rr.ttl
	r := mapRunState{off: rr.d.off, left: int(rr.left), lastP: rr.lastMapPrefix, prev: -1}
	if !rr.haveMapKey {
		r.prev = noMapKey
	}
	n := 0
	for n < len(sizes) {
		if r.left == 0 {
			o, ok := rr.nextRecord(buf, r.off)
			if !ok {
				break
			}
			r.off, r.left, r.prev = o, int(rr.left), noMapKey
		}
		n += mapRun(buf, &r, ttl, sizes[n:], timesFrom(times, n))
		if r.left == 0 || n == len(sizes) {
			continue
		}
		// mapRun stopped before an item. If its map key's prefix8 only
		// ties with the last one's and the key follows, mapRun takes the
		// item without comparing keys (prev noMapKey); if it still
		// cannot, item decodes it.
		prev := r.prev
		if !rr.tieFollows(buf, &r) {
			break
		}
		r.prev = noMapKey
		k := mapRun(buf, &r, ttl, sizes[n:n+1], timesFrom(times, n))
		if k == 0 {
			r.prev = prev
			break
		}
		n += k
	}
	if r.prev >= 0 {
		kl := int(buf[r.prev])
		rr.lastMapKey = buf[r.prev+1 : r.prev+1+kl : r.prev+1+kl]
	}
	rr.d.off, rr.left = r.off, uint64(r.left)
	rr.lastMapPrefix, rr.haveMapKey = r.lastP, r.prev != noMapKey
	return n
}

// timesFrom is times from the nth on, or nil for a state without TTL,
// whose times are nil.
func timesFrom(times []int64, n int) []int64 {
	if times == nil {
		return nil
	}
	return times[n:]
}

// tieFollows reports whether the map key at buf[r.off:] takes a one-byte
// length, has the same prefix8 as the last one, and sorts after it.
func (rr *recordReader) tieFollows(buf []byte, r *mapRunState) bool {
	o := r.off
	if o >= len(buf) || r.prev == noMapKey {
		return false
	}
	kl := int(buf[o])
	if kl >= 0x80 || kl >= len(buf)-o {
		return false
	}
	last := rr.lastMapKey
	if r.prev >= 0 {
		last = buf[r.prev+1 : r.prev+1+int(buf[r.prev])]
	}
	p := prefix8(buf, o+1, kl)
	return p == r.lastP && after(buf[o+1:o+1+kl], last, p, p)
}

// noMapKey is mapRunState.prev before a record's first map key.
const noMapKey = -2

// mapRunState is where mapRun is in a block: the offset of the next item,
// the items of the record left, the prefix8 of the last map key, and prev,
// the offset of that key's length byte, or -1 when it lies before the
// block's bytes (in rr.lastMapKey), or noMapKey before the first.
type mapRunState struct {
	off, left int
	lastP     uint64
	prev      int
}

// mapRun reads items of the open record into sizes and times (for a TTL
// state), as many as fit, and returns how many it read. It stops before an
// item it cannot take whole, and before a map key whose prefix8 is not
// above the last one's. It calls nothing, so that its state stays in
// registers.
func mapRun(buf []byte, r *mapRunState, ttl bool, sizes []int, times []int64) int {
	// Offsets are unsigned, so that a test against the length proves an
	// index in bounds.
	end := uint(len(buf))
	off, left, lastP, prev := uint(r.off), r.left, r.lastP, r.prev
	n := 0
	if off+itemZone <= end {
		if prev == noMapKey {
			// A record's first map key is compared with 0, below which
			// none lies; one whose prefix is 0 is left to the loop below.
			lastP = 0
		}
		lim := min(len(sizes), left)
		if ttl {
			n, off, lastP, prev = mapZoneTTL(buf, off, lastP, prev, sizes[:lim], times[:lim])
		} else {
			n, off, lastP, prev = mapZone(buf, off, lastP, prev, sizes[:lim])
		}
		left -= n
	}
	for ; n < len(sizes) && left > 0; n++ {
		if off >= end {
			break
		}
		kl := uint(buf[off])
		if kl >= 0x80 || kl >= end-off {
			break
		}
		p := prefix8(buf, int(off+1), int(kl))
		if prev != noMapKey && p <= lastP {
			break
		}
		v := off + 1 + kl
		if v >= end {
			break
		}
		l := uint(buf[v])
		if l >= 0x80 || l >= end-v {
			break
		}
		if ttl {
			if l < 8 {
				break
			}
			times[n] = int64(binary.BigEndian.Uint64(buf[v+1 : v+9]))
			sizes[n] = int(l - 8)
		} else {
			sizes[n] = int(l)
		}
		prev, lastP = int(off), p
		off = v + 1 + l
		left--
	}
	r.off, r.left, r.lastP, r.prev = int(off), left, lastP, prev
	return n
}

// mapZoneTTL is mapRun's loop for the items of a TTL state that lie
// itemZone bytes or more before the end of buf: an item of one-byte
// lengths and the 8-byte loads of its map key's prefix and its time lie in
// the next itemZone bytes, which one test proves, so that its fields need
// no test against the end. It is a function of its own, with nothing live
// but its arguments, so that its state stays in registers. It stops as
// mapRun does, and returns what mapRun keeps.
func mapZoneTTL(buf []byte, off uint, lastP uint64, prev int, sizes []int, times []int64) (int, uint, uint64, int) {
	times = times[:len(sizes)]
	end := uint(len(buf))
	n := 0
	for ; n < len(sizes) && off+itemZone <= end; n++ {
		w := (*[itemZone]byte)(buf[off : off+itemZone])
		kl := uint(w[0])
		if kl >= 0x80 {
			break
		}
		p := binary.BigEndian.Uint64(w[1:9]) & prefixMasks[kl]
		l := uint(w[1+kl])
		if p <= lastP || l-8 >= 0x80-8 {
			break
		}
		times[n] = int64(binary.BigEndian.Uint64(w[2+kl:]))
		sizes[n] = int(l - 8)
		prev, lastP = int(off), p
		off += 2 + kl + l
	}
	return n, off, lastP, prev
}

// mapZone is mapZoneTTL for a state without TTL.
func mapZone(buf []byte, off uint, lastP uint64, prev int, sizes []int) (int, uint, uint64, int) {
	end := uint(len(buf))
	n := 0
	for ; n < len(sizes) && off+itemZone <= end; n++ {
		w := (*[itemZone]byte)(buf[off : off+itemZone])
		kl := uint(w[0])
		if kl >= 0x80 {
			break
		}
		p := binary.BigEndian.Uint64(w[1:9]) & prefixMasks[kl]
		l := uint(w[1+kl])
		if p <= lastP || l >= 0x80 {
			break
		}
		sizes[n] = int(l)
		prev, lastP = int(off), p
		off += 2 + kl + l
	}
	return n, off, lastP, prev
}

// itemZone holds an item of one-byte lengths, 1 + 127 + 1 + 127 bytes, and
// its two 8-byte loads, which end at most 1 + 127 + 1 + 8 bytes in.
const itemZone = 256

// prefixMasks[n] keeps the bytes of an 8-byte load that belong to a field
// of n bytes.
var prefixMasks = func() (m [0x80]uint64) {
	for n := range m {
		m[n] = ^uint64(0)
		if n < 8 {
			m[n] = ^(^uint64(0) >> (8 * n))
		}
	}
	return m
}()

// countTimes takes the TTL times of a batch of values into the segment's
// time bounds and its last-modified histogram.
func (rr *recordReader) countTimes(times []int64) {
	var lo, hi int64
	if h := rr.hist; h != nil {
		lo, hi = h.modifiedTimes(times)
	} else {
		lo, hi = times[0], times[0]
		for _, t := range times {
			lo, hi = min(lo, t), max(hi, t)
		}
	}
	rr.minTS, rr.maxTS = min(rr.minTS, lo), max(rr.maxTS, hi)
}

// modifiedTimes counts a batch of last-modified times in the last-modified
// histogram and returns the least and greatest of them. It takes every
// offset as a sum, in one pass that finds the least and greatest time
// too, and only when those show that some offset saturates does it take
// the batch back and count it again, offset by offset.
func (h *histCounts) modifiedTimes(times []int64) (lo, hi int64) {
	a, split, pairs := &h.modifiedA, &h.splitA, &h.pairs
	shift, zero := h.ttlMillis-h.anchor-1, savepoint.ModifiedBucket(0)
	sided := h.sidedFor(shift)
	lo, hi = times[0], times[0]
	for _, t := range times {
		lo, hi = min(lo, t), max(hi, t)
		if y := uint64(t + shift); y-liveTableLo < liveTableHi-liveTableLo {
			if r := sided[y>>liveTableShift&uint64(len(sided)-1)]; r != mixedCell {
				pairs[r]++
				continue
			}
		}
		b := nearBucket(t, shift, zero)
		a[b]++
		s := &split[b]
		s.after += b2u(t > s.cut)
	}
	if !offsetsAdd(lo, hi, h.ttlMillis, h.anchor) {
		for _, t := range times {
			h.takeBack(t, shift, zero)
			b := h.modifiedBucket(t)
			a[b]++
			split[b].after += b2u(t > split[b].cut)
		}
	}
	// The bucket rises with the time, so the span of the buckets touched
	// is set once, from the least and greatest times, rather than per
	// time.
	h.modified.touch(h.modifiedBucket(lo))
	h.modified.touch(h.modifiedBucket(hi))
	return lo, hi
}

// takeBack undoes what modifiedTimes' loop counted for time t.
func (h *histCounts) takeBack(t, shift int64, zero int) {
	if y := uint64(t + shift); y-liveTableLo < liveTableHi-liveTableLo {
		if r := h.sided[y>>liveTableShift&uint64(len(h.sided)-1)]; r != mixedCell {
			h.pairs[r]--
			return
		}
	}
	b := nearBucket(t, shift, zero)
	h.modifiedA[b]--
	h.splitA[b].after -= b2u(t > h.splitA[b].cut)
}

// sidedFor returns h.sided for nearBucket's shift and h's cuts, made anew
// only when they changed since it was made: mostly, the next segment is
// of the same state and anchor.
func (h *histCounts) sidedFor(shift int64) *[len(liveTable)]uint16 {
	if h.sided != nil && h.sidedShift == shift && slices.Equal(h.sidedCuts, h.cuts) {
		return h.sided
	}
	if h.sided == nil {
		h.sided = new([len(liveTable)]uint16)
	}
	for i := range h.sided {
		b := liveTable[i]
		// The times of the cell: where offsets add (all that the batch
		// loop keeps), these do not overflow.
		first := int64(i)<<liveTableShift - shift
		last := first + 1<<liveTableShift - 1
		switch cut := h.splitA[b].cut; {
		case last <= cut:
			h.sided[i] = 2 * b
		case first > cut:
			h.sided[i] = 2*b + 1
		default:
			h.sided[i] = mixedCell
		}
	}
	h.sidedShift, h.sidedCuts = shift, append(h.sidedCuts[:0], h.cuts...)
	return h.sided
}

// nearBucket is the last-modified bucket of time t, with shift its TTL
// less the anchor less 1 and zero the bucket of offset 0, where the offset
// t + shift + 1 does not saturate (offsetsAdd): from liveTable where it
// can, else ModifiedBucket's without a branch on the offset's sign, which
// live and expired entries mixed would mispredict. Any other t gives some
// bucket of the histogram, wrong but in range.
func nearBucket(t, shift int64, zero int) int {
	// y is the offset less 1: ModifiedBucket takes the bucket of y upwards
	// when y >= 0, and of -(y+1), which is ^y, downwards otherwise.
	y := t + shift
	if uint64(y)-liveTableLo < liveTableHi-liveTableLo {
		// Most live entries: their buckets are 2^21 ms or more wide.
		return int(liveTable[uint64(y)>>liveTableShift&uint64(len(liveTable)-1)])
	}
	m := int(y >> 63)
	return zero + 1 + (savepoint.SizeBucket(uint64(y^int64(m))) ^ m)
}

// liveTable[y >> liveTableShift] is the last-modified bucket of offset
// y + 1 for y from liveTableLo up to liveTableHi: offsets of 4.7 hours to
// 50 days, which hold most live entries of a TTL in hours or days. A
// bucket there is 2^21 ms or more wide and starts at a multiple of its
// width, so the bits that the shift drops do not change it.
var liveTable = func() (t [liveTableHi >> liveTableShift]uint16) {
	for i := range t {
		t[i] = uint16(savepoint.ModifiedBucket(int64(i)<<liveTableShift + 1))
	}
	return t
}()

const (
	liveTableShift = 20
	liveTableLo    = 1 << 24
	liveTableHi    = 1 << 32
)

// offsetsAdd reports whether ExpiryOffset(t, ttlMillis, anchor) is
// t + ttlMillis - anchor, saturating nowhere, for every t from lo to hi: it
// is so when all of them lie within 2^61 of 0, as any real time does.
func offsetsAdd(lo, hi, ttlMillis, anchor int64) bool {
	const near = 1 << 61
	return lo > -near && hi < near && ttlMillis >= 0 && ttlMillis < near && anchor > -near && anchor < near
}

// sizeRuns counts a batch of value sizes in the size histogram, and
// exactly when countSizes asked for it. The values of a state mostly have
// one size, so it counts each run of one size at once, and takes the
// bucket of a run, not of every size.
func (h *histCounts) sizeRuns(sizes []int) {
	for i := 0; i < len(sizes); {
		size, j := sizes[i], i+1
		// Four at a time, with one branch, while the run goes on.
		for ; j+4 <= len(sizes); j += 4 {
			w := (*[4]int)(sizes[j : j+4])
			if (w[0]^size)|(w[1]^size)|(w[2]^size)|(w[3]^size) != 0 {
				break
			}
		}
		for j < len(sizes) && sizes[j] == size {
			j++
		}
		h.sizes.addN(savepoint.SizeBucket(uint64(size)), uint64(j-i))
		h.exactN(size, uint64(j-i))
		i = j
	}
}

// nextRecord is startRecord for values: it reads the header of the record
// at buf[off:] when its key, namespace and count take one-byte lengths and
// the record follows the one before in another (key, namespace), checks it
// as startRecord does, and returns the offset of its first item. It reads
// nothing and returns false at the end of the block and in every other
// case, which startRecord then decodes, and reports when wrong.
func (rr *recordReader) nextRecord(buf []byte, off int) (int, bool) {
	o := off
	if o >= len(buf) {
		return 0, false
	}
	l := int(buf[o])
	if l >= 0x80 || l >= len(buf)-o {
		return 0, false
	}
	key := buf[o+1 : o+1+l : o+1+l]
	o += 1 + l
	if o >= len(buf) {
		return 0, false
	}
	l = int(buf[o])
	if l >= 0x80 || l >= len(buf)-o {
		return 0, false
	}
	ns := buf[o+1 : o+1+l : o+1+l]
	o += 1 + l
	if o >= len(buf) {
		return 0, false
	}
	count := int(buf[o])
	o++
	if count == 0 || count >= 0x80 || count > len(buf)-o || rr.kind.SingleValue() && count != 1 {
		return 0, false
	}
	sameKey := bytes.Equal(key, rr.lastKey)
	if sameKey {
		if bytes.Compare(ns, rr.lastNs) <= 0 {
			return 0, false
		}
	} else {
		if bytes.Compare(key, rr.lastKey) < 0 || rr.checkKeyGroup(key) != nil {
			return 0, false
		}
		rr.keys++
	}
	rr.left = uint64(count)
	rr.lastKey, rr.lastNs = key, ns
	rr.e.Key, rr.e.Namespace = key, ns
	return o, true
}

func (rr *recordReader) startRecord() bool {
	d := &rr.d
	start := d.off
	key := d.bytes("key")
	ns := d.bytes("namespace")
	countAt := d.off
	n := d.count("item count")
	if d.err != nil {
		return false
	}
	if n == 0 {
		d.failf(countAt, "record with no items")
		return false
	}
	if rr.kind.SingleValue() && n != 1 {
		d.failf(countAt, "%v state record with %d items, want 1", rr.kind, n)
		return false
	}
	c := 1
	if rr.started {
		c = compareKeyNamespace(key, ns, rr.lastKey, rr.lastNs)
	}
	switch {
	case c < 0:
		d.failf(start, "record (key, namespace) not after the previous one")
		return false
	case c == 0 && rr.kind.SingleValue():
		d.failf(start, "(key, namespace) repeats in a %v state", rr.kind)
		return false
	case c == 0 && !rr.firstInBlock:
		// Only a block boundary may split the items of one (key, namespace).
		d.failf(start, "(key, namespace) repeats within a block")
		return false
	}
	if !rr.started || !bytes.Equal(key, rr.lastKey) {
		if err := rr.checkKeyGroup(key); err != nil {
			d.failf(start, "%v", err)
			return false
		}
		rr.keys++
	}
	if c != 0 {
		rr.haveMapKey = false
	}
	rr.left = uint64(n)
	rr.lastKey, rr.lastNs = key, ns
	rr.firstInBlock = false
	// An item follows or the record fails: either way it has started.
	rr.started = true
	rr.e.Key, rr.e.Namespace = key, ns
	return true
}

func (rr *recordReader) nextTimer() bool {
	d := &rr.d
	start := d.off
	t := int64(d.u64("timer time") ^ timerTimeBits)
	key := d.bytes("timer key")
	ns := d.bytes("timer namespace")
	if d.err != nil {
		return false
	}
	if rr.started && compareTimers(t, key, ns, rr.lastTime, rr.lastKey, rr.lastNs) <= 0 {
		d.failf(start, "timers not strictly increasing by (time, key, namespace)")
		return false
	}
	if !rr.started || !bytes.Equal(key, rr.lastKey) {
		if err := rr.checkKeyGroup(key); err != nil {
			d.failf(start, "%v", err)
			return false
		}
	}
	rr.timestamp(t)
	rr.lastTime, rr.lastKey, rr.lastNs = t, key, ns
	rr.entries++
	rr.started = true
	rr.e.Key, rr.e.Namespace, rr.e.Timestamp = key, ns, t
	return true
}

// failure returns the error that stopped next, and the payload offset of
// the field at fault.
func (rr *recordReader) failure() (int, error) { return int(rr.d.errOff), rr.d.err }

// check compares what the records held with the segment's index entry.
func (rr *recordReader) check(want *savepoint.Stats) error {
	got := rr.counts
	switch {
	case got.entries != want.Entries:
		return corruptf("segment holds %d entries, the index says %d", got.entries, want.Entries)
	case got.keys != want.Keys:
		return corruptf("segment holds %d distinct keys, the index says %d", got.keys, want.Keys)
	case got.bytes != want.Bytes:
		return corruptf("segment holds %d raw bytes, the index says %d", got.bytes, want.Bytes)
	case rr.timestamps() && (got.minTS != want.MinTimestamp || got.maxTS != want.MaxTimestamp):
		return corruptf("segment timestamps run from %d to %d, the index says %d to %d", got.minTS, got.maxTS, want.MinTimestamp, want.MaxTimestamp)
	}
	if got.hist == nil || want.Sizes == nil {
		return nil
	}
	var h savepoint.Stats
	got.hist.fill(&h)
	if i, ok := histDiffers(h.Sizes, want.Sizes); ok {
		return corruptf("segment's value sizes disagree with the index's histogram from bucket %d (%s)", i, sizeBucketText(i))
	}
	if i, ok := histDiffers(h.Modified, want.Modified); ok {
		return corruptf("segment's last-modified times disagree with the index's histogram from bucket %d (%s)", i, modifiedBucketText(i, want.Anchor))
	}
	return nil
}

// histDiffers returns the first bucket where a and b differ.
func histDiffers(a, b savepoint.Histogram) (int, bool) {
	for i := range max(len(a), len(b)) {
		switch {
		case i >= len(a):
			return b[i].Bucket, true
		case i >= len(b):
			return a[i].Bucket, true
		case a[i] != b[i]:
			return min(a[i].Bucket, b[i].Bucket), true
		}
	}
	return 0, false
}

func sizeBucketText(i int) string {
	lo, hi := savepoint.SizeBucketRange(i)
	return fmt.Sprintf("values of %d to %d bytes", lo, hi)
}

func modifiedBucketText(k int, anchor int64) string {
	lo, hi := savepoint.ModifiedBucketRange(k)
	return fmt.Sprintf("expiring %d to %d ms after %d", lo, hi, anchor)
}

// recordWriter encodes entries into block payloads, checking that they come
// in the order the reader demands. It buffers at most one block plus one
// item: the block's closed records in blk and the open record's items in rec,
// whose header is written when the record closes and its count is known.
type recordWriter struct {
	shape
	blockSize int
	// emit receives a finished block: blockHeaderLen reserved bytes and
	// then the raw payload. It may keep blk only until it returns.
	emit func(blk []byte) error
	blk  []byte
	rec  []byte
	// The open record's key and namespace (owned copies), and its item
	// count; count 0 means no record is open. They are also the previous
	// entry's, for ordering.
	key, ns  []byte
	count    int
	lastMK   []byte
	lastTime int64
	started  bool
	counts
}

func newRecordWriter(blockSize int, emit func([]byte) error) *recordWriter {
	return &recordWriter{
		blockSize: blockSize,
		emit:      emit,
		blk:       make([]byte, blockHeaderLen, blockHeaderLen+min(blockSize, 1<<20)+blockCRCLen),
	}
}

// reset starts a new segment of the given shape, keeping the buffers.
func (rw *recordWriter) reset(s shape) {
	*rw = recordWriter{
		shape:     s,
		blockSize: rw.blockSize,
		emit:      rw.emit,
		blk:       rw.blk[:blockHeaderLen],
		rec:       rw.rec[:0],
		key:       rw.key[:0],
		ns:        rw.ns[:0],
		lastMK:    rw.lastMK[:0],
	}
}

func bytesLen(b []byte) int { return uvarint.Len(uint64(len(b))) + len(b) }

func recordHeaderLen(key, ns []byte, count int) int {
	return bytesLen(key) + bytesLen(ns) + uvarint.Len(uint64(count))
}

// add appends one entry. An entry that breaks a rule is refused with an
// error and changes nothing; an error of emit is returned as is.
func (rw *recordWriter) add(e *savepoint.Entry) error {
	if rw.timers() {
		return rw.addTimer(e)
	}
	switch {
	case e.Timestamp != 0:
		return fmt.Errorf("a %v state entry has a timer timestamp", rw.kind)
	case rw.kind != savepoint.Map && e.MapKey != nil:
		return fmt.Errorf("a %v state entry has a map key", rw.kind)
	case rw.ttl && len(e.Value) < 8:
		return fmt.Errorf("TTL state value of %d bytes, shorter than its 8-byte last-modified timestamp", len(e.Value))
	}
	c := 1
	if rw.started {
		c = compareKeyNamespace(e.Key, e.Namespace, rw.key, rw.ns)
	}
	switch {
	case c < 0:
		return fmt.Errorf("entry (key %q, namespace %q) comes before the previous one: entries must be sorted by key, then namespace", truncateKey(e.Key), truncateKey(e.Namespace))
	case c == 0 && rw.kind.SingleValue():
		return fmt.Errorf("a second entry for (key %q, namespace %q) in a %v state", truncateKey(e.Key), truncateKey(e.Namespace), rw.kind)
	case c == 0 && rw.kind == savepoint.Map && bytes.Compare(e.MapKey, rw.lastMK) <= 0:
		return fmt.Errorf("map key %q of key %q is not after the previous map key: map keys must be strictly increasing", truncateKey(e.MapKey), truncateKey(e.Key))
	}
	newKey := !rw.started || !bytes.Equal(e.Key, rw.key)
	if newKey {
		if err := rw.checkKeyGroup(e.Key); err != nil {
			return err
		}
	}
	itemLen := bytesLen(e.Value)
	if rw.kind == savepoint.Map {
		itemLen += bytesLen(e.MapKey)
	}
	if recordHeaderLen(e.Key, e.Namespace, 1)+itemLen > maxBlockRaw {
		return fmt.Errorf("entry of %d bytes does not fit the %d-byte block limit", itemLen, maxBlockRaw)
	}

	if c == 0 {
		grown := rw.payloadLen() - uvarint.Len(uint64(rw.count)) + uvarint.Len(uint64(rw.count+1)) + itemLen
		if rw.count > 0 && grown > rw.blockSize {
			if err := rw.flush(); err != nil {
				return err
			}
		}
	} else {
		rw.closeRecord()
		if len(rw.blk) > blockHeaderLen && rw.payloadLen()+recordHeaderLen(e.Key, e.Namespace, 1)+itemLen > rw.blockSize {
			if err := rw.flush(); err != nil {
				return err
			}
		}
		rw.key = append(rw.key[:0], e.Key...)
		rw.ns = append(rw.ns[:0], e.Namespace...)
	}
	if rw.kind == savepoint.Map {
		rw.rec = appendBytes(rw.rec, e.MapKey)
		rw.lastMK = append(rw.lastMK[:0], e.MapKey...)
	}
	rw.rec = appendBytes(rw.rec, e.Value)
	rw.count++
	if newKey {
		rw.keys++
	}
	rw.tally(e.Value)
	return nil
}

// tally counts one state entry, of value v, in the segment's numbers.
func (rw *recordWriter) tally(v []byte) {
	if rw.ttl {
		t := int64(binary.BigEndian.Uint64(v))
		rw.timestamp(t)
		rw.record(len(v)-8, t)
	} else {
		rw.record(len(v), 0)
	}
	rw.entries++
	rw.started = true
}

// addItems appends the framed items of one (key, namespace) of a keyed
// state (see SegmentWriter.AppendItems): one comparison of the key and
// namespace with the previous ones, then one pass over the items that
// checks each one's framing and size, counts it and cuts blocks where add
// would, and copies runs of them as they are. It returns how many items it
// appended: on an error, those before the item at fault.
func (rw *recordWriter) addItems(key, ns, items []byte) (int, error) {
	if rw.timers() {
		return 0, errors.New("a timer entry cannot be appended framed")
	}
	if len(items) == 0 {
		return 0, errors.New("no items to append")
	}
	c := 1
	if rw.started {
		c = compareKeyNamespace(key, ns, rw.key, rw.ns)
	}
	switch {
	case c < 0:
		return 0, fmt.Errorf("entry (key %q, namespace %q) comes before the previous one: entries must be sorted by key, then namespace", truncateKey(key), truncateKey(ns))
	case c == 0 && rw.kind.SingleValue():
		return 0, fmt.Errorf("a second entry for (key %q, namespace %q) in a %v state", truncateKey(key), truncateKey(ns), rw.kind)
	}
	newKey := c != 0 && (!rw.started || !bytes.Equal(key, rw.key))
	if newKey {
		if err := rw.checkKeyGroup(key); err != nil {
			return 0, err
		}
	}
	if c == 0 {
		key, ns = rw.key, rw.ns
	}
	ia := itemAppender{rw: rw, items: items}
	n, err := ia.append(key, ns, c != 0, newKey)
	ia.done(n)
	return n, err
}

// itemAppender is one addItems call's pass over its items, with the
// counts kept in locals until it ends.
type itemAppender struct {
	rw    *recordWriter
	items []byte
	// The items from pend on are counted but not yet copied into rec.
	pend, pendN, end int
	// Runs of one value-size bucket are counted at once; times' span is
	// taken from their least and greatest, as the buckets rise with them.
	runBucket    int
	run          uint64
	minTS, maxTS int64
	timed        bool
}

// commit copies the counted items up to end into the open record.
func (ia *itemAppender) commit(end int) {
	rw := ia.rw
	rw.rec = append(rw.rec, ia.items[ia.pend:end]...)
	rw.count += ia.pendN
	ia.pend, ia.pendN = end, 0
}

func (ia *itemAppender) append(key, ns []byte, newRecord, newKey bool) (int, error) {
	rw := ia.rw
	items := ia.items
	// hdr is the record header's length without its count, which is one
	// byte for a single item.
	hdr := bytesLen(key) + bytesLen(ns)
	isMap, ttl, h := rw.kind == savepoint.Map, rw.ttl, rw.hist
	live := savepoint.ModifiedBucket(1)
	ia.runBucket, ia.minTS, ia.maxTS = -1, math.MaxInt64, math.MinInt64
	n := 0
	for off := 0; off < len(items); n++ {
		start := off
		ia.end = start
		// Most lengths take one byte: those are read inline.
		var ok bool
		if isMap {
			if off < len(items) && items[off] < 0x80 && int(items[off]) < len(items)-off {
				off += 1 + int(items[off])
			} else if _, off, ok = itemField(items, off); !ok {
				return n, fmt.Errorf("framed item %d: bad map key length", n)
			}
		}
		var vStart, vEnd int
		if off < len(items) && items[off] < 0x80 && int(items[off]) < len(items)-off {
			vStart, vEnd = off+1, off+1+int(items[off])
		} else if vStart, vEnd, ok = itemField(items, off); !ok {
			return n, fmt.Errorf("framed item %d: bad value length", n)
		}
		off = vEnd
		itemLen := off - start
		size := vEnd - vStart
		switch {
		case n > 0 && rw.kind.SingleValue():
			return n, fmt.Errorf("a second entry for (key %q, namespace %q) in a %v state", truncateKey(key), truncateKey(ns), rw.kind)
		case ttl && size < 8:
			return n, fmt.Errorf("TTL state value of %d bytes, shorter than its 8-byte last-modified timestamp", size)
		case hdr+1+itemLen > maxBlockRaw:
			return n, fmt.Errorf("entry of %d bytes does not fit the %d-byte block limit", itemLen, maxBlockRaw)
		}
		if n == 0 && newRecord {
			rw.closeRecord()
			if len(rw.blk) > blockHeaderLen && len(rw.blk)-blockHeaderLen+hdr+1+itemLen > rw.blockSize {
				if err := rw.flush(); err != nil {
					return n, err
				}
			}
			rw.key = append(rw.key[:0], key...)
			rw.ns = append(rw.ns[:0], ns...)
			key, ns = rw.key, rw.ns
			if newKey {
				rw.keys++
			}
		} else if count := rw.count + ia.pendN; count > 0 {
			recLen := len(rw.rec) + start - ia.pend
			if len(rw.blk)-blockHeaderLen+hdr+uvarint.Len(uint64(count+1))+recLen+itemLen > rw.blockSize {
				ia.commit(start)
				if err := rw.flush(); err != nil {
					return n, err
				}
			}
		}
		if ttl {
			t := int64(binary.BigEndian.Uint64(items[vStart:]))
			ia.minTS, ia.maxTS, ia.timed = min(ia.minTS, t), max(ia.maxTS, t), true
			size -= 8
			if h != nil {
				b := 0
				if x := savepoint.ExpiryOffset(t, h.ttlMillis, h.anchor); x > 0 {
					// ModifiedBucket of a live entry, inline.
					b = live + savepoint.SizeBucket(uint64(x-1))
				} else {
					b = savepoint.ModifiedBucket(x)
				}
				h.modifiedA[b]++
			}
		}
		if h != nil {
			if b := savepoint.SizeBucket(uint64(size)); b != ia.runBucket {
				if ia.run > 0 {
					h.sizes.addN(ia.runBucket, ia.run)
				}
				ia.runBucket, ia.run = b, 0
			}
			ia.run++
		}
		ia.pendN++
		ia.end = off
	}
	return n, nil
}

// done copies the n items counted and adds their counts to the segment's.
func (ia *itemAppender) done(n int) {
	rw := ia.rw
	ia.commit(ia.end)
	if n == 0 {
		return
	}
	if h := rw.hist; h != nil {
		if ia.run > 0 {
			h.sizes.addN(ia.runBucket, ia.run)
		}
		if ia.timed {
			h.modified.touch(h.modifiedBucket(ia.minTS))
			h.modified.touch(h.modifiedBucket(ia.maxTS))
		}
	}
	if ia.timed {
		if rw.entries == 0 {
			rw.minTS, rw.maxTS = ia.minTS, ia.maxTS
		} else {
			rw.minTS, rw.maxTS = min(rw.minTS, ia.minTS), max(rw.maxTS, ia.maxTS)
		}
	}
	rw.entries += uint64(n)
	rw.started = true
}

// itemField returns where the bytes of the length-prefixed field at
// b[off:] start and end, or false when its length is malformed or runs
// beyond b.
func itemField(b []byte, off int) (start, end int, ok bool) {
	l, w := binary.Uvarint(b[off:])
	if w <= 0 || l > uint64(len(b)-off-w) {
		return 0, 0, false
	}
	return off + w, off + w + int(l), true
}

func (rw *recordWriter) addTimer(e *savepoint.Entry) error {
	switch {
	case e.MapKey != nil || len(e.Value) > 0:
		return fmt.Errorf("a timer entry has a map key or a value")
	case rw.started && compareTimers(e.Timestamp, e.Key, e.Namespace, rw.lastTime, rw.key, rw.ns) <= 0:
		return fmt.Errorf("timer (time %d, key %q, namespace %q) is not after the previous one: timers must be strictly increasing by time, key, namespace",
			e.Timestamp, truncateKey(e.Key), truncateKey(e.Namespace))
	}
	if err := rw.checkKeyGroup(e.Key); err != nil {
		return err
	}
	itemLen := 8 + bytesLen(e.Key) + bytesLen(e.Namespace)
	if itemLen > maxBlockRaw {
		return fmt.Errorf("timer of %d bytes does not fit the %d-byte block limit", itemLen, maxBlockRaw)
	}
	if len(rw.blk) > blockHeaderLen && rw.payloadLen()+itemLen > rw.blockSize {
		if err := rw.flush(); err != nil {
			return err
		}
	}
	rw.blk = binary.BigEndian.AppendUint64(rw.blk, uint64(e.Timestamp)^timerTimeBits)
	rw.blk = appendBytes(rw.blk, e.Key)
	rw.blk = appendBytes(rw.blk, e.Namespace)
	rw.lastTime = e.Timestamp
	rw.key = append(rw.key[:0], e.Key...)
	rw.ns = append(rw.ns[:0], e.Namespace...)
	rw.timestamp(e.Timestamp)
	rw.entries++
	rw.started = true
	return nil
}

// payloadLen is the raw length the current block would have if cut now.
func (rw *recordWriter) payloadLen() int {
	n := len(rw.blk) - blockHeaderLen
	if rw.count > 0 {
		n += recordHeaderLen(rw.key, rw.ns, rw.count) + len(rw.rec)
	}
	return n
}

func (rw *recordWriter) closeRecord() {
	if rw.count == 0 {
		return
	}
	rw.blk = appendBytes(rw.blk, rw.key)
	rw.blk = appendBytes(rw.blk, rw.ns)
	rw.blk = binary.AppendUvarint(rw.blk, uint64(rw.count))
	rw.blk = append(rw.blk, rw.rec...)
	rw.rec, rw.count = rw.rec[:0], 0
}

// flush closes the open record and emits the block, if it holds anything.
func (rw *recordWriter) flush() error {
	rw.closeRecord()
	if len(rw.blk) == blockHeaderLen {
		return nil
	}
	rw.counts.bytes += uint64(len(rw.blk) - blockHeaderLen)
	err := rw.emit(rw.blk)
	rw.blk = rw.blk[:blockHeaderLen]
	return err
}

// stats returns the index entry's numbers after the last flush.
func (rw *recordWriter) stats() savepoint.Stats {
	s := savepoint.Stats{KeyGroup: rw.kg, Keys: rw.keys, Entries: rw.entries, Bytes: rw.counts.bytes}
	if rw.timestamps() {
		s.MinTimestamp, s.MaxTimestamp = rw.minTS, rw.maxTS
	}
	if rw.hist != nil {
		rw.hist.fill(&s)
	}
	return s
}
