package flinkfmt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
	"github.com/stateproc/stateproc/flinkfmt/keyhash"
	"github.com/stateproc/stateproc/flinkfmt/typeser"
	"github.com/stateproc/stateproc/keygroup"
)

// EntryIterator streams a keyed state's entries key group by key group,
// with a sticky error.
type EntryIterator struct {
	ctx   context.Context
	k     *Keyed
	state int // -1 for every state
	kgs   keygroup.Range
	steps []step
	// reach is, per subtask, where the bytes of its key groups that the
	// iteration reads end in its stream: how far a read from a bucket may
	// take the next key groups' bytes along.
	reach    []int64
	next     int
	buf      []Entry
	pos      int
	err      error
	warnings []Warning
	closed   bool
	// keep, when set, selects the entries of a lookup.
	keep func(*Entry) bool
	// native reads the steps of native handles.
	native nativeCursor
	// cursor walks a canonical key group entry by entry, out of bufs, which
	// the iterator takes from bufPool when it first reads and gives back
	// at its end; cur is the entry it gave last.
	cursor canonCursor
	parser kgParser
	bufs   *kgBuffers
	cur    *Entry
	// quick holds, per state, what NextFigures needs of it.
	quick []quickState
}

// bufPool holds the buffers of finished iterators: a scan opens one
// iterator per state and key group.
var bufPool = sync.Pool{New: func() any { return new(kgBuffers) }}

// Entries iterates the entries of state (an index into States, or -1 for
// every state) in the key groups kgs, in ascending key-group order and, in
// a key group, in the order the layout stores them (for native RocksDB
// handles, as the canonical layout does: by state, then by key). Close
// releases the files a native handle keeps open.
func (k *Keyed) Entries(ctx context.Context, state int, kgs keygroup.Range) *EntryIterator {
	it := &EntryIterator{ctx: ctx, k: k, state: state, kgs: kgs, pos: -1}
	if state < -1 || state >= len(k.States) {
		it.err = fmt.Errorf("flinkfmt: operator %s has no state %d (it has %d)", k.Operator.ID, state, len(k.States))
	}
	return it
}

// Next advances to the next entry.
func (it *EntryIterator) Next() bool {
	for it.err == nil && !it.closed {
		if it.cursor.active {
			e := &it.cursor.e
			ok, err := it.cursor.next(e)
			if err != nil {
				return it.fail(err)
			}
			if !ok {
				it.cursor.finish(it)
				continue
			}
			if it.keep == nil || it.keep(e) {
				it.cur = e
				return true
			}
			continue
		}
		if it.pos+1 < len(it.buf) {
			it.pos++
			it.cur = &it.buf[it.pos]
			return true
		}
		if !it.loadNext() {
			it.release()
			return false
		}
	}
	return false
}

// Prime makes the iteration's first read, as Next would make it, without
// taking an entry: for a walk that starts the reads of the next key groups
// ahead of its workers. An error is the iteration's, for Next and Err. It
// does nothing once the iteration has begun.
func (it *EntryIterator) Prime() {
	if it.err != nil || it.closed || it.steps != nil {
		return
	}
	if !it.loadNext() {
		it.release()
	}
}

// Entry returns the current entry; it and its slices are valid until the
// next call of Next.
func (it *EntryIterator) Entry() *Entry { return it.cur }

// NextValueSizes stores in sizes the lengths of the next values of an
// iteration of one state, as the state stores them (a map value with its
// null flag byte, one byte for a null), and returns how many it stored:
// fewer than len(sizes) only at the end or on an error, which Err returns.
// It is for a tool that needs nothing else of an entry: in a key group
// that a walk of every state has checked, the composite keys are not split
// again.
func (it *EntryIterator) NextValueSizes(sizes []int) int {
	n := 0
	for n < len(sizes) && it.err == nil && !it.closed {
		c := &it.cursor
		if c.active && c.single && it.keep == nil && c.m.Kind != List && c.m.Kind != Timers {
			k, err := c.sizes(sizes[n:])
			n += k
			if err != nil {
				it.fail(err)
				break
			}
			if c.done {
				c.finish(it)
			}
			continue
		}
		if !it.Next() {
			break
		}
		e := it.Entry()
		switch {
		case it.k.States[e.State].Kind != Map:
			sizes[n] = len(e.Value)
		case e.Null:
			sizes[n] = 1
		default:
			sizes[n] = 1 + len(e.Value)
		}
		n++
	}
	return n
}

