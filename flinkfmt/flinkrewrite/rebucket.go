package flinkrewrite

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/keyhash"
	"github.com/stateproc/stateproc/internal/extsort"
	"github.com/stateproc/stateproc/keygroup"
)

// rebucketJob moves every entry of an operator's keyed state to the key
// group its key hashes to under the new max parallelism. The entries of a
// new key group come from every old one, so they are spilled by new key
// group into buckets (each a range of new key groups within one new
// subtask, sized to fit a sort chunk) and sorted per bucket into RocksDB's
// order: by state id, then composite key.
type rebucketJob struct {
	k                 *flinkfmt.Keyed
	maxP, parallelism int
	kind              flinkfmt.KeyedKind
	header            *flinkfmt.CanonicalHeader
	workers, memory   int
	sortBudget        int
	dir               string
	// entries counts the entries read; spilled and written the pairs.
	entries, spilled, written atomic.Uint64
}

// bucketing splits the new key groups into buckets in key-group order,
// none straddling two subtasks.
type bucketing struct {
	ranges []keygroup.Range
	// subtask lists each subtask's buckets; of maps a key group to its.
	subtask [][]int
	of      []int
}

// maxBuckets bounds the spill files each worker keeps open.
const maxBuckets = 256

func newBucketing(maxP, parallelism, want int) *bucketing {
	perSubtask := max(1, min(want, maxBuckets)/parallelism)
	b := &bucketing{subtask: make([][]int, parallelism), of: make([]int, maxP)}
	for s := range parallelism {
		r := keygroup.ForSubtask(s, parallelism, maxP)
		n := min(perSubtask, r.Len())
		for i := range n {
			kgs := keygroup.Range{Start: r.Start + i*r.Len()/n, End: r.Start + (i+1)*r.Len()/n - 1}
			for kg := kgs.Start; kg <= kgs.End; kg++ {
				b.of[kg] = len(b.ranges)
			}
			b.subtask[s] = append(b.subtask[s], len(b.ranges))
			b.ranges = append(b.ranges, kgs)
		}
	}
	return b
}

// minSortBudget is the least memory a sort worker works with.
const minSortBudget = 1 << 20

