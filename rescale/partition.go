package rescale

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/stateproc/stateproc/internal/extsort"
	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
)

// spillFiles are the spills of the partition phase: per worker, per
// bucket, the worker's records of the bucket, or a spill without a path
// where the worker wrote nothing into the bucket.
type spillFiles [][]extsort.Spill

// ofBucket returns the files of bucket b and their total size.
func (s spillFiles) ofBucket(b int) ([]extsort.Spill, int64) {
	var files []extsort.Spill
	var size int64
	for _, w := range s {
		if w[b].Path != "" || w[b].Data != nil {
			files = append(files, w[b])
			size += w[b].Size
		}
	}
	return files, size
}

// release drops bucket b's spills once the bucket is loaded: the memory of
// those held in memory. A worker's spill file holds every bucket, and goes
// with the operator's spill directory once the operator is written.
func (s spillFiles) release(b int) {
	for _, w := range s {
		extsort.Release(w[b : b+1])
		w[b] = extsort.Spill{}
	}
}

// partition streams every segment of operator op into spill files under
// dir, on workers goroutines, with about memory bytes of write buffers in
// all, and tells m of the first pass's share of each segment (see
// firstPassShare). When inMemory, the spill records stay in memory
// instead, which the caller sees they fit.
func partition(ctx context.Context, src savepoint.Source, p *opPlan, sh []refShape, bk *bucketing, dir string, n, memory int, inMemory bool,
	m *rewrite.Meter) (spillFiles, error) {
	segs := slices.Clone(p.segs)
	// File order, so that the workers together read each file forwards.
	slices.SortFunc(segs, func(a, b savepoint.Segment) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Offset, b.Offset))
	})
	bufSize := min(64<<10, max(4<<10, memory/max(1, n*len(bk.buckets))))
	pws := make([]*partitioner, n)
	mem := make([][]memOut, n)
	var shares []int
	if inMemory {
		shares = memShares(p, bk, n)
	}
	for w := range pws {
		pws[w] = &partitioner{hash: p.from.KeyHash, maxP: uint32(p.maxP), bk: bk, shapes: sh}
		if inMemory {
			mem[w] = make([]memOut, len(bk.buckets))
			pws[w].to = func(kg int) *memOut {
				b := bk.of[kg]
				m := &mem[w][b]
				if m.b == nil {
					m.b = make([]byte, 0, shares[b])
				}
				return m
			}
		} else {
			pws[w].sp = extsort.NewSpiller(dir, fmt.Sprintf("w%02d", w), len(bk.buckets), bufSize)
		}
	}
	// In a bucket the walk reads the next segments, adjacent ones
	// together, while the workers partition theirs.
	walk := savepoint.WalkSegments(ctx, src, segs)
	err := workers.Run(ctx, len(segs), n, func(ctx context.Context, w, i int) error {
		if err := pws[w].segment(segs[i], walk.Entries(ctx, i)); err != nil {
			return err
		}
		m.Add(firstPassShare(segs[i].Length))
		return nil
	})
	walk.Close()
	// Every worker's files are closed, whether the partition failed or not.
	files := make(spillFiles, n)
	errs := []error{err}
	for w, pw := range pws {
		if inMemory {
			files[w] = make([]extsort.Spill, len(bk.buckets))
			for b, mo := range mem[w] {
				files[w][b] = extsort.Spill{Data: mo.b, Size: int64(len(mo.b))}
			}
			continue
		}
		written, cerr := pw.sp.Close()
		files[w] = written
		errs = append(errs, cerr)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("rescale: %w", err)
	}
	return files, nil
}

// memShares returns the room an in-memory spill buffer of one of n workers
// starts with, per bucket, when the worker first writes to it: its share
// of the operator's entries, as keys spread evenly over key groups, the
// workers share the segments, and a spill record takes about an entry's
// raw bytes. A buffer that fills grows as any slice does; most never do, so
// the records are not copied from one buffer to the next as a buffer grown
// from nothing would copy them.
func memShares(p *opPlan, bk *bucketing, n int) []int {
	var raw uint64
	for _, s := range p.segs {
		raw += s.Bytes
	}
	shares := make([]int, len(bk.buckets))
	for b := range shares {
		share := raw * uint64(bk.buckets[b].kgs.Len()) / uint64(p.maxP) / uint64(n)
		shares[b] = int(share + share/8)
	}
	return shares
}

// partitioner is one worker of the partition phase.
type partitioner struct {
	hash   keygroup.Hash
	maxP   uint32
	bk     *bucketing
	shapes []refShape
	sp     *extsort.Spiller
	// to, when set, takes each new key group's spill records instead of
	// the bucket files: the map stage of a shuffle (see Shuffle.Blocks).
	to func(kg int) *memOut
	// The current group: its new key group, key, namespace and items.
	kg       int
	key, ns  []byte
	items    []byte
	class    uint32
	timerKey []byte
}

