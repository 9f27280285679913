package rewrite

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// SegmentPlan says what becomes of one input segment.
type SegmentPlan struct {
	Src snapshotfmt.Segment
	// Op and Ref place the segment in the output's metadata; its key group
	// stays that of Src.
	Op, Ref int
	// Drop leaves the segment out, unread.
	Drop bool
	// Keep, when set, is asked about every entry, in order, and the segment
	// is rewritten with the entries it keeps; when nil, and Value too, the
	// segment is copied as opaque bytes. It must be safe to call from
	// several goroutines.
	Keep func(e *savepoint.Entry) bool
	// Value, when set, rewrites the value of every entry kept: it appends
	// the new value to dst, a buffer reused from entry to entry of the
	// segment, and returns it. Like Keep, it makes the segment stream entry
	// by entry, and must be safe to call from several goroutines.
	Value func(dst []byte, e *savepoint.Entry) ([]byte, error)
	// Kept is set by WriteFiles: the entries the output segment holds.
	Kept uint64
}

// FilePlan is one data file of the output, written in segment order.
type FilePlan struct {
	Name     string
	Segments []SegmentPlan
}

// SameLayout plans an output with the layout of r: each data file of r
// becomes a file of the same name holding, in file order, the segments for
// which place returns true. A file whose segments were all left out by
// place is left out; a file that holds no segment in r is kept, as an empty
// data file, since the engine writes one per subtask whatever it holds.
func SameLayout(r *snapshotfmt.Reader, place func(seg snapshotfmt.Segment) (SegmentPlan, bool)) []FilePlan {
	byFile := map[string][]snapshotfmt.Segment{}
	for op := range r.Metadata().Operators {
		for _, s := range r.Segments(op) {
			byFile[s.File] = append(byFile[s.File], s)
		}
	}
	var plans []FilePlan
	for _, name := range r.DataFiles() {
		segs := byFile[name]
		slices.SortFunc(segs, func(a, b snapshotfmt.Segment) int { return cmp.Compare(a.Offset, b.Offset) })
		fp := FilePlan{Name: name}
		for _, s := range segs {
			if p, ok := place(s); ok {
				fp.Segments = append(fp.Segments, p)
			}
		}
		if len(segs) > 0 && len(fp.Segments) == 0 {
			continue
		}
		plans = append(plans, fp)
	}
	return plans
}

// PlannedBytes sums what the input segments of plans take in their files:
// about what a rewrite of them writes, and the bytes WriteFiles tells its
// Meter of.
func PlannedBytes(plans []FilePlan) int64 {
	var n int64
	for _, fp := range plans {
		for _, p := range fp.Segments {
			n += p.Src.Length
		}
	}
	return n
}

// WriteFiles writes the planned files into w, files in parallel on up to
// workers goroutines, each file by one of them front to back, and tells m
// of each input segment once it is done with it (see PlannedBytes). With w
// nil it is a dry run: nothing is written, and the segments that Keep
// filters are still read so that Kept is right.
func WriteFiles(ctx context.Context, src *snapshotfmt.Reader, w *snapshotfmt.Writer, plans []FilePlan, workers int, m *Meter) error {
	// The largest files first, so that one big file does not start last.
	order := make([]int, len(plans))
	for i := range order {
		order[i] = i
	}
	size := func(fp *FilePlan) (n int64) {
		for _, s := range fp.Segments {
			n += s.Src.Length
		}
		return n
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(size(&plans[b]), size(&plans[a])) })

	g, ctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	for range max(1, workers) {
		g.Go(func() error {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(order) {
					return nil
				}
				if err := writeFile(ctx, src, w, &plans[order[i]], m); err != nil {
					return err
				}
			}
		})
	}
	return g.Wait()
}

func writeFile(ctx context.Context, src *snapshotfmt.Reader, w *snapshotfmt.Writer, fp *FilePlan, m *Meter) error {
	var f *snapshotfmt.DataFileWriter
	if w != nil {
		var err error
		if f, err = w.CreateDataFile(ctx, fp.Name); err != nil {
			return err
		}
	}
	for i := range fp.Segments {
		if err := writeSegment(ctx, src, f, &fp.Segments[i]); err != nil {
			if f != nil {
				f.Close()
			}
			return err
		}
		m.Add(fp.Segments[i].Src.Length)
	}
	if f != nil {
		return f.Close()
	}
	return nil
}

func writeSegment(ctx context.Context, src *snapshotfmt.Reader, f *snapshotfmt.DataFileWriter, p *SegmentPlan) error {
	switch {
	case p.Drop:
		p.Kept = 0
		return nil
	case p.Keep == nil && p.Value == nil:
		p.Kept = p.Src.Entries
		if f == nil {
			return nil
		}
		return f.CopySegment(ctx, src, p.Src, p.Op, p.Ref, p.Src.KeyGroup)
	}
	return FilterSegment(ctx, src, f, p)
}

// FilterSegment streams the entries of p.Src that p.Keep keeps (all when
// Keep is nil), with their values rewritten by p.Value when set, into a
// segment of f, one entry at a time: memory holds one input block, one
// output block and one value. The output segment is opened at the first
// kept entry, so nothing is written when none is. With f nil it only counts
// (and rewrites values, whose errors it reports).
func FilterSegment(ctx context.Context, src *snapshotfmt.Reader, f *snapshotfmt.DataFileWriter, p *SegmentPlan) (err error) {
	it := src.Entries(ctx, p.Src)
	defer it.Close()
	var sw *snapshotfmt.SegmentWriter
	defer func() {
		if sw != nil {
			if cerr := sw.Close(); err == nil {
				err = cerr
			}
		}
	}()
	var kept uint64
	var value []byte
	var changed savepoint.Entry // an entry with a new value; the iterator's is read-only
	for n := uint64(0); it.Next(); n++ {
		e := it.Entry()
		if p.Keep != nil && !p.Keep(e) {
			continue
		}
		kept++
		if p.Value != nil {
			if value, err = p.Value(value[:0], e); err != nil {
				return &snapshotfmt.Error{File: p.Src.File, KeyGroup: p.Src.KeyGroup, Offset: p.Src.Offset,
					Err: fmt.Errorf("entry %d of the segment at this offset: %w", n, err)}
			}
			changed = *e
			changed.Value = value
			e = &changed
		}
		if f == nil {
			continue
		}
		if sw == nil {
			if sw, err = f.Segment(p.Op, p.Ref, p.Src.KeyGroup); err != nil {
				return err
			}
		}
		if err := sw.Add(e); err != nil {
			return fmt.Errorf("rewrite: %s key group %d: %w", p.Src.File, p.Src.KeyGroup, err)
		}
	}
	p.Kept = kept
	return it.Err()
}
