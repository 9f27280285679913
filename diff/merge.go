package diff

import (
	"bytes"
	"cmp"
	"context"
	"fmt"

	"github.com/stateproc/stateproc/savepoint"
)

// cursor reads one side of a key group in order, checking the order the
// merge relies on and numbering list elements within their (key,
// namespace).
type cursor struct {
	it   savepoint.EntryIterator
	seg  savepoint.Segment
	meta *savepoint.Metadata
	kind savepoint.Kind
	// timers says the entries are timers, ordered by (time, key,
	// namespace).
	timers bool
	e      *savepoint.Entry
	ok     bool
	// n is the number of the current entry in its segment.
	n       uint64
	index   int
	started bool
	// The previous entry's parts, copied: an entry's slices are valid only
	// until the next one is read.
	prevKey, prevNS, prevMK []byte
	prevTS                  int64
	// sorted holds a segment of an unsorted source, kept for the next.
	sorted *sortedSegment
}

// open starts reading the segment that w gives as its i-th, seg.
func (c *cursor) open(ctx context.Context, w *itemWalk, i int, seg savepoint.Segment, p *statePair) error {
	it := w.walk.Entries(ctx, i)
	if w.unsorted {
		sorted := c.sorted
		if sorted == nil {
			sorted = &sortedSegment{}
		}
		if err := sorted.load(it, p.timers); err != nil {
			return err
		}
		c.sorted, it = sorted, sorted
	}
	*c = cursor{it: it, seg: seg, meta: w.src.Metadata(), kind: p.kind, timers: p.timers, sorted: c.sorted,
		prevKey: c.prevKey[:0], prevNS: c.prevNS[:0], prevMK: c.prevMK[:0]}
	return c.next()
}

func (c *cursor) close() {
	if c.it != nil {
		c.it.Close()
		c.it = nil
	}
}

// next moves to the next entry, or sets ok to false at the end.
func (c *cursor) next() error {
	if c.ok {
		c.n++
	}
	if !c.it.Next() {
		c.ok = false
		return c.it.Err()
	}
	c.ok = true
	e := c.it.Entry()
	c.e = e
	sameKey, sameNS := false, false
	if c.started {
		var err error
		if sameKey, sameNS, err = c.checkOrder(e); err != nil {
			return err
		}
	}
	c.started = true
	// Most entries of a map or list state share their key and namespace
	// with the one before: only what changed is copied.
	if !sameKey {
		c.prevKey = append(c.prevKey[:0], e.Key...)
	}
	if !sameNS {
		c.prevNS = append(c.prevNS[:0], e.Namespace...)
	}
	if c.kind == savepoint.Map {
		c.prevMK = append(c.prevMK[:0], e.MapKey...)
	}
	c.prevTS = e.Timestamp
	return nil
}

// checkOrder holds e against the entry before it and numbers list
// elements: the layouts promise this order, and the merge would miscount
// without it. It says whether e's key and namespace are the previous one's.
func (c *cursor) checkOrder(e *savepoint.Entry) (sameKey, sameNS bool, err error) {
	var order int
	if c.timers {
		order = cmp.Or(cmp.Compare(e.Timestamp, c.prevTS), bytes.Compare(e.Key, c.prevKey), bytes.Compare(e.Namespace, c.prevNS))
	} else {
		byKey := bytes.Compare(e.Key, c.prevKey)
		byNS := bytes.Compare(e.Namespace, c.prevNS)
		sameKey, sameNS = byKey == 0, byKey == 0 && byNS == 0
		order = cmp.Or(byKey, byNS)
		switch {
		case order != 0:
			c.index = 0
		case c.kind == savepoint.List:
			c.index++
			return sameKey, sameNS, nil
		case c.kind == savepoint.Map:
			order = bytes.Compare(e.MapKey, c.prevMK)
		}
	}
	if order > 0 {
		return sameKey, sameNS, nil
	}
	return false, false, &savepoint.Error{File: c.seg.File, KeyGroup: c.seg.KeyGroup, Offset: -1, Err: fmt.Errorf(
		"%w: %s: entry %d of the segment is not after the one before it in (key, namespace, map key) order, which diff merges by",
		savepoint.ErrUnsupported, c.meta.Describe(c.seg.Ref), c.n)}
}

// compare orders the current entries of a and b as the merge takes them.
func compare(timers bool, k savepoint.Kind, a, b *cursor) int {
	ea, eb := a.e, b.e
	if timers {
		return cmp.Or(cmp.Compare(ea.Timestamp, eb.Timestamp), bytes.Compare(ea.Key, eb.Key), bytes.Compare(ea.Namespace, eb.Namespace))
	}
	c := cmp.Or(bytes.Compare(ea.Key, eb.Key), bytes.Compare(ea.Namespace, eb.Namespace))
	if c != 0 {
		return c
	}
	switch k {
	case savepoint.Map:
		return bytes.Compare(ea.MapKey, eb.MapKey)
	case savepoint.List:
		return cmp.Compare(a.index, b.index)
	}
	return 0
}