// release gives the iterator's buffers back once nothing refers to them.
func (it *EntryIterator) release() {
	if it.bufs != nil {
		it.cursor.active = false
		// The buffers stay; what the window holds is this walk's.
		it.bufs.win = window{b: it.bufs.win.b[:0]}
		bufPool.Put(it.bufs)
		it.bufs = nil
	}
}

// Err returns the first error.
func (it *EntryIterator) Err() error { return it.err }

// Close ends the iteration and closes the files it has open (the tables
// of a native handle).
func (it *EntryIterator) Close() error {
	it.closed = true
	it.native.close()
	it.release()
	return nil
}

// Warnings lists the parts skipped so far.
func (it *EntryIterator) Warnings() []Warning { return it.warnings }

// step is one key group of one subtask's handle to read; idx is its index
// in the handle's key groups, -1 for a changelog handle, which is refused.
type step struct{ kg, sub, idx int }

// plan lists the key groups to read in ascending order; a subtask's
// managed state comes before its raw keyed timers of the same key group.
func (it *EntryIterator) plan() []step {
	var steps []step
	for j, sk := range it.k.subtasks {
		h := sk.handle
		switch {
		case sk.layout == LayoutRocksDBNative:
			// Only the handle's own key groups: a rescaled instance may
			// still hold others, which Flink skips on restore.
			r := it.kgs.Intersect(h.KeyGroups)
			for kg := r.Start; kg <= r.End && r.Len() > 0; kg++ {
				steps = append(steps, step{kg: kg, sub: j, idx: kg - h.KeyGroups.Start})
			}
		case sk.layout == LayoutChangelog:
			if r := it.kgs.Intersect(h.KeyGroups); r.Len() > 0 {
				steps = append(steps, step{kg: r.Start, sub: j, idx: -1})
			}
		case (sk.header != nil || sk.layout == LayoutRawTimers) && len(h.Offsets) > 0:
			// Offset i is of key group Start+i. Only the offsets within kgs
			// are visited: a scan asks for one key group at a time, and a
			// walk of all of them per call made it quadratic in the key
			// groups.
			held := keygroup.Range{Start: h.KeyGroups.Start, End: h.KeyGroups.Start + len(h.Offsets) - 1}
			r := it.kgs.Intersect(held)
			for kg := r.Start; kg <= r.End && r.Len() > 0; kg++ {
				steps = append(steps, step{kg: kg, sub: j, idx: kg - h.KeyGroups.Start})
			}
		}
	}
	sort.SliceStable(steps, func(a, b int) bool { return steps[a].kg < steps[b].kg })
	return steps
}

// reachOf is where the bytes of the iteration's key groups of sub end in
// its stream, for a canonical handle (0 for any other).
func (it *EntryIterator) reachOf(sub int) int64 {
	if it.reach == nil {
		it.reach = make([]int64, len(it.k.subtasks))
		for _, st := range it.steps {
			sk := it.k.subtasks[st.sub]
			if st.idx < 0 || sk.layout != LayoutCanonical {
				continue
			}
			if off := sk.handle.Offsets[st.idx]; off > 0 {
				it.reach[st.sub] = max(it.reach[st.sub], it.k.r.spanEnd(sk.handle, off, sk))
			}
		}
	}
	return it.reach[sub]
}

