package snapshotfmt

import (
	"context"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

const (
	// walkInFlight is how many requests a walk keeps in flight, across
	// segments: as many as the six workers of a scan on two cores kept
	// at most when each read its own segment.
	walkInFlight = 6
	// walkBudget bounds what a walk holds: the segments read and waiting
	// for their workers, and those the workers decode. A read is at most
	// storage.ReadSize of a bucket's file (4 MiB), of one segment or of
	// several adjacent ones.
	walkBudget = 32 << 20
)

// walk reads the segments of a scan ahead of its workers from a bucket,
// across segments: the requests for the next ones are in flight while the
// workers decode theirs.
type walk struct {
	r     *Reader
	segs  []savepoint.Segment
	ahead *storage.Ahead
	// lane is the range of each segment in ahead's list, -1 for one that
	// its iterator refuses before it reads.
	lane []int
}

// WalkSegments is savepoint.WalkSegmentsShared's for r: it returns nil,
// for plain iteration, where reading ahead is not worth it (local files,
// whose reads the page cache serves). One of share walks holds a share-th
// of walkBudget, in reads of half of that at most. It keeps walkInFlight
// requests in flight all the same, as many as its budget holds: fewer
// large reads, but as many small ones, such as the segments of a state
// that lie apart in a file between those of others, which would otherwise
// wait a round trip each.
func (r *Reader) WalkSegments(ctx context.Context, segs []savepoint.Segment, share int) savepoint.Walk {
	w := &walk{r: r, segs: segs, lane: make([]int, len(segs))}
	var names []string
	seen := map[string]bool{}
	for _, seg := range segs {
		if !seen[seg.File] {
			seen[seg.File] = true
			names = append(names, seg.File)
		}
	}
	r.openFiles(names)
	var ranges []storage.Range
	var chunk int64
	for i, seg := range segs {
		w.lane[i] = -1
		f, err := r.file(seg.File)
		if err != nil || seg.Offset < preambleLen || seg.Length <= 0 || seg.Offset > f.Size()-seg.Length {
			continue
		}
		if chunk = max(chunk, storage.ReadSize(f)); chunk == 0 {
			return nil
		}
		w.lane[i] = len(ranges)
		ranges = append(ranges, storage.Range{File: f, Off: seg.Offset, Len: seg.Length})
	}
	if len(ranges) == 0 {
		return nil
	}
	// Two reads at least fit the budget, so that one is made while the
	// other is decoded.
	budget := int64(walkBudget / share)
	w.ahead = storage.ReadAhead(ctx, ranges, storage.PrefetchOptions{InFlight: walkInFlight, ChunkSize: min(chunk, budget/2), Budget: budget})
	return w
}

func (w *walk) Entries(ctx context.Context, i int) savepoint.EntryIterator {
	it := w.r.iterate(ctx, w.segs[i])
	if j := w.lane[i]; j >= 0 {
		pf := w.ahead.Take(j)
		if it.err != nil {
			pf.Close()
		} else {
			// The block reader reads its windows from the walk's reads
			// and closes them with itself.
			it.br.pf = pf
		}
	}
	return it
}

func (w *walk) Close() { w.ahead.Close() }