func (j *rebucketJob) run(ctx context.Context, o *output) ([]*flinkfmt.KeyedHandle, error) {
	parts := j.k.Parts()
	managed := managedParts(j.k)
	// About the bytes of the entries, which the spill files take: the
	// handles' sizes, thrice for compressed ones.
	var raw int64
	for _, p := range managed {
		n := parts[p].Handle.Size()
		if j.header.Compressed {
			n *= 3
		}
		raw += n
	}
	writers := min(j.workers, j.parallelism)
	sortBudget := max(minSortBudget, j.memory/writers)
	if j.sortBudget > 0 {
		sortBudget = j.sortBudget
	}
	bk := newBucketing(j.maxP, j.parallelism, int(raw/int64(sortBudget/4))+1)
	// The spill files go with j.dir, the operator's work directory.
	spills, err := j.partition(ctx, o, managed, bk)
	if err != nil {
		return nil, err
	}
	var spillBytes int64
	for _, w := range spills {
		for _, s := range w {
			spillBytes += s.Size
		}
	}
	var keyedBytes int64
	for _, p := range managed {
		keyedBytes += parts[p].Handle.Size()
	}
	handles := make([]*flinkfmt.KeyedHandle, j.parallelism)
	g, ctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	for w := range writers {
		srt := extsort.NewSorter(sortBudget, j.dir, fmt.Sprintf("sort%02d", w))
		g.Go(func() error {
			for {
				s := int(next.Add(1) - 1)
				if s >= j.parallelism {
					return nil
				}
				h, err := j.writeSubtask(ctx, o, s, bk, spills, srt, keyedBytes, spillBytes)
				if err != nil {
					return err
				}
				handles[s] = h
			}
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if j.written.Load() != j.spilled.Load() {
		return nil, fmt.Errorf("flinkrewrite: operator %s: wrote %d pairs, read %d", j.k.Operator.ID, j.written.Load(), j.spilled.Load())
	}
	return handles, nil
}

// partition spills every pair of the managed parts, each worker taking
// whole parts, so that it reads their key groups in order.
func (j *rebucketJob) partition(ctx context.Context, o *output, managed []int, bk *bucketing) ([][]extsort.Spill, error) {
	workers := min(j.workers, len(managed))
	bufSize := min(64<<10, max(4<<10, j.memory/2/max(1, workers*len(bk.ranges))))
	spills := make([][]extsort.Spill, workers)
	g, ctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	for w := range workers {
		sp := extsort.NewSpiller(j.dir, fmt.Sprintf("w%02d", w), len(bk.ranges), bufSize)
		g.Go(func() error {
			var err error
			for err == nil {
				i := int(next.Add(1) - 1)
				if i >= len(managed) {
					break
				}
				err = j.spillPart(ctx, o, managed[i], bk, sp)
			}
			files, cerr := sp.Close()
			spills[w] = files
			if err == nil {
				err = cerr
			}
			return err
		})
	}
	return spills, g.Wait()
}

func (j *rebucketJob) spillPart(ctx context.Context, o *output, p int, bk *bucketing, sp *extsort.Spiller) error {
	part := j.k.Parts()[p]
	oldMaxP := j.k.Operator.MaxParallelism
	// Pairs are moved as they are stored, undecoded, unless the part is in
	// the heap layout, or the operator has a list state, whose pairs hold
	// several entries each: they go through the entries, which count them.
	raw := part.Layout == flinkfmt.LayoutCanonical
	for _, m := range j.k.States {
		raw = raw && m.Kind != flinkfmt.List
	}
	var lastKey []byte
	newKG := -1
	kg := 0
	spill := func(state int, key, value, userKey []byte) error {
		if newKG < 0 || !bytes.Equal(userKey, lastKey) {
			// The key's own key group is checked too: a key the savepoint
			// holds elsewhere than Flink's hash puts it is one this rewrite
			// does not hash as Flink did.
			old, err := keyhash.KeyGroupOf(j.k.Key, userKey, oldMaxP)
			if err == nil && old != kg {
				err = fmt.Errorf("%w: the key hashes to key group %d, not the key group %d it is stored in", flinkfmt.ErrCorrupt, old, kg)
			}
			if err == nil {
				newKG, err = keyhash.KeyGroupOf(j.k.Key, userKey, j.maxP)
			}
			if err != nil {
				return fmt.Errorf("flinkrewrite: operator %s key group %d: key % x of state %q: %w", j.k.Operator.ID, kg, userKey, j.k.States[state].Name, err)
			}
			lastKey = append(lastKey[:0], userKey...)
		}
		j.spilled.Add(1)
		return sp.Add(bk.of[newKG], uint32(newKG)<<16|uint32(j.header.IDs[state]), key, value)
	}
	var entries []flinkfmt.Entry
	enc := j.k.PairEncoder()
	r := part.Handle.KeyGroups.Intersect(keygroup.All(oldMaxP))
	for kg = r.Start; kg <= r.End; kg++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if raw {
			n := 0
			err := j.k.CanonicalKeyGroup(ctx, p, kg, func(state int, key, value []byte) error {
				n++
				uk, err := j.k.UserKey(state, key)
				if err != nil {
					return err
				}
				return spill(state, key, value, uk)
			})
			if err != nil {
				return err
			}
			j.entries.Add(uint64(n))
			continue
		}
		var err error
		if entries, err = readKeyGroup(ctx, j.k, part, p, kg, entries[:0]); err != nil {
			return err
		}
		j.entries.Add(uint64(len(entries)))
		if err := enc.Each(entries, func(pr flinkfmt.Pair) error { return spill(pr.State, pr.Key, pr.Value, pr.UserKey) }); err != nil {
			return err
		}
	}
	o.meter.Add(part.Handle.Size())
	return nil
}

// writeSubtask writes the stream of new subtask s from its buckets,
// removing each bucket's spill files once it is written.
func (j *rebucketJob) writeSubtask(ctx context.Context, o *output, s int, bk *bucketing, spills [][]extsort.Spill, srt *extsort.Sorter, keyedBytes, spillBytes int64) (*flinkfmt.KeyedHandle, error) {
	kgs := keygroup.ForSubtask(s, j.parallelism, j.maxP)
	sw := o.stream(fmt.Sprintf("keyed state of operator %s, key groups %v of max parallelism %d", j.k.Operator.ID, kgs, j.maxP))
	defer sw.Close()
	cw, err := flinkfmt.NewCanonicalWriter(sw, j.header, j.maxP, kgs)
	if err != nil {
		return nil, err
	}
	var prevClass uint32
	var prevKey []byte
	first := true
	emit := func(class uint32, key, value []byte) error {
		if !first && class == prevClass && bytes.Equal(key, prevKey) {
			return fmt.Errorf("%w: operator %s: key group %d: state %d holds the composite key % x twice", flinkfmt.ErrCorrupt, j.k.Operator.ID, class>>16, class&0xFFFF, key)
		}
		first, prevClass, prevKey = false, class, append(prevKey[:0], key...)
		j.written.Add(1)
		return cw.Add(int(class>>16), int(class&0xFFFF), key, value)
	}
	for _, b := range bk.subtask[s] {
		var files []extsort.Spill
		var size int64
		for w := range spills {
			files = append(files, spills[w][b])
			size += spills[w][b].Size
		}
		err := srt.Sort(ctx, files, emit)
		extsort.Release(files)
		if err != nil {
			return nil, err
		}
		if spillBytes > 0 {
			o.meter.Add(size * keyedBytes / spillBytes)
		}
	}
	offsets, err := cw.Finish()
	if err != nil {
		return nil, err
	}
	stream, err := sw.Finish()
	if err != nil {
		return nil, err
	}
	h := &flinkfmt.KeyedHandle{Kind: j.kind, KeyGroups: kgs, Offsets: offsets, Stream: stream}
	if j.kind == flinkfmt.KeyedKeyGroupsV2 {
		h.HandleID = o.fileName(fmt.Sprintf("handle id of operator %s, key groups %v of max parallelism %d", j.k.Operator.ID, kgs, j.maxP))
	}
	return h, nil
}