// loadNext reads the next key group with entries into buf, or of a native
// handle, the next chunk of a key group.
func (it *EntryIterator) loadNext() bool {
	if it.steps == nil {
		it.steps = it.plan()
	}
	for it.native.active || it.next < len(it.steps) {
		if err := it.ctx.Err(); err != nil {
			return it.fail(err)
		}
		it.buf, it.pos = it.buf[:0], -1
		if !it.native.active {
			st := it.steps[it.next]
			it.next++
			sk := it.k.subtasks[st.sub]
			switch {
			case st.idx < 0:
				return it.fail(at(sk.file, it.k.Operator.ID.String(), st.kg, -1, changelogRefusal(sk.handle)))
			case sk.layout == LayoutRocksDBNative:
				if err := it.native.start(it, st.sub, st.kg); err != nil {
					return it.fail(err)
				}
			case sk.layout == LayoutCanonical:
				if err := it.startCanonical(sk, st.idx, st.kg, it.reachOf(st.sub)); err != nil {
					return it.fail(err)
				}
				if it.cursor.active {
					return true
				}
				continue
			default:
				if err := it.k.readEntries(it.ctx, sk, st.idx, st.kg, it.state, &it.buf, &it.warnings); err != nil {
					return it.fail(err)
				}
			}
		}
		if it.native.active {
			if err := it.native.fill(it); err != nil {
				return it.fail(err)
			}
		}
		if it.keep != nil {
			kept := it.buf[:0]
			for j := range it.buf {
				if it.keep(&it.buf[j]) {
					kept = append(kept, it.buf[j])
				}
			}
			it.buf = kept
		}
		if len(it.buf) > 0 {
			return true
		}
	}
	it.native.close()
	return false
}

func (it *EntryIterator) fail(err error) bool {
	if it.cursor.active {
		it.cursor.finish(it)
	}
	it.err = err
	it.native.close()
	it.release()
	return false
}

// startCanonical points the cursor at key group kg (index i of the
// subtask's canonical handle). Reading one state of a key group that a
// whole walk has already mapped reads only that state's bytes, or nothing
// when the key group holds none of it.
func (it *EntryIterator) startCanonical(sk *subtaskKeyed, i, kg int, reach int64) error {
	k := it.k
	var part *stateSpan
	sid := -1
	if it.state >= 0 {
		if parts := sk.knownParts(i); parts != nil {
			for s, idx := range sk.ids {
				if idx == it.state {
					sid = s
					break
				}
			}
			if sid < 0 || parts[sid].start < 0 {
				return nil
			}
			part = &parts[sid]
		}
	}
	if it.bufs == nil {
		it.bufs = bufPool.Get().(*kgBuffers)
	}
	it.bufs.win.until = reach
	d, err := k.r.readKeyGroup(it.ctx, sk, i, kg, LayoutCanonical, it.bufs, part)
	if err != nil {
		return at(sk.file, k.Operator.ID.String(), kg, sk.handle.Offsets[i], err)
	}
	if d == nil {
		return nil
	}
	it.parser = kgParser{k: k, sk: sk, kg: kg, state: it.state, prefix: prefixLen(k.Operator.MaxParallelism), kr: it.parser.kr, lastKey: it.parser.lastKey[:0]}
	c := &it.cursor
	c.reset(&it.parser, d, i)
	if part != nil {
		c.only(sid)
	} else if it.state < 0 && sk.knownParts(i) == nil {
		c.record()
	}
	return nil
}

// readEntries appends the entries of key group kg (index i of the
// subtask's handle) of state (or of all states) to out.
func (k *Keyed) readEntries(ctx context.Context, sk *subtaskKeyed, i, kg, state int, out *[]Entry, warns *[]Warning) error {
	d, err := k.r.readKeyGroup(ctx, sk, i, kg, sk.layout, nil, nil)
	if err != nil {
		return at(sk.file, k.Operator.ID.String(), kg, sk.handle.Offsets[i], err)
	}
	if d == nil {
		return nil
	}
	p := &kgParser{k: k, sk: sk, kg: kg, state: state, out: out, prefix: prefixLen(k.Operator.MaxParallelism)}
	var base int64
	if !d.compressed {
		base = d.base
	}
	r := wire.New(d.b, base)
	err = p.parse(r)
	if p.warn != nil {
		p.warn.File, p.warn.Compressed = sk.file, d.compressed
		*warns = append(*warns, *p.warn)
	}
	if err != nil {
		off := r.Offset()
		if we := (*wire.Error)(nil); errors.As(err, &we) {
			off = -1 // the error names its offset
		}
		if d.compressed {
			err = fmt.Errorf("in the decompressed key group: %w", err)
			off = sk.handle.Offsets[i]
		}
		return at(sk.file, k.Operator.ID.String(), kg, off, err)
	}
	return nil
}