// worker compares items one after another, keeping its buffers.
type worker struct {
	c    *comparison
	a, b cursor

	keys, entries Counts
	// ex holds the item's examples of each kind, at most Options.Examples.
	ex [kinds][]Example

	// The key being merged and what has been seen of it.
	curKey           []byte
	keyOpen          bool
	hasA, hasB, diff bool
	// For examples: the key's entries that differ on each side and, while
	// none differs, its entries, at most MaxExampleEntries each.
	diffA, diffB, same     []rawEntry
	moreA, moreB, moreSame bool
	p                      *statePair
	// wantExamples says the item's pair lists examples; collect that the
	// key being merged may still become one, since a kind wants more.
	wantExamples, collect bool
}

func (w *worker) item(ctx context.Context, it *item) error {
	p := it.p
	w.p, w.keys, w.entries, w.keyOpen = p, Counts{}, Counts{}, false
	for k := range w.ex {
		w.ex[k] = w.ex[k][:0]
	}
	w.wantExamples = p.examples != nil
	var err error
	switch {
	case it.segA != nil && it.segB != nil:
		err = w.merge(ctx, it)
	case it.segA != nil:
		err = w.oneSide(ctx, it.walkA, it.inA, *it.segA, kindOnlyA)
	default:
		err = w.oneSide(ctx, it.walkB, it.inB, *it.segB, kindOnlyB)
	}
	if err != nil {
		return err
	}
	p.add(w.keys, w.entries, &w.ex, it.kg)
	return nil
}

// oneSide counts a key group that only one side holds from its index, and
// reads it only as far as examples need.
func (w *worker) oneSide(ctx context.Context, walk *itemWalk, i int, seg savepoint.Segment, k kind) error {
	w.entries.count(k, seg.Entries)
	if !w.p.timers {
		w.keys.count(k, seg.Keys)
	}
	if !w.wantExamples {
		return nil
	}
	c := &w.a
	if k == kindOnlyB {
		c = &w.b
	}
	defer c.close()
	if err := c.open(ctx, walk, i, seg, w.p); err != nil {
		return err
	}
	for c.ok && len(w.ex[k]) < w.c.opts.Examples {
		if w.p.timers {
			if err := w.timerExample(k, c); err != nil {
				return err
			}
		} else {
			if !w.keyOpen || !bytes.Equal(c.e.Key, w.curKey) {
				if err := w.finishKey(false); err != nil {
					return err
				}
				w.startKey(c.e.Key)
			}
			w.take(k, c)
		}
		if err := c.next(); err != nil {
			return err
		}
	}
	return w.finishKey(false)
}

// merge compares a key group both sides hold.
func (w *worker) merge(ctx context.Context, it *item) error {
	p := it.p
	a, b := &w.a, &w.b
	defer a.close()
	defer b.close()
	if err := a.open(ctx, it.walkA, it.inA, *it.segA, p); err != nil {
		return err
	}
	if err := b.open(ctx, it.walkB, it.inB, *it.segB, p); err != nil {
		return err
	}
	for a.ok || b.ok {
		var c int
		switch {
		case !b.ok:
			c = -1
		case !a.ok:
			c = 1
		default:
			c = compare(p.timers, p.kind, a, b)
		}
		if p.timers {
			if err := w.timer(c, a, b); err != nil {
				return err
			}
			continue
		}
		key := a.e.Key
		if c > 0 {
			key = b.e.Key
		}
		if !w.keyOpen || !bytes.Equal(key, w.curKey) {
			if err := w.finishKey(true); err != nil {
				return err
			}
			w.startKey(key)
		}
		var err error
		switch {
		case c < 0:
			w.entries.OnlyA++
			w.take(kindOnlyA, a)
			err = a.next()
		case c > 0:
			w.entries.OnlyB++
			w.take(kindOnlyB, b)
			err = b.next()
		case bytes.Equal(a.e.Value, b.e.Value):
			w.entries.Unchanged++
			w.take(kindUnchanged, a)
			err = cmp.Or(a.next(), b.next())
		default:
			w.entries.Changed++
			w.take(kindChanged, a)
			w.take(kindChanged, b)
			err = cmp.Or(a.next(), b.next())
		}
		if err != nil {
			return err
		}
	}
	return w.finishKey(true)
}

