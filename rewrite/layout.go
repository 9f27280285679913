package rewrite

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// SegmentPlan says what becomes of one input segment.
type SegmentPlan struct {
	Src savepoint.Segment
	// Dst places the segment in the output's metadata; its key group stays
	// that of Src.
	Dst savepoint.StateRef
	// Drop leaves the segment out, unread.
	Drop bool
	// KeepModified, when set, is asked about the last-modified time of
	// every entry of a TTL state, in order, and the segment is rewritten
	// with the entries it keeps; when nil, and Value too, the segment is
	// copied as opaque bytes where the input stores it in a stateproc data
	// file, and entry by entry otherwise. Where the input gives a record's
	// items framed (snapshotfmt.Iterator.NextItems) and Value is nil, the
	// kept items are copied as they are, without decoding each entry. It
	// must be safe to call from several goroutines.
	KeepModified func(lastModified int64) bool
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

// EngineFileName is the name the engine gives the data file of subtask s
// of the operator at index op.
func EngineFileName(op, s int) string { return fmt.Sprintf("op%03d-%05d.data", op, s) }

// GivenName is the name a data file was created under, without the content
// suffix the format adds: two files of one output must differ in it.
func GivenName(name string) string { return snapshotfmt.GivenName(name) }

// canonical returns the stateproc savepoint whose data files hold the
// segments of src that name a file: src itself, or the canonical part of a
// checkpoint.
func canonical(src savepoint.Source) (*snapshotfmt.Reader, bool) {
	switch s := src.(type) {
	case *snapshotfmt.Reader:
		return s, true
	case interface{ Canonical() *snapshotfmt.Reader }:
		return s.Canonical(), true
	}
	return nil, false
}

// SameLayout plans an output with the layout of src: each data file of src
// becomes a file of the same name holding, in file order, the segments for
// which place returns true. A file whose segments were all left out by
// place is left out; a file that holds no segment in src is kept, as an
// empty data file, since the engine writes one per subtask whatever it
// holds. Segments that src keeps in no data file of its own (those of an
// incremental checkpoint's databases) go, key group by key group, to the
// file the engine writes for the subtask that owns their key group.
func SameLayout(ctx context.Context, src savepoint.Source, place func(seg savepoint.Segment) (SegmentPlan, bool)) ([]FilePlan, error) {
	segs, err := savepoint.AllSegments(ctx, src)
	if err != nil {
		return nil, err
	}
	m := src.Metadata()
	var names []string
	byFile := map[string][]savepoint.Segment{}
	if r, ok := canonical(src); ok {
		names = r.DataFiles()
	}
	for _, name := range names {
		byFile[name] = nil
	}
	for _, s := range segs {
		name := s.File
		if name == "" {
			op := &m.Operators[s.Ref.Operator]
			name = EngineFileName(s.Ref.Operator, keygroup.Subtask(s.KeyGroup, op.Parallelism, op.MaxParallelism))
		}
		// A source that is not a stateproc savepoint may still name
		// the files its segments lie in.
		if _, ok := byFile[name]; !ok {
			names = append(names, name)
		}
		byFile[name] = append(byFile[name], s)
	}
	slices.Sort(names)
	var plans []FilePlan
	for _, name := range names {
		segs := byFile[name]
		slices.SortFunc(segs, func(a, b savepoint.Segment) int {
			return cmp.Or(cmp.Compare(a.Offset, b.Offset), cmp.Compare(a.KeyGroup, b.KeyGroup), a.Ref.Compare(b.Ref))
		})
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
	return plans, nil
}

// PlannedBytes sums what the input segments of plans take in their files:
// about what a rewrite of them writes, and the bytes WriteFiles tells its
// Meter of.
func PlannedBytes(plans []FilePlan) int64 {
	var n int64
	for _, fp := range plans {
		n += fp.bytes()
	}
	return n
}

func (fp *FilePlan) bytes() (n int64) {
	for _, s := range fp.Segments {
		n += s.Src.Length
	}
	return n
}

// WriteFiles writes the planned files into out, files in parallel on up to
// n goroutines (workers.Default for 0), each file by one of them front to
// back, and tells m of each input segment once it is done with it (see
// PlannedBytes). With out nil it is a dry run: nothing is written, and the
// segments that Keep filters are still read so that Kept is right. A
// planned file that copies all the segments of one input file, in order,
// is that file whole: in a bucket of the input's store it is copied by the
// store without being read (see snapshotfmt's DataFileWriter.CopyUnread),
// unless out checks copies.
//
// Into a bucket, unreadInFlight files are in hand at once, of which n at
// most are written through this process: a file that the store copies
// unread costs a request or two, not a core, and a rewrite that keeps
// many files whole would otherwise wait a few round trips for each, n at a
// time.
func WriteFiles(ctx context.Context, src savepoint.Source, out *Output, plans []FilePlan, n int, m *Meter) error {
	// The largest files first, so that one big file does not start last.
	order := make([]int, len(plans))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(plans[b].bytes(), plans[a].bytes()) })
	if n <= 0 {
		n = workers.Default()
	}
	inHand, c := n, cores(nil)
	if out != nil && out.inBucket && !out.checkCopies && n < unreadInFlight {
		inHand, c = unreadInFlight, make(cores, n)
	}
	return workers.Run(ctx, len(order), inHand, func(ctx context.Context, _, i int) error {
		return writeFile(ctx, src, out, &plans[order[i]], n, m, c)
	})
}