// spill writes one record of new key group kg.
func (pw *partitioner) spill(kg int, class uint32, key, ns, items []byte) error {
	if pw.to != nil {
		m := pw.to(kg)
		m.b = extsort.AppendRecord(m.b, class, key, ns, items)
		return nil
	}
	return pw.sp.AddSub(int(pw.bk.of[kg]), class, key, ns, items)
}

// flush spills the items of the current group, if any.
func (pw *partitioner) flush() error {
	if len(pw.items) == 0 {
		return nil
	}
	err := pw.spill(pw.kg, pw.class, pw.key, pw.ns, pw.items)
	pw.items = pw.items[:0]
	return err
}

// itemReader is the iterator of a layout that gives a state's items a
// record at a time, framed as the spill records hold them
// (snapshotfmt.Iterator.NextItems).
type itemReader interface {
	NextItems() (key, ns, items []byte, n int)
}

// segment spills the entries of one input segment, seg, from it. A group
// starts at every change of (key, namespace), and at every timer; only a
// new key is hashed.
func (pw *partitioner) segment(seg savepoint.Segment, it savepoint.EntryIterator) error {
	defer it.Close()
	ref := spillRef(pw.shapes, seg.Ref)
	if ref < 0 {
		return fmt.Errorf("rescale: a segment of operator %d, not the one rescaled", seg.Ref.Operator)
	}
	if ir, ok := it.(itemReader); ok && !pw.shapes[ref].timer {
		return pw.records(ir, it, ref)
	}
	shape := pw.shapes[ref]
	first := true
	pw.items = pw.items[:0]
	for it.Next() {
		e := it.Entry()
		newKey := first || !bytes.Equal(e.Key, pw.key)
		if newKey || !bytes.Equal(e.Namespace, pw.ns) || len(pw.items) >= pieceLimit {
			if err := pw.flush(); err != nil {
				return err
			}
			if newKey {
				if err := pw.newKey(e.Key, ref); err != nil {
					return err
				}
			}
			pw.ns = append(pw.ns[:0], e.Namespace...)
			first = false
		}
		if shape.timer {
			pw.timerKey = appendTimerKey(pw.timerKey[:0], e.Timestamp, e.Key)
			if err := pw.spill(pw.kg, pw.class, pw.timerKey, e.Namespace, nil); err != nil {
				return err
			}
			continue
		}
		pw.items = appendItem(pw.items, shape.isMap, e.MapKey, e.Value)
	}
	if err := it.Err(); err != nil {
		return err
	}
	return pw.flush()
}

// records spills a state's segment record by record, each record's items
// (or the share of them one block holds) as one spill record, without
// decoding them into entries: the pieces of a record sort equal and the
// writer joins them again.
func (pw *partitioner) records(ir itemReader, it savepoint.EntryIterator, ref int) error {
	first := true
	for {
		key, ns, items, n := ir.NextItems()
		if n == 0 {
			break
		}
		if first || !bytes.Equal(key, pw.key) {
			if err := pw.newKey(key, ref); err != nil {
				return err
			}
			first = false
		}
		if err := pw.spill(pw.kg, pw.class, key, ns, items); err != nil {
			return err
		}
	}
	return it.Err()
}

// newKey hashes key into its new key group and makes it the current key.
func (pw *partitioner) newKey(key []byte, ref int) error {
	h, err := pw.hash.Sum(key)
	if err != nil {
		return err
	}
	pw.kg = int(h % pw.maxP)
	pw.class = spillClass(pw.shapes, pw.kg, ref)
	pw.key = append(pw.key[:0], key...)
	return nil
}

// checkWritten checks that every entry read was written once, the
// workers' counts by spill ref added up: a cheap check that nothing was
// lost on the way.
func checkWritten(meta *savepoint.Metadata, p *opPlan, sh []refShape, written [][]uint64) error {
	want := segmentEntries(p, sh)
	for ref := range want {
		var got uint64
		for _, n := range written {
			got += n[ref]
		}
		if got != want[ref] {
			return fmt.Errorf("rescale: %s: wrote %d entries, read %d", meta.Describe(sh[ref].ref), got, want[ref])
		}
	}
	return nil
}

// segmentEntries sums the index's entry counts of an operator's segments
// by spill ref: what the rescaled operator must hold again.
func segmentEntries(p *opPlan, sh []refShape) []uint64 {
	n := make([]uint64, len(sh))
	for _, s := range p.segs {
		if ref := spillRef(sh, s.Ref); ref >= 0 {
			n[ref] += s.Entries
		}
	}
	return n
}