// parse walks one key group in the subtask's layout. Every error is a
// structural one unless it says what is not readable yet.
func (p *kgParser) parse(r *wire.Buf) error {
	var err error
	switch p.sk.layout {
	case LayoutHeap:
		err = p.heap(r)
	case LayoutRawTimers:
		err = p.rawTimers(r)
	default:
		err = p.canonical(r)
	}
	return corrupt(err)
}

// prefixLen is the length of the key-group prefix of composite keys.
func prefixLen(maxParallelism int) int {
	if maxParallelism > 128 {
		return 2
	}
	return 1
}

type kgParser struct {
	k      *Keyed
	sk     *subtaskKeyed
	kg     int
	state  int
	out    *[]Entry
	prefix int
	warn   *Warning
	// kr walks composite keys, one at a time.
	kr wire.Buf
	// lenOf is the state whose namespace length nsLen is, and ambiguous
	// whether its composite keys carry the key's and namespace's lengths.
	lenOf     *StateMeta
	nsLen     int
	ambiguous bool
	// lastKey is the key the last composite key began with, when the key
	// serializer is prefix-free: the entries of a key lie together, and a
	// composite key that starts with the same bytes holds the same key.
	lastKey []byte
}

func (p *kgParser) meta(sid int) (*StateMeta, int, error) {
	if sid < 0 || sid >= len(p.sk.ids) {
		return nil, 0, corruptf("state id %d, the header has %d states", sid, len(p.sk.ids))
	}
	idx := p.sk.ids[sid]
	return p.k.States[idx], idx, nil
}

// canonical parses a key group of the unified layout into p.out.
func (p *kgParser) canonical(r *wire.Buf) error {
	c := canonCursor{p: p, r: r, copyKeys: true, needID: true}
	var e Entry
	for {
		ok, err := c.next(&e)
		if err != nil || !ok {
			return err
		}
		*p.out = append(*p.out, e)
	}
}

// canonCursor walks a key group of the unified layout one entry at a
// time: a state id, then framed key and value pairs until a key carries
// the flag that another state id (or the end) follows.
type canonCursor struct {
	p *kgParser
	r *wire.Buf
	// buf is r's storage when the cursor reads an iterator's key group.
	buf wire.Buf
	// e is the entry the cursor gives an iterator.
	e Entry
	// active is set while an iterator's key group has entries left.
	active bool
	// copyKeys gives each flag-cleared key memory of its own, for callers
	// that keep entries, and leaves locating errors to them; otherwise one
	// scratch buffer serves.
	copyKeys bool
	scratch  []byte

	needID, ended, done bool
	sid, idx            int
	m                   *StateMeta
	keyAt               int64
	// single is set when r holds one state's entries only (a stateSpan).
	single bool
	// list walks the elements of a list value, each an entry like elem.
	inList bool
	list   wire.Buf
	elem   Entry
	// rec, when set, records where each state id's entries lie.
	rec    []stateSpan
	recBad bool
	// i, compressed and handleOff locate errors and what rec learns.
	i          int
	compressed bool
	handleOff  int64
}

func (c *canonCursor) reset(p *kgParser, d *keyGroupData, i int) {
	var base int64
	if !d.compressed {
		base = d.base
	}
	*c = canonCursor{p: p, scratch: c.scratch[:0], active: true, needID: true,
		i: i, compressed: d.compressed, handleOff: p.sk.handle.Offsets[i]}
	c.buf.Reset(d.b, base)
	c.r = &c.buf
}

// only makes the cursor read the entries of state id sid, which a whole
// walk found to be all the bytes it was given.
func (c *canonCursor) only(sid int) {
	m, idx, err := c.p.meta(sid)
	if err != nil {
		c.active = false
		return
	}
	c.needID, c.single, c.sid, c.m, c.idx = false, true, sid, m, idx
}

// record makes the cursor note where each state id's entries lie.
func (c *canonCursor) record() {
	for range c.p.sk.ids {
		c.rec = append(c.rec, stateSpan{start: -1, end: -1})
	}
}