// timer takes one step of the merge of two timer services.
func (w *worker) timer(c int, a, b *cursor) error {
	var err error
	switch {
	case c < 0:
		w.entries.OnlyA++
		err = w.timerExample(kindOnlyA, a)
		if err == nil {
			err = a.next()
		}
	case c > 0:
		w.entries.OnlyB++
		err = w.timerExample(kindOnlyB, b)
		if err == nil {
			err = b.next()
		}
	default:
		w.entries.Unchanged++
		err = w.timerExample(kindUnchanged, a)
		if err == nil {
			err = cmp.Or(a.next(), b.next())
		}
	}
	return err
}

// timerExample lists the current timer of c as an example of kind k, if
// the item still wants one.
func (w *worker) timerExample(k kind, c *cursor) error {
	if !w.wantExamples || len(w.ex[k]) >= w.c.opts.Examples {
		return nil
	}
	dec := w.p.decA
	if c == &w.b {
		dec = w.p.decB
	}
	r := rawEntry{key: c.e.Key, namespace: c.e.Namespace, timestamp: c.e.Timestamp, n: c.n}
	e, err := dec.entry(&r, c.seg)
	if err != nil {
		return err
	}
	ex := Example{Key: dec.decodeKey(c.e.Key)}
	if c == &w.b {
		ex.B = []Entry{e}
	} else {
		ex.A = []Entry{e}
	}
	w.ex[k] = append(w.ex[k], ex)
	return nil
}

func (w *worker) startKey(key []byte) {
	w.curKey = append(w.curKey[:0], key...)
	w.keyOpen, w.hasA, w.hasB, w.diff = true, false, false, false
	w.diffA, w.diffB, w.same = w.diffA[:0], w.diffB[:0], w.same[:0]
	w.moreA, w.moreB, w.moreSame = false, false, false
	w.collect = false
	if w.wantExamples {
		for k := range w.ex {
			if len(w.ex[k]) < w.c.opts.Examples {
				w.collect = true
			}
		}
	}
}

// take notes the current entry of c for the key being merged: k says how
// it compares with the other side.
func (w *worker) take(k kind, c *cursor) {
	fromB := c == &w.b
	switch k {
	case kindOnlyA:
		w.hasA, w.diff = true, true
	case kindOnlyB:
		w.hasB, w.diff = true, true
	case kindChanged:
		w.hasA, w.hasB, w.diff = true, true, true
	default:
		w.hasA, w.hasB = true, true
	}
	if !w.collect {
		return
	}
	switch {
	case k == kindUnchanged:
		if len(w.same) < MaxExampleEntries {
			w.same = keep(w.same, c.e, c.index, c.n)
		} else {
			w.moreSame = true
		}
	case fromB:
		if len(w.diffB) < MaxExampleEntries {
			w.diffB = keep(w.diffB, c.e, c.index, c.n)
		} else {
			w.moreB = true
		}
	default:
		if len(w.diffA) < MaxExampleEntries {
			w.diffA = keep(w.diffA, c.e, c.index, c.n)
		} else {
			w.moreA = true
		}
	}
}

// finishKey counts the key that was being merged and makes it an example
// if its kind wants one. counted says whether the key is counted here: a
// key group only one side holds is counted from its index.
func (w *worker) finishKey(counted bool) error {
	if !w.keyOpen {
		return nil
	}
	w.keyOpen = false
	var k kind
	switch {
	case w.hasA && !w.hasB:
		k = kindOnlyA
	case w.hasB && !w.hasA:
		k = kindOnlyB
	case w.diff:
		k = kindChanged
	default:
		k = kindUnchanged
	}
	if counted {
		w.keys.count(k, 1)
	}
	if !w.collect || len(w.ex[k]) >= w.c.opts.Examples {
		return nil
	}
	ex := Example{}
	var err error
	switch k {
	case kindOnlyA:
		ex.Key = w.p.decA.decodeKey(w.curKey)
		ex.A, err = decodeAll(w.p.decA, w.diffA, w.a.seg)
		ex.More = w.moreA
	case kindOnlyB:
		ex.Key = w.p.decB.decodeKey(w.curKey)
		ex.B, err = decodeAll(w.p.decB, w.diffB, w.b.seg)
		ex.More = w.moreB
	case kindChanged:
		ex.Key = w.p.decA.decodeKey(w.curKey)
		if ex.A, err = decodeAll(w.p.decA, w.diffA, w.a.seg); err == nil {
			ex.B, err = decodeAll(w.p.decB, w.diffB, w.b.seg)
		}
		ex.More = w.moreA || w.moreB
	default:
		ex.Key = w.p.decA.decodeKey(w.curKey)
		ex.A, err = decodeAll(w.p.decA, w.same, w.a.seg)
		ex.More = w.moreSame
	}
	if err != nil {
		return err
	}
	w.ex[k] = append(w.ex[k], ex)
	return nil
}

func decodeAll(d *decoder, rs []rawEntry, seg savepoint.Segment) ([]Entry, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	out := make([]Entry, 0, len(rs))
	for i := range rs {
		e, err := d.entry(&rs[i], seg)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}
