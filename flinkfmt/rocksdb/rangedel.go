package rocksdb

import (
	"bytes"
	"container/heap"
	"slices"
	"sort"

	"github.com/stateproc/stateproc/flinkfmt/rocksdb/sst"
)

// fragment is a piece of the union of a column family's range tombstones:
// the keys in [start, end) are deleted below seq, the highest sequence
// number of the tombstones that cover them. Fragments do not overlap and
// are sorted, so one cursor serves a forward scan.
type fragment struct {
	start, end []byte
	seq        uint64
}

// fragmentTombstones cuts overlapping tombstones at every start and end, in
// O(n log n): a sweep over the boundaries with a max-heap of the
// tombstones that have started, dropping those that have ended when they
// reach the top (a dominated one below the top changes nothing).
func fragmentTombstones(ts []sst.Tombstone) []fragment {
	ts = slices.DeleteFunc(slices.Clone(ts), func(t sst.Tombstone) bool { return bytes.Compare(t.Start, t.End) >= 0 })
	if len(ts) == 0 {
		return nil
	}
	slices.SortFunc(ts, func(a, b sst.Tombstone) int { return bytes.Compare(a.Start, b.Start) })
	bounds := make([][]byte, 0, 2*len(ts))
	for _, t := range ts {
		bounds = append(bounds, t.Start, t.End)
	}
	slices.SortFunc(bounds, bytes.Compare)
	bounds = slices.CompactFunc(bounds, bytes.Equal)
	var active tombHeap
	var out []fragment
	next := 0
	for i := 0; i+1 < len(bounds); i++ {
		b := bounds[i]
		for next < len(ts) && bytes.Equal(ts[next].Start, b) {
			heap.Push(&active, ts[next])
			next++
		}
		for active.Len() > 0 && bytes.Compare(active[0].End, b) <= 0 {
			heap.Pop(&active)
		}
		if active.Len() == 0 {
			continue
		}
		seq := active[0].Seq
		if n := len(out); n > 0 && out[n-1].seq == seq && bytes.Equal(out[n-1].end, b) {
			out[n-1].end = bounds[i+1]
			continue
		}
		out = append(out, fragment{start: b, end: bounds[i+1], seq: seq})
	}
	return out
}

type tombHeap []sst.Tombstone

func (h tombHeap) Len() int           { return len(h) }
func (h tombHeap) Less(i, j int) bool { return h[i].Seq > h[j].Seq }
func (h tombHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *tombHeap) Push(x any)        { *h = append(*h, x.(sst.Tombstone)) }
func (h *tombHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

// tombCursor answers, for user keys in ascending order, the sequence
// number below which they are deleted (0: not covered).
type tombCursor struct {
	frags []fragment
	i     int
}

// seek moves the cursor to the first fragment that ends after key.
func (c *tombCursor) seek(key []byte) {
	c.i = sort.Search(len(c.frags), func(i int) bool { return bytes.Compare(c.frags[i].end, key) > 0 })
}

// coverSeq is for keys at or after the last one asked or sought.
func (c *tombCursor) coverSeq(key []byte) uint64 {
	for c.i < len(c.frags) && bytes.Compare(c.frags[c.i].end, key) <= 0 {
		c.i++
	}
	if c.i < len(c.frags) && bytes.Compare(c.frags[c.i].start, key) <= 0 {
		return c.frags[c.i].seq
	}
	return 0
}
