package rescale

import (
	"bytes"
	"cmp"
	"context"
	"fmt"

	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
)

// When one max parallelism divides the other, a new key group needs no
// sort. A key of hash h lies in old key group h mod M and new key group
// h mod M'.
//
//   - M' divides M (fewer key groups): h mod M' = (h mod M) mod M', so new
//     key group g takes whole old key groups, g, g+M', ..., g+M-M', and
//     nothing else. Its segment of a state is the merge of theirs by
//     (key, namespace), or for timers by (time, key, namespace): the keys
//     of two old key groups differ, so the merge never meets two equal
//     groups, and each input segment is read once.
//   - M divides M' (more key groups): (h mod M') mod M = h mod M, so new
//     key group g takes the keys of old key group g mod M that hash to g, a
//     subsequence of a sorted segment and therefore sorted. Each old
//     segment feeds M'/M new key groups and is read once for each.
//
// Either way every new key group is written as its subtask's file reaches
// it, straight from its input segments, with no spill files: in the order
// the sort would give, so the output is the same bytes as the general
// path's.

// directGrowth bounds the factor M'/M that the direct path takes when M
// divides M': each old segment is read that many times, which beyond 2
// costs more than spilling it once (128 to 512 took 8% more CPU read four
// times than spilled). directMerge bounds the factor M/M' when M' divides
// M: the segments merged, each holding a read window. Variables so that a
// test can turn the direct path off.
var directGrowth, directMerge = 2, 16

// takesDirect reports whether the direct path rescales from max
// parallelism from to max parallelism to.
func takesDirect(from, to int) bool {
	switch {
	case to > from:
		return to%from == 0 && to/from <= directGrowth
	case to < from:
		return from%to == 0 && from/to <= directMerge
	}
	return false
}

// rebucketDirect is rebucket for an operator whose max parallelisms
// divide one another (see takesDirect).
func rebucketDirect(ctx context.Context, meta *savepoint.Metadata, src savepoint.Source, o *rewrite.Output, p *opPlan, names []string, n int, m *rewrite.Meter) error {
	sh := shapes(meta, p.index)
	// The input segments by old key group and spill ref.
	from := p.from.MaxParallelism
	segs := make([][]*savepoint.Segment, from)
	for i := range p.segs {
		s := &p.segs[i]
		ref := spillRef(sh, s.Ref)
		if ref < 0 || s.KeyGroup < 0 || s.KeyGroup >= from {
			return fmt.Errorf("rescale: a segment of %s in key group %d, not one of operator %d's", meta.Describe(s.Ref), s.KeyGroup, p.index)
		}
		if segs[s.KeyGroup] == nil {
			segs[s.KeyGroup] = make([]*savepoint.Segment, len(sh))
		}
		if segs[s.KeyGroup][ref] != nil {
			return fmt.Errorf("rescale: two segments of %s in key group %d", meta.Describe(s.Ref), s.KeyGroup)
		}
		segs[s.KeyGroup][ref] = s
	}
	dw := &directWriter{src: src, hash: p.from.KeyHash, from: from, to: p.maxP, shapes: sh, segs: segs, m: m}
	writers := min(n, p.parallelism)
	written := make([][]uint64, writers)
	for wk := range written {
		written[wk] = make([]uint64, len(sh))
	}
	err := workers.Run(ctx, p.parallelism, writers, func(ctx context.Context, wk, s int) error {
		return dw.subtask(ctx, o, names[s], keygroup.ForSubtask(s, p.parallelism, p.maxP), written[wk], writers)
	})
	if err != nil {
		return err
	}
	return checkWritten(meta, p, sh, written)
}

// directWriter writes the new subtasks' files of one operator straight
// from its input segments.
type directWriter struct {
	src      savepoint.Source
	hash     keygroup.Hash
	from, to int
	shapes   []refShape
	// segs are the input segments by old key group and spill ref; nil
	// where there is none.
	segs [][]*savepoint.Segment
	m    *rewrite.Meter
}