// unreadInFlight is how many files a rewrite into a bucket has in hand at
// once.
const unreadInFlight = 16

// cores bounds the files written through this process at once, where more
// are in hand; nil bounds nothing.
type cores chan struct{}

func (c cores) take(ctx context.Context) error {
	if c == nil {
		return nil
	}
	select {
	case c <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c cores) give() {
	if c != nil {
		<-c
	}
}

// writeFile writes one planned file, as one of n written at once, taking
// one of c for what it writes itself.
func writeFile(ctx context.Context, src savepoint.Source, out *Output, fp *FilePlan, n int, m *Meter, c cores) error {
	var f *DataFile
	var ahead *snapshotfmt.Ahead
	if out != nil {
		r, segs, whole := copiedFrom(src, fp)
		unread := whole && !out.checkCopies
		if !unread {
			if err := c.take(ctx); err != nil {
				return err
			}
			defer c.give()
		}
		var err error
		if f, err = out.CreateFile(ctx, fp.Name); err != nil {
			return err
		}
		if unread {
			// A file copied whole is copied by the store, unread, where it
			// can be.
			switch done, err := copyUnread(r, f, fp, segs, m); {
			case err != nil:
				f.Close()
				return err
			case done:
				return f.Close()
			}
			if err := c.take(ctx); err != nil {
				f.Close()
				return err
			}
			defer c.give()
		}
		// With no segment copied (r nil), ReadAhead reads nothing.
		if ahead, err = r.ReadAhead(ctx, segs); err != nil {
			f.Close()
			return err
		}
		defer ahead.Close()
		if whole {
			// A file copied whole may be copied by the store while it is
			// read and checked, to the name its input claims, if it
			// claims one: the writer keeps that copy only if the bytes
			// have the digest claimed.
			f.ClaimCopy(ctx, r, segs)
		}
	}
	// The segments that are decoded (filtered, or their values rewritten)
	// are read ahead too, in a bucket, through a walk of their own within
	// a share of one walk's memory.
	var decoded []savepoint.Segment
	for i := range fp.Segments {
		if p := &fp.Segments[i]; decodes(src, p) {
			decoded = append(decoded, p.Src)
		}
	}
	dw := &decodeWalk{walk: savepoint.WalkSegmentsShared(ctx, src, decoded, n)}
	defer dw.walk.Close()
	for i := range fp.Segments {
		if err := writeSegment(ctx, src, f, ahead, dw, &fp.Segments[i]); err != nil {
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

// copyUnread has the store copy the input file whose segments segs are,
// all of them, into f without reading it (see DataFile.CopyUnread): the
// segments of fp, which copies them in order. It reports whether it did.
func copyUnread(r *snapshotfmt.Reader, f *DataFile, fp *FilePlan, segs []savepoint.Segment, m *Meter) (bool, error) {
	dst := make([]savepoint.StateRef, len(fp.Segments))
	for i := range fp.Segments {
		dst[i] = fp.Segments[i].Dst
	}
	if done, err := f.CopyUnread(r, segs, dst); !done {
		return false, err
	}
	for i := range fp.Segments {
		p := &fp.Segments[i]
		p.Kept = p.Src.Entries
		m.Add(p.Src.Length)
	}
	return true, nil
}

// copied reports whether writeSegment copies p as bytes from r.
func copied(src savepoint.Source, p *SegmentPlan) (r *snapshotfmt.Reader, ok bool) {
	if p.Drop || p.KeepModified != nil || p.Value != nil || p.Src.File == "" {
		return nil, false
	}
	return canonical(src)
}

// copiedFrom returns the segments of fp that are copied as bytes from the
// first input file fp copies from, and whether fp is all of them. The
// layouts write a file from one input file at most; any other is copied
// without reading ahead.
func copiedFrom(src savepoint.Source, fp *FilePlan) (r *snapshotfmt.Reader, segs []savepoint.Segment, all bool) {
	all = len(fp.Segments) > 0
	for i := range fp.Segments {
		p := &fp.Segments[i]
		pr, ok := copied(src, p)
		if ok && (segs == nil || p.Src.File == segs[0].File) {
			r, segs = pr, append(segs, p.Src)
		} else {
			all = false
		}
	}
	return r, segs, all
}

// decodes reports whether writeSegment reads the entries of p.
func decodes(src savepoint.Source, p *SegmentPlan) bool {
	_, copies := copied(src, p)
	return !p.Drop && !copies
}

// decodeWalk is a walk over the segments of a file that are decoded, and
// the next of them.
type decodeWalk struct {
	walk savepoint.Walk
	next int
}

func (w *decodeWalk) entries(ctx context.Context) savepoint.EntryIterator {
	w.next++
	return w.walk.Entries(ctx, w.next-1)
}

func writeSegment(ctx context.Context, src savepoint.Source, f *DataFile, ahead *snapshotfmt.Ahead, dw *decodeWalk, p *SegmentPlan) error {
	if p.Drop {
		p.Kept = 0
		return nil
	}
	if r, ok := copied(src, p); ok {
		p.Kept = p.Src.Entries
		switch {
		case f == nil:
			return nil
		case ahead.Reads(p.Src):
			return f.CopySegmentAhead(ctx, ahead, p.Src, p.Dst, p.Src.KeyGroup)
		}
		return f.CopySegment(ctx, r, p.Src, p.Dst, p.Src.KeyGroup)
	}
	return filterSegment(src.Metadata(), dw.entries(ctx), f, p)
}

// filterSegment streams the entries of p.Src, from it, that p.KeepModified
// keeps (all when it is nil), with their values rewritten by p.Value when
// set, into a segment of f, one entry at a time: memory holds one input
// block, one output block and one value. The output segment is opened at the first
// kept entry, so nothing is written when none is. With f nil it only counts
// (and rewrites values, whose errors it reports).
func filterSegment(m *savepoint.Metadata, it savepoint.EntryIterator, f *DataFile, p *SegmentPlan) (err error) {
	defer it.Close()
	if ir, ok := it.(itemReader); ok && p.KeepModified != nil && p.Value == nil && !p.Src.Ref.Timer {
		return filterItems(ir, m.KeyedState(p.Src.Ref).Kind == savepoint.Map, f, p)
	}
	out := outSegment{f: f, p: p}
	defer out.close(&err)
	var kept uint64
	var value []byte
	var changed savepoint.Entry // an entry with a new value; the iterator's is read-only
	for n := uint64(0); it.Next(); n++ {
		e := it.Entry()
		if p.KeepModified != nil {
			// A reader checks that a TTL value holds its 8-byte time; a
			// plan for a state without TTL is refused here.
			if len(e.Value) < 8 {
				return &savepoint.Error{Reader: "rewrite", File: p.Src.File, KeyGroup: p.Src.KeyGroup, Offset: p.Src.Offset,
					Err: fmt.Errorf("entry %d of the segment at this offset has no last-modified time", n)}
			}
			if !p.KeepModified(int64(binary.BigEndian.Uint64(e.Value))) {
				continue
			}
		}
		kept++
		if p.Value != nil {
			if value, err = p.Value(value[:0], e); err != nil {
				return &savepoint.Error{Reader: "rewrite", File: p.Src.File, KeyGroup: p.Src.KeyGroup, Offset: p.Src.Offset,
					Err: fmt.Errorf("entry %d of the segment at this offset: %w", n, err)}
			}
			changed = *e
			changed.Value = value
			e = &changed
		}
		if f == nil {
			continue
		}
		sw, err := out.writer()
		if err != nil {
			return err
		}
		if err := sw.Add(e); err != nil {
			return fmt.Errorf("rewrite: %s key group %d: %w", p.Src.File, p.Src.KeyGroup, err)
		}
	}
	p.Kept = kept
	return it.Err()
}

// outSegment is the output segment of a filtered plan, opened at its first
// entry kept, so that nothing is written when none is.
type outSegment struct {
	f  *DataFile
	p  *SegmentPlan
	sw *SegmentWriter
}

func (o *outSegment) writer() (*SegmentWriter, error) {
	if o.sw == nil {
		sw, err := o.f.Segment(o.p.Dst, o.p.Src.KeyGroup)
		if err != nil {
			return nil, err
		}
		o.sw = sw
	}
	return o.sw, nil
}

// close closes the segment if it was opened, keeping the first error.
func (o *outSegment) close(err *error) {
	if o.sw != nil {
		if cerr := o.sw.Close(); *err == nil {
			*err = cerr
		}
	}
}

// itemReader is the iterator of a layout that gives a state's items a
// record at a time, framed (snapshotfmt.Iterator.NextItems).
type itemReader interface {
	NextItems() (key, ns, items []byte, n int)
	Err() error
}

// filterItems is filterSegment for an input that gives the items of each
// record framed: the items p.KeepModified keeps are copied as they are, a
// run at a time, and the writer checks them as it checks entries.
func filterItems(ir itemReader, mapState bool, f *DataFile, p *SegmentPlan) (err error) {
	out := outSegment{f: f, p: p}
	defer out.close(&err)
	var kept uint64
	var buf []byte
	for {
		key, ns, items, n := ir.NextItems()
		if n == 0 {
			break
		}
		var k int
		if buf, k, err = snapshotfmt.FilterItems(buf[:0], items, mapState, p.KeepModified); err != nil {
			return fmt.Errorf("rewrite: %s key group %d: %w", p.Src.File, p.Src.KeyGroup, err)
		}
		kept += uint64(k)
		if k == 0 || f == nil {
			continue
		}
		sw, err := out.writer()
		if err != nil {
			return err
		}
		if _, err := sw.AppendItems(key, ns, buf); err != nil {
			return fmt.Errorf("rewrite: %s key group %d: %w", p.Src.File, p.Src.KeyGroup, err)
		}
	}
	p.Kept = kept
	return ir.Err()
}