// next sets e to the next entry of the chosen state (p.state, or every
// one); false at the end of the key group.
func (c *canonCursor) next(e *Entry) (bool, error) {
	p, r := c.p, c.r
	for {
		if c.inList {
			ok, err := c.listElement(e)
			if err != nil {
				return false, c.fail(at("", "", -1, c.keyAt, err))
			}
			if ok {
				return true, nil
			}
		}
		if c.done {
			return false, nil
		}
		if c.needID {
			id := r.U16()
			if err := r.Err(); err != nil {
				return false, c.fail(err)
			}
			if id == endOfKeyGroup {
				if r.Len() != 0 {
					return false, c.fail(corruptf("offset %d: %d bytes follow the end of the key group", r.Offset(), r.Len()))
				}
				c.done, c.ended = true, true
				return false, nil
			}
			m, idx, err := p.meta(int(id))
			if err != nil {
				return false, c.fail(err)
			}
			if c.rec != nil {
				if c.rec[id].start >= 0 {
					// A state whose entries lie in two places.
					c.recBad = true
				}
				c.rec[id] = stateSpan{start: r.Pos(), end: -1}
			}
			c.sid, c.m, c.idx, c.needID = int(id), m, idx, false
		}
		key, val, last, err := c.pair()
		if err != nil {
			return false, err
		}
		if p.state >= 0 && p.state != c.idx {
			continue
		}
		if last {
			// The flag is cleared in a copy: the key group's bytes may be
			// the metadata's own inline bytes.
			if c.copyKeys {
				key = append([]byte(nil), key...)
			} else {
				c.scratch = append(c.scratch[:0], key...)
				key = c.scratch
			}
			key[0] &^= metaFollowsFlag
		}
		list, err := p.entry(c.m, c.idx, key, val, e)
		if err != nil {
			return false, c.fail(at("", "", -1, c.keyAt, err))
		}
		if !list {
			return true, nil
		}
		c.elem, c.inList = *e, true
		c.list.Reset(val, 0)
	}
}

// pair reads the next framed key and value of the current state, and
// whether it is the state's last in the key group.
func (c *canonCursor) pair() (key, val []byte, last bool, err error) {
	r := c.r
	c.keyAt = r.Offset()
	key = r.Sized("key")
	val = r.Sized("value")
	if err := r.Err(); err != nil {
		return nil, nil, false, c.fail(err)
	}
	if len(key) == 0 {
		return nil, nil, false, c.fail(corruptf("offset %d: empty composite key", c.keyAt))
	}
	last = key[0]&metaFollowsFlag != 0
	switch {
	case last && c.single:
		if r.Len() != 0 {
			return nil, nil, false, c.fail(corruptf("offset %d: %d bytes follow the last entry of state %q", r.Offset(), r.Len(), c.m.Name))
		}
		c.done, c.ended = true, true
	case last:
		c.needID = true
		if c.rec != nil {
			c.rec[c.sid].end = r.Pos()
		}
	case c.single && r.Len() == 0:
		return nil, nil, false, c.fail(corruptf("offset %d: the entries of state %q end without the flag of their last entry", r.Offset(), c.m.Name))
	}
	return key, val, last, nil
}

// sizes stores the stored lengths of the next values of a single state
// (see NextValueSizes) in dst, without splitting keys: only a key group
// that a whole walk has checked is read this way.
func (c *canonCursor) sizes(dst []int) (int, error) {
	n := 0
	for n < len(dst) && !c.done {
		_, val, _, err := c.pair()
		if err != nil {
			return n, err
		}
		switch {
		case c.m.Kind != Map:
			dst[n] = len(val)
		case len(val) == 0:
			return n, c.fail(at("", "", -1, c.keyAt, corruptf("map entry without its null flag")))
		case val[0] != 0:
			dst[n] = 1
		default:
			dst[n] = len(val)
		}
		n++
	}
	return n, nil
}

// listElement sets e to the next element of a canonical list value:
// elements separated by one delimiter byte.
func (c *canonCursor) listElement(e *Entry) (bool, error) {
	r, m := &c.list, c.m
	if r.Len() == 0 {
		c.inList = false
		return false, nil
	}
	val := r.Bytes()
	start := r.Pos()
	*e = c.elem
	if err := m.Stored.Skip(r); err != nil {
		if errors.Is(err, typeser.ErrUnframed) {
			e.Value = val[start:]
			c.inList = false
			c.p.warnf(m, m.Stored, err, int64(start), int64(len(val)-start), "list elements without a length of their own: the rest of the list is one opaque entry")
			return true, nil
		}
		return false, err
	}
	e.Value = val[start:r.Pos()]
	if r.Len() > 0 {
		if d := r.U8(); d != listDelimiter {
			return false, corruptf("list element followed by %#02x, not the delimiter", d)
		}
		if r.Len() == 0 {
			return false, corruptf("list ends with a delimiter")
		}
	}
	return true, nil
}