// subtask writes the file of the new key groups kgs, counting the entries
// written by spill ref into written; it is one of writers that run at
// once.
func (dw *directWriter) subtask(ctx context.Context, o *rewrite.Output, name string, kgs keygroup.Range, written []uint64, writers int) error {
	f, err := o.CreateFile(ctx, name)
	if err != nil {
		return err
	}
	in := dw.inputs(ctx, kgs, writers)
	defer in.close()
	var cs []*cursor
	for kg := kgs.Start; kg <= kgs.End && err == nil; kg++ {
		for ref := range dw.shapes {
			var n uint64
			if cs, err = dw.cursors(ctx, cs[:0], kg, ref, in); err == nil {
				n, err = dw.segment(f, kg, ref, cs)
				written[ref] += n
			}
			for _, c := range cs {
				c.close()
			}
			if err != nil {
				break
			}
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// sources are the old key groups that feed new key group kg, in the order
// a merge takes them: the whole key groups kg, kg+M', ... where the max
// parallelism falls to M', the one whose keys kg takes part of where it
// grows.
func (dw *directWriter) sources(kg int) []int {
	if dw.to > dw.from {
		return []int{kg % dw.from}
	}
	var gs []int
	for g := kg; g < dw.from; g += dw.to {
		gs = append(gs, g)
	}
	return gs
}

// inputs reads the input segments of a subtask's cursors, in the order
// its new key groups take them: in a bucket ahead of the writer, through
// one walk for each place in a merge (savepoint.WalkSegmentsShared), so
// that each walk's segments are read one after another while a merge holds
// one of each open. Each walk takes its share of what one walk may hold.
type inputs struct {
	walks []savepoint.Walk
	// next is the index of the next segment each walk gives.
	next []int
}

// inputs starts the walks of the new key groups kgs, for one of writers.
func (dw *directWriter) inputs(ctx context.Context, kgs keygroup.Range, writers int) *inputs {
	places := len(dw.sources(kgs.Start))
	lists := make([][]savepoint.Segment, places)
	for kg := kgs.Start; kg <= kgs.End; kg++ {
		for ref := range dw.shapes {
			for j, g := range dw.sources(kg) {
				if seg := dw.segs[g]; seg != nil && seg[ref] != nil {
					lists[j] = append(lists[j], *seg[ref])
				}
			}
		}
	}
	in := &inputs{walks: make([]savepoint.Walk, places), next: make([]int, places)}
	for j, list := range lists {
		in.walks[j] = savepoint.WalkSegmentsShared(ctx, dw.src, list, writers*places)
	}
	return in
}

// take iterates the next segment of place j.
func (in *inputs) take(ctx context.Context, j int) savepoint.EntryIterator {
	i := in.next[j]
	in.next[j]++
	return in.walks[j].Entries(ctx, i)
}

func (in *inputs) close() {
	for _, w := range in.walks {
		w.Close()
	}
}

// cursors opens a cursor on each input segment of spill ref that feeds new
// key group kg, positioned on its first group of kg, taking the segments
// from in.
func (dw *directWriter) cursors(ctx context.Context, cs []*cursor, kg, ref int, in *inputs) ([]*cursor, error) {
	for j, g := range dw.sources(kg) {
		seg := dw.segs[g]
		if seg == nil || seg[ref] == nil {
			continue
		}
		c := &cursor{it: in.take(ctx, j), shape: dw.shapes[ref], seg: seg[ref], m: dw.m}
		if ir, ok := c.it.(itemReader); ok && !c.shape.timer {
			c.ir = ir
		}
		c.reads = max(1, dw.to/dw.from)
		c.read = kg / dw.from
		if dw.to > dw.from {
			c.filter, c.hash, c.to, c.kg = true, dw.hash, uint32(dw.to), kg
		}
		cs = append(cs, c)
		if err := c.next(); err != nil {
			return cs, err
		}
	}
	return cs, nil
}

// segment writes the segment of spill ref in new key group kg from the
// cursors, merged, and returns how many entries it wrote.
func (dw *directWriter) segment(f *rewrite.DataFile, kg, ref int, cs []*cursor) (uint64, error) {
	var sw *rewrite.SegmentWriter
	var written uint64
	var e savepoint.Entry
	for {
		var c *cursor
		for _, d := range cs {
			if d.ok && (c == nil || d.before(c)) {
				c = d
			}
		}
		if c == nil {
			break
		}
		if sw == nil {
			var err error
			if sw, err = f.Segment(dw.shapes[ref].ref, kg); err != nil {
				return written, err
			}
		}
		if c.shape.timer {
			e = savepoint.Entry{KeyGroup: kg, Key: c.key, Namespace: c.ns, Timestamp: c.time}
			if err := sw.Add(&e); err != nil {
				return written, fmt.Errorf("rescale: %w", err)
			}
			written++
		} else {
			n, err := sw.AppendItems(c.key, c.ns, c.items)
			written += uint64(n)
			if err != nil {
				return written, fmt.Errorf("rescale: %w", err)
			}
		}
		if err := c.next(); err != nil {
			return written, err
		}
	}
	if sw == nil {
		return 0, nil
	}
	return written, sw.Close()
}

// cursor reads one input segment a piece of a group at a time: for a
// state, the items of one (key, namespace) that one call of NextItems
// gives (or one entry's, from a source that gives entries only); for a
// timer service, one timer.
type cursor struct {
	it    savepoint.EntryIterator
	ir    itemReader
	shape refShape
	// With filter set, only the keys that hash to new key group kg under
	// max parallelism to are read.
	filter bool
	hash   keygroup.Hash
	to     uint32
	kg     int
	// The current piece, valid while ok.
	ok             bool
	key, ns, items []byte
	time           int64
	buf            []byte
	// lastKey is the last key hashed, and lastIn whether it lies in kg.
	lastKey []byte
	lastIn  bool
	hashed  bool
	// The meter counts the segment's bytes over its reads: this is read
	// number read of reads.
	seg         *savepoint.Segment
	m           *rewrite.Meter
	read, reads int
}

// next moves to the next piece, setting ok.
func (c *cursor) next() error {
	for {
		if c.ok = c.step(); !c.ok {
			return c.it.Err()
		}
		if !c.filter {
			return nil
		}
		if !c.hashed || !bytes.Equal(c.key, c.lastKey) {
			h, err := c.hash.Sum(c.key)
			if err != nil {
				return err
			}
			c.lastKey = append(c.lastKey[:0], c.key...)
			c.lastIn, c.hashed = int(h%c.to) == c.kg, true
		}
		if c.lastIn {
			return nil
		}
	}
}

func (c *cursor) step() bool {
	if c.ir != nil {
		var n int
		c.key, c.ns, c.items, n = c.ir.NextItems()
		return n > 0
	}
	if !c.it.Next() {
		return false
	}
	e := c.it.Entry()
	c.key, c.ns, c.time = e.Key, e.Namespace, e.Timestamp
	if !c.shape.timer {
		c.buf = appendItem(c.buf[:0], c.shape.isMap, e.MapKey, e.Value)
		c.items = c.buf
	}
	return true
}

// before orders the current pieces of two cursors as the output does.
func (c *cursor) before(d *cursor) bool {
	if c.shape.timer {
		if c.time != d.time {
			return c.time < d.time
		}
	}
	return cmp.Or(bytes.Compare(c.key, d.key), bytes.Compare(c.ns, d.ns)) < 0
}

// close ends the read and counts its share of the segment's bytes.
func (c *cursor) close() {
	c.it.Close()
	l := c.seg.Length
	c.m.Add(l*int64(c.read+1)/int64(c.reads) - l*int64(c.read)/int64(c.reads))
}