// fail marks err as structural, locates it as readEntries does, and ends
// the walk.
func (c *canonCursor) fail(err error) error {
	c.done, c.inList = true, false
	err = corrupt(err)
	if c.copyKeys {
		return err
	}
	off := c.r.Offset()
	if we := (*wire.Error)(nil); errors.As(err, &we) {
		off = -1 // the error names its offset
	}
	if c.compressed {
		err = fmt.Errorf("in the decompressed key group: %w", err)
		off = c.handleOff
	}
	return at(c.p.sk.file, c.p.k.Operator.ID.String(), c.p.kg, off, err)
}

// finish ends an iterator's walk of a key group: what it skipped becomes
// a warning and, after a whole walk to the end, where each state lies is
// kept.
func (c *canonCursor) finish(it *EntryIterator) {
	p := c.p
	if p.warn != nil {
		p.warn.File, p.warn.Compressed = p.sk.file, c.compressed
		it.warnings = append(it.warnings, *p.warn)
		p.warn = nil
	}
	if c.rec != nil && c.ended && !c.recBad {
		p.sk.learnParts(c.i, slices.Clone(c.rec))
	}
	c.active = false
}

func (p *kgParser) checkPrefix(key []byte) ([]byte, error) {
	if len(key) < p.prefix {
		return nil, corruptf("composite key of %d bytes has no key-group prefix", len(key))
	}
	g := int(key[0])
	if p.prefix == 2 {
		g = g<<8 | int(key[1])
	}
	if g != p.kg {
		return nil, corruptf("composite key of key group %d in key group %d", g, p.kg)
	}
	return key[p.prefix:], nil
}

// canonicalEntry appends the entries of one canonical key and value to
// p.out: one, or one per element of a list.
func (p *kgParser) canonicalEntry(m *StateMeta, idx int, key, val []byte) error {
	var e Entry
	list, err := p.entry(m, idx, key, val, &e)
	if err != nil {
		return err
	}
	if !list {
		*p.out = append(*p.out, e)
		return nil
	}
	c := canonCursor{p: p, m: m, elem: e}
	c.list.Reset(val, 0)
	for {
		ok, err := c.listElement(&e)
		if err != nil || !ok {
			return err
		}
		*p.out = append(*p.out, e)
	}
}

// entry sets e to the entry of one canonical key and value; for a list
// value, list is set and e holds all but the value, which is split into
// one entry per element.
func (p *kgParser) entry(m *StateMeta, idx int, key, val []byte, e *Entry) (list bool, err error) {
	rest, err := p.checkPrefix(key)
	if err != nil {
		return false, err
	}
	*e = Entry{State: idx}
	e.KeyGroup = p.kg
	if m.Kind == Timers {
		if len(rest) < 8 {
			return false, corruptf("timer key of %d bytes", len(rest))
		}
		e.Timestamp = int64(binary.BigEndian.Uint64(rest)) ^ -1<<63
		k, ns, err := p.splitTimer(m, rest[8:])
		if err != nil {
			return false, err
		}
		e.Key, e.Namespace = k, ns
		if len(val) != 0 {
			return false, corruptf("timer with a value of %d bytes", len(val))
		}
		return false, nil
	}
	k, ns, user, err := p.splitKey(m, rest)
	if err != nil {
		return false, err
	}
	e.Key, e.Namespace = k, ns
	switch m.Kind {
	case Map:
		e.MapKey = user
		if len(val) == 0 {
			return false, corruptf("map entry without its null flag")
		}
		if val[0] != 0 {
			e.Null = true
		} else {
			e.Value = val[1:]
		}
	case List:
		return true, nil
	default:
		e.Value = val
	}
	return false, nil
}

func (p *kgParser) warnf(m *StateMeta, s *typeser.Serializer, err error, off, n int64, format string, args ...any) {
	if p.warn != nil {
		return
	}
	p.warn = &Warning{KeyGroup: p.kg, Offset: off, Length: n, State: m.Name, Serializer: s.Class, Message: fmt.Sprintf(format, args...)}
	var ue *typeser.UnframedError
	if errors.As(err, &ue) {
		p.warn.Serializer, p.warn.Class = ue.Serializer, ue.Class
	}
}

// splitKey splits the key, namespace and map user key of a canonical
// composite key (SerializedCompositeKeyBuilder): when both the key and the
// namespace serializer have variable lengths, each is followed by its
// length in variable-int bytes.
func (p *kgParser) splitKey(m *StateMeta, b []byte) (key, ns, user []byte, err error) {
	keySer := p.k.Key
	if m != p.lenOf {
		// Worked out once per state: the lengths are the serializers'.
		p.lenOf, p.nsLen = m, m.Namespace.FixedLen()
		p.ambiguous = keySer.FixedLen() < 0 && p.nsLen < 0
	}
	ambiguous := p.ambiguous
	r := &p.kr
	r.Reset(b, 0)
	reused := len(p.lastKey) > 0 && bytes.HasPrefix(b, p.lastKey)
	if reused {
		r.Seek(len(p.lastKey))
	} else if err := keySer.Skip(r); err != nil {
		if !errors.Is(err, typeser.ErrUnframed) || ambiguous || m.Kind == Map {
			return nil, nil, nil, err
		}
		// A Kryo key: the namespace has a fixed length, so the key is the
		// bytes before it.
		n := p.nsLen
		if n > len(b) {
			return nil, nil, nil, corruptf("composite key of %d bytes is shorter than its namespace", len(b))
		}
		return b[:len(b)-n], b[len(b)-n:], nil, nil
	}
	key = b[:r.Pos()]
	if !reused && keySer.PrefixFree() {
		p.lastKey = append(p.lastKey[:0], key...)
	}
	if ambiguous {
		skipVariableInt(r, len(key))
	}
	nsStart := r.Pos()
	if err := m.Namespace.Skip(r); err != nil {
		return nil, nil, nil, err
	}
	ns = b[nsStart:r.Pos()]
	if ambiguous {
		skipVariableInt(r, len(ns))
	}
	if r.Err() != nil {
		return nil, nil, nil, corrupt(r.Err())
	}
	user = r.Rest()
	if m.Kind != Map && len(user) != 0 {
		return nil, nil, nil, corruptf("%d bytes follow the namespace of a %s state key", len(user), m.Kind)
	}
	return key, ns, user, nil
}

// skipVariableInt skips the bytes writeVariableIntBytes wrote for v: one
// per base-256 digit, at least one.
func skipVariableInt(r *wire.Buf, v int) {
	for {
		r.U8()
		v >>= 8
		if v == 0 {
			return
		}
	}
}

func (p *kgParser) splitTimer(m *StateMeta, b []byte) (key, ns []byte, err error) {
	r := &p.kr
	r.Reset(b, 0)
	if err := m.Value.Args[0].Skip(r); err != nil {
		if !errors.Is(err, typeser.ErrUnframed) {
			return nil, nil, err
		}
		n := m.Value.Args[1].FixedLen()
		if n < 0 || n > len(b) {
			return nil, nil, err
		}
		return b[:len(b)-n], b[len(b)-n:], nil
	}
	key = b[:r.Pos()]
	ns = r.Rest()
	if _, err := m.Value.Args[1].Decode(ns); err != nil {
		return nil, nil, err
	}
	return key, ns, nil
}

// heap parses a key group of the heap layout: its number, then every state
// of the header: its id and its entries, unframed.
func (p *kgParser) heap(r *wire.Buf) error {
	if g := int(r.I32()); g != p.kg && r.Err() == nil {
		return corruptf("heap key group %d at the offset of key group %d", g, p.kg)
	}
	for range p.sk.header.States {
		sid := int(int16(r.U16()))
		if r.Err() != nil {
			return corrupt(r.Err())
		}
		m, idx, err := p.meta(sid)
		if err != nil {
			return err
		}
		stop, err := p.heapState(r, m, idx)
		if err != nil || stop {
			return err
		}
	}
	if r.Len() != 0 {
		return corruptf("offset %d: %d bytes follow the last state of the key group", r.Offset(), r.Len())
	}
	return nil
}

// heapState reads one state's section; stop reports a value that could not
// be walked, after which the rest of the key group is skipped.
func (p *kgParser) heapState(r *wire.Buf, m *StateMeta, idx int) (stop bool, err error) {
	emit := p.state < 0 || p.state == idx
	n := r.Count("entries of state "+m.Name, 1)
	if r.Err() != nil {
		return false, corrupt(r.Err())
	}
	b := r.Bytes()
	read := func(s *typeser.Serializer) ([]byte, bool, error) {
		start := r.Pos()
		if err := s.Skip(r); err != nil {
			if errors.Is(err, typeser.ErrUnframed) {
				p.warnf(m, s, err, r.Offset()-int64(r.Pos()-start), int64(len(b)-start), "%v: the rest of the key group is opaque", err)
				return nil, true, nil
			}
			return nil, false, err
		}
		return b[start:r.Pos()], false, nil
	}
	for i := 0; i < n; i++ {
		e := Entry{State: idx}
		e.KeyGroup = p.kg
		if m.Kind == Timers {
			start := r.Pos()
			ts := r.I64() ^ -1<<63
			k, stop, err := read(m.Value.Args[0])
			if err != nil || stop {
				return stop, err
			}
			ns, stop, err := read(m.Value.Args[1])
			if err != nil || stop {
				if stop {
					p.warn.Offset -= int64(r.Pos() - start)
				}
				return stop, err
			}
			e.Timestamp, e.Key, e.Namespace = ts, k, ns
			if emit {
				*p.out = append(*p.out, e)
			}
			continue
		}
		ns, stop, err := read(m.Namespace)
		if err != nil || stop {
			return stop, err
		}
		key, stop, err := read(p.k.Key)
		if err != nil || stop {
			return stop, err
		}
		e.Key, e.Namespace = key, ns
		switch m.Kind {
		case List:
			c := r.Count("list size", 1)
			for j := 0; j < c && r.Err() == nil; j++ {
				v, stop, err := read(m.Stored)
				if err != nil || stop {
					return stop, err
				}
				e.Value = v
				if emit {
					*p.out = append(*p.out, e)
				}
			}
		case Map:
			c := r.Count("map size", 1)
			for j := 0; j < c && r.Err() == nil; j++ {
				uk, stop, err := read(m.MapKey)
				if err != nil || stop {
					return stop, err
				}
				me := e
				me.MapKey = uk
				if r.Bool() {
					me.Null = true
				} else {
					v, stop, err := read(m.Stored)
					if err != nil || stop {
						return stop, err
					}
					me.Value = v
				}
				if emit {
					*p.out = append(*p.out, me)
				}
			}
		default:
			v, stop, err := read(m.Value)
			if err != nil || stop {
				return stop, err
			}
			e.Value = v
			if emit {
				*p.out = append(*p.out, e)
			}
		}
		if r.Err() != nil {
			return false, corrupt(r.Err())
		}
	}
	return false, corrupt(r.Err())
}

// KeyGroupOf returns the key group Flink assigns to key, a value as the
// key serializer decodes it, when Java's hashCode of the key is defined by
// its value (see package keyhash).
func (k *Keyed) KeyGroupOf(key any) (int, bool) {
	h, ok := keyhash.HashCode(key)
	if !ok {
		return 0, false
	}
	return keyhash.KeyGroup(h, k.Operator.MaxParallelism), true
}

// Lookup iterates the entries of state whose key decodes to key. It reads
// only the key's key group when KeyGroupOf knows it, and every key group
// otherwise.
func (k *Keyed) Lookup(ctx context.Context, state int, key any) *EntryIterator {
	kgs := keygroup.All(k.Operator.MaxParallelism)
	if kg, ok := k.KeyGroupOf(key); ok {
		kgs = keygroup.Range{Start: kg, End: kg}
	}
	it := k.Entries(ctx, state, kgs)
	it.keep = func(e *Entry) bool {
		v, err := k.Key.Decode(e.Key)
		return err == nil && reflect.DeepEqual(v, key)
	}
	return it
}
