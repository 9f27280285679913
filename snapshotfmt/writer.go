package snapshotfmt

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/stateproc/stateproc/internal/crc"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// DefaultBlockSize is the raw payload size at which the writer starts a new
// block.
const DefaultBlockSize = 64 << 10

// Options tune the writer. The zero value writes uncompressed 64 KiB blocks.
type Options struct {
	Compression Codec
	// BlockSize is the raw payload size a block is cut at; 0 means
	// DefaultBlockSize.
	BlockSize int
}

// Writer stages a new savepoint. Data files are written first, each by its
// own DataFileWriter (several may be written concurrently) and named after
// its bytes when it is closed; Finish writes the metadata last and
// publishes the savepoint. On any error, call Abort.
type Writer struct {
	dst  Target
	meta *savepoint.Metadata
	opts Options

	mu sync.Mutex
	// files holds the data files by the stem and extension they were
	// created under.
	files    map[string]*DataFileWriter
	claimed  map[segmentKey]bool
	segments [][]savepoint.Segment // per operator, in the order they were closed
	done     bool                  // finished or aborted
}

type segmentKey struct {
	ref savepoint.StateRef
	kg  int
}

// NewWriter checks meta against every rule the reader enforces (segments
// aside: the writer produces those) and returns a writer into target. meta
// must not change until Finish.
func NewWriter(target Target, meta *savepoint.Metadata, opts Options) (*Writer, error) {
	if meta == nil {
		return nil, errors.New("snapshotfmt: no metadata")
	}
	if opts.Compression != CodecNone && opts.Compression != CodecZstd {
		return nil, fmt.Errorf("snapshotfmt: unknown compression codec %d", opts.Compression)
	}
	if opts.BlockSize == 0 {
		opts.BlockSize = DefaultBlockSize
	}
	if opts.BlockSize < 1 || opts.BlockSize > maxBlockRaw {
		return nil, fmt.Errorf("snapshotfmt: block size %d outside 1..%d", opts.BlockSize, maxBlockRaw)
	}
	if err := checkMetadata(meta); err != nil {
		return nil, fmt.Errorf("snapshotfmt: invalid metadata: %w", err)
	}
	return &Writer{
		dst:      target,
		meta:     meta,
		opts:     opts,
		files:    map[string]*DataFileWriter{},
		claimed:  map[segmentKey]bool{},
		segments: make([][]savepoint.Segment, len(meta.Operators)),
	}, nil
}

// CreateDataFile creates a data file. Its name is the one given with the
// 16 hex digits of the content hash of its bytes (storage.NewContentHash)
// put before the extension ("op001-00000.data" becomes "op001-00000-<digits>.data"; a
// content suffix the given name carries already is replaced), known once
// the file is closed: the same state gives the same names, and a file of
// a given name always holds the same bytes. The name must be a valid
// relative name, unique within the savepoint.
func (w *Writer) CreateDataFile(ctx context.Context, name string) (*DataFileWriter, error) {
	if err := checkDataFileName(name); err != nil {
		return nil, fmt.Errorf("snapshotfmt: data file: %w", err)
	}
	stem, ext := dataFileStem(name)
	f := &DataFileWriter{w: w, key: stem + ext}
	w.mu.Lock()
	switch {
	case w.done:
		w.mu.Unlock()
		return nil, errors.New("snapshotfmt: writer already finished or aborted")
	case w.files[f.key] != nil:
		w.mu.Unlock()
		return nil, fmt.Errorf("snapshotfmt: data file %s created twice", f.key)
	}
	w.files[f.key] = f
	w.mu.Unlock()

	// A file that fails here is marked closed and failed, so that Finish
	// names it.
	var err error
	if storage.InBucket(w.dst) {
		f.out, err = newComposeSink(w.dst, stem, ext)
	} else {
		var out storage.NamedWriter
		if out, err = w.dst.CreateNamed(ctx, stem, ext); err == nil {
			f.out = newBehindSink(out)
		}
	}
	if err != nil {
		f.closed, f.err = true, fmt.Errorf("snapshotfmt: %s: %w", f.key, err)
		return nil, f.err
	}
	if w.opts.Compression == CodecZstd {
		if f.enc, err = newZstdEncoder(); err != nil {
			f.err = fmt.Errorf("snapshotfmt: %s: %w", f.key, err)
		}
	}
	if err := f.write(appendPreamble(nil, typeData)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// DataFileWriter writes one data file. It is used by one goroutine at a
// time.
type DataFileWriter struct {
	w *Writer
	// key is the stem and extension the file was created under, which
	// names it in messages and in the index until it is closed; name is
	// its content name, set by Close.
	key, name string
	out       sink
	size      int64
	enc       *zstd.Encoder
	scratch   []byte
	// rw encodes the open segment; its buffers serve one segment after
	// another.
	rw     *recordWriter
	open   *SegmentWriter
	closed bool
	// anchor, when anchored, is the time the TTL histograms of the
	// segments are anchored at, instead of the metadata's creation time.
	anchor   int64
	anchored bool
	// unread names the source file this file is a copy of, whole, when
	// CopyUnread made it one: nothing more can be written to it.
	unread string
	// err is sticky: after a failed write, or a segment left half-written,
	// the file cannot become part of the savepoint.
	err error
}

func (f *DataFileWriter) write(b []byte) error {
	if f.err != nil {
		return f.err
	}
	if err := f.out.write(b); err != nil {
		f.err = fmt.Errorf("snapshotfmt: writing %s: %w", f.key, err)
		return f.err
	}
	f.size += int64(len(b))
	return nil
}

// copied appends a block copied from off in src.
func (f *DataFileWriter) copied(b []byte, src storage.File, off int64, v Version) error {
	if f.err != nil {
		return f.err
	}
	if err := f.out.copied(b, src, off, v); err != nil {
		f.err = fmt.Errorf("snapshotfmt: writing %s: %w", f.key, err)
		return f.err
	}
	f.size += int64(len(b))
	return nil
}

// emit seals and writes a block of the open segment.
func (f *DataFileWriter) emit(blk []byte) error {
	block, scratch := sealBlock(blk, f.scratch, f.enc)
	f.scratch = scratch
	return f.write(block)
}

// usable reports why no segment can be started now, if one cannot.
func (f *DataFileWriter) usable() error {
	switch {
	case f.err != nil:
		return f.err
	case f.closed:
		return fmt.Errorf("snapshotfmt: data file %s is closed", f.key)
	case f.open != nil:
		return fmt.Errorf("snapshotfmt: data file %s: a segment is still open", f.key)
	case f.unread != "":
		return fmt.Errorf("snapshotfmt: data file %s is a copy of %s whole", f.key, f.unread)
	}
	return nil
}

// target checks that (ref, kg) names a keyed state or timer service
// segment of the new savepoint.
func (w *Writer) target(ref savepoint.StateRef, kg int) (*savepoint.Operator, error) {
	if err := w.meta.Check(ref); err != nil {
		return nil, fmt.Errorf("snapshotfmt: %w", err)
	}
	o := &w.meta.Operators[ref.Operator]
	if kg < 0 || kg >= o.MaxParallelism {
		return nil, fmt.Errorf("snapshotfmt: operator %q: key group %d not below max parallelism %d", o.UID, kg, o.MaxParallelism)
	}
	return o, nil
}

// claim reserves (ref, kg): each is written at most once.
func (w *Writer) claim(ref savepoint.StateRef, kg int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return errors.New("snapshotfmt: writer already finished or aborted")
	}
	k := segmentKey{ref, kg}
	if w.claimed[k] {
		return fmt.Errorf("snapshotfmt: %s key group %d written twice", w.meta.Describe(ref), kg)
	}
	w.claimed[k] = true
	return nil
}

func (w *Writer) addSegment(s savepoint.Segment) {
	w.mu.Lock()
	w.segments[s.Ref.Operator] = append(w.segments[s.Ref.Operator], s)
	w.mu.Unlock()
}

// Segment starts the segment of state (or timer service) ref in key group
// kg. A file has one open segment at a time.
func (f *DataFileWriter) Segment(ref savepoint.StateRef, kg int) (*SegmentWriter, error) {
	if err := f.usable(); err != nil {
		return nil, err
	}
	o, err := f.w.target(ref, kg)
	if err != nil {
		return nil, err
	}
	if err := f.w.claim(ref, kg); err != nil {
		return nil, err
	}
	if f.rw == nil {
		f.rw = newRecordWriter(f.w.opts.BlockSize, f.emit)
	}
	f.rw.reset(shapeOf(o, ref, kg))
	f.rw.hist = f.histCounts(o, ref)
	s := &SegmentWriter{f: f, ref: ref, start: f.size, rw: f.rw}
	s.where = fmt.Sprintf("%s key group %d", f.w.meta.Describe(ref), kg)
	f.open = s
	return s, nil
}

// AnchorAt anchors the TTL last-modified histograms of the segments started
// after it at t, in epoch milliseconds. By default they are anchored at the
// metadata's creation time as it is when a segment starts, which is what a
// writer that knows that time up front wants; one that learns it only when
// it finishes (the engine, from its subtasks' clocks) anchors each file at
// the time its entries were taken, so that ages still derive at any time.
func (f *DataFileWriter) AnchorAt(t int64) { f.anchor, f.anchored = t, true }

// histCounts returns the histograms a segment of ref gathers: none for a
// timer service.
func (f *DataFileWriter) histCounts(o *savepoint.Operator, ref savepoint.StateRef) *histCounts {
	if ref.Timer {
		return nil
	}
	anchor := f.w.meta.CreatedAt
	if f.anchored {
		anchor = f.anchor
	}
	return newHistCounts(shapeOf(o, ref, 0), ttlMillisOf(o, ref), anchor)
}

// ttlMillisOf is the TTL of keyed state ref in milliseconds, 0 without
// TTL or for a timer service.
func ttlMillisOf(o *savepoint.Operator, ref savepoint.StateRef) int64 {
	if ref.Timer {
		return 0
	}
	if c := o.States[ref.State].TTL; c != nil {
		return c.Millis()
	}
	return 0
}

// modifiedSpansTimes checks a last-modified histogram that a copy carries
// over against the times the copy counted: the bucket rises with the time,
// so its lowest and highest buckets are those of the least and greatest
// last-modified times.
func modifiedSpansTimes(s *savepoint.Stats, ttlMillis int64) error {
	h := s.Modified
	if len(h) == 0 {
		return corruptf("segment's index entry has no last-modified histogram")
	}
	lo := savepoint.ModifiedBucket(savepoint.ExpiryOffset(s.MinTimestamp, ttlMillis, s.Anchor))
	hi := savepoint.ModifiedBucket(savepoint.ExpiryOffset(s.MaxTimestamp, ttlMillis, s.Anchor))
	if first, last := h[0].Bucket, h[len(h)-1].Bucket; first != lo || last != hi {
		return corruptf("index's last-modified histogram spans buckets %d to %d, its times %d to %d give %d to %d", first, last, s.MinTimestamp, s.MaxTimestamp, lo, hi)
	}
	return nil
}

// SegmentWriter writes the entries of one segment.
type SegmentWriter struct {
	f      *DataFileWriter
	ref    savepoint.StateRef
	start  int64
	rw     *recordWriter
	where  string
	closed bool
	// framed is set once AppendItems has added entries: Add, which
	// compares map keys with the last one it added, cannot follow.
	framed bool
}

// Add appends an entry. Entries come in the order FORMAT.md gives: sorted
// by (key, namespace); list elements in list order; map entries by map key;
// timers by (time, key, namespace). An entry out of order, of the wrong
// shape or with a key of another key group is refused and changes nothing.
func (s *SegmentWriter) Add(e *savepoint.Entry) error {
	if s.closed {
		return fmt.Errorf("snapshotfmt: %s: segment is closed", s.where)
	}
	if s.f.err != nil {
		return s.f.err
	}
	if s.framed {
		return fmt.Errorf("snapshotfmt: %s: Add after AppendItems", s.where)
	}
	if err := s.rw.add(e); err != nil {
		if s.f.err != nil {
			return s.f.err
		}
		return fmt.Errorf("snapshotfmt: %s: %w", s.where, err)
	}
	return nil
}

// AppendItems appends the entries of one key and namespace of a value,
// list or map state whose items are framed already, as FORMAT.md lays
// items out: for a map state the map key's bytes, then the value's, each
// after its uvarint length; items holds one item after another. It is Add
// for a writer that moves entries read from a checked savepoint, whose
// framing it keeps: the items are copied as they are, in runs, and the
// key and namespace are compared once with the previous call's. When they
// are equal, the call continues the entries of the one before, as the
// pieces of a long list or map do; map keys are never compared, so the
// caller answers for the order of the entries of one key and namespace.
// Everything else is checked as Add checks it: the order of keys and
// namespaces, a second entry of a value state, the key group of each new
// key, each item's framing, the TTL timestamp, the block limit. It
// returns how many entries it appended: on an error, those before the one
// at fault, which changes nothing. A segment takes its entries either
// through Add or through AppendItems.
func (s *SegmentWriter) AppendItems(key, ns, items []byte) (int, error) {
	if s.closed {
		return 0, fmt.Errorf("snapshotfmt: %s: segment is closed", s.where)
	}
	if s.f.err != nil {
		return 0, s.f.err
	}
	if s.rw.entries > 0 && !s.framed {
		return 0, fmt.Errorf("snapshotfmt: %s: AppendItems after Add", s.where)
	}
	s.framed = true
	n, err := s.rw.addItems(key, ns, items)
	if err != nil {
		if s.f.err != nil {
			return n, s.f.err
		}
		return n, fmt.Errorf("snapshotfmt: %s: %w", s.where, err)
	}
	return n, nil
}

// Close writes what is buffered and records the segment in the index. A
// segment without entries writes nothing and is not indexed.
func (s *SegmentWriter) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.f.open = nil
	defer func() { s.rw.hist.release(); s.rw.hist = nil }()
	if err := s.rw.flush(); err != nil {
		return err
	}
	if s.rw.entries == 0 {
		return nil
	}
	s.f.w.addSegment(savepoint.Segment{
		Ref:    s.ref,
		Stats:  s.rw.stats(),
		File:   s.f.key,
		Offset: s.start,
		Length: s.f.size - s.start,
	})
	return nil
}

// copyBatch is how many items CopySegment checks in one batch.
const copyBatch = 256

// Ahead reads segments of one data file of a savepoint ahead of the
// CopySegmentAhead calls that copy them, in order, with several reads in
// flight, adjacent segments shorter than a read in one request: from a
// bucket, a copy that reads one segment at a time, a request after the
// last, leaves the link idle between them.
type Ahead struct {
	src   *Reader
	ahead *storage.Ahead
	segs  []savepoint.Segment
	next  int
}

// aheadInFlight is how many reads an Ahead keeps in flight: with one file
// per core being copied, about what a scan of a bucket keeps.
const aheadInFlight = 3

// ReadAhead starts reading segs, which lie in one data file of r, for
// CopySegmentAhead. It returns nil where reading ahead is not worth it (a
// local file, whose reads the page cache serves) or segs is empty. Close
// it in every case.
func (r *Reader) ReadAhead(ctx context.Context, segs []savepoint.Segment) (*Ahead, error) {
	if len(segs) == 0 {
		return nil, nil
	}
	file, err := r.file(segs[0].File)
	if err != nil {
		return nil, err
	}
	chunk := storage.ReadSize(file)
	if chunk == 0 {
		return nil, nil
	}
	ranges := make([]storage.Range, len(segs))
	for i, s := range segs {
		if s.File != segs[0].File {
			return nil, fmt.Errorf("snapshotfmt: read ahead of %s and %s: one data file at a time", segs[0].File, s.File)
		}
		ranges[i] = storage.Range{File: file, Off: s.Offset, Len: s.Length}
	}
	ahead := storage.ReadAhead(ctx, ranges, storage.PrefetchOptions{InFlight: aheadInFlight, ChunkSize: chunk, Budget: (aheadInFlight + 1) * chunk})
	return &Ahead{src: r, ahead: ahead, segs: segs}, nil
}

// Reads reports whether a reads seg ahead: it lies in a's file. A nil
// Ahead reads nothing.
func (a *Ahead) Reads(seg savepoint.Segment) bool {
	return a != nil && len(a.segs) > 0 && seg.File == a.segs[0].File
}

// Close stops the reads.
func (a *Ahead) Close() {
	if a != nil {
		a.ahead.Close()
	}
}

// CopySegmentAhead is CopySegment for the next of the segments a reads
// ahead, which must be seg.
func (f *DataFileWriter) CopySegmentAhead(ctx context.Context, a *Ahead, seg savepoint.Segment, ref savepoint.StateRef, kg int) error {
	if a.next >= len(a.segs) || a.segs[a.next].File != seg.File || a.segs[a.next].Offset != seg.Offset || a.segs[a.next].Length != seg.Length {
		return fmt.Errorf("snapshotfmt: %s offset %d is not the next segment read ahead", seg.File, seg.Offset)
	}
	a.next++
	return f.copySegment(ctx, a.src, a.ahead.Take(a.next-1), seg, ref, kg)
}

// ClaimCopy starts a server-side copy of a data file of src to the name
// that file has, where this file is about to be that file whole: segs are
// all its segments, in order, to be copied with CopySegment or
// CopySegmentAhead and nothing else; its name claims the digest of its
// bytes under this format's naming rule (see CreateDataFile), with the
// stem and extension this file was created under; it is of the newest
// format version, so its preamble is the one written; and the target is an
// S3 bucket of the store src lies in. The store then copies while the
// copies read and check the bytes, instead of after the digest is known.
// The claim is not trusted: Close keeps the copy only if the file turned
// out to be src's file whole and its bytes have the digest claimed, and
// otherwise deletes it and writes the file as without it, so that a
// savepoint whose names lie (renamed files, another tool's names) never
// gets a misnamed file. Call it before the first segment. It reports
// whether the copy started.
func (f *DataFileWriter) ClaimCopy(ctx context.Context, src *Reader, segs []savepoint.Segment) bool {
	sink, file, name, ok := f.wholeSource(src, segs)
	return ok && sink.claimWhole(ctx, file, name)
}

// CopyUnread makes this file a data file of src whole without reading it:
// Close has the store copy that file to the name it has, and its segments
// segs (all of them, in order) are indexed as the segments of dst[i] in
// their key groups, with the figures of their own index entries. It is the
// copy of a rewrite that leaves a file as it is, whose bytes then never
// come through this process. What a copy that reads checks (the blocks'
// CRCs, the records against the index, the name against the digest of the
// bytes) is taken on trust: the file is as sound as it is in src, and
// verify checks it there as here; and since its name is taken to be its
// digest, the copy replaces a file of that name, as the copy of a file
// whose digest was computed does. Where the bytes are needed it does
// nothing and reports false, and the file is written with CopySegment as
// without it: where ClaimCopy could not claim the file or the store cannot
// copy it (the file lies in another store), where a histogram would be
// counted again (another anchor or TTL), and where a segment of dst has
// another shape. Call it before the first segment; after it, only Close.
func (f *DataFileWriter) CopyUnread(src *Reader, segs []savepoint.Segment, dst []savepoint.StateRef) (bool, error) {
	sink, file, name, ok := f.wholeSource(src, segs)
	if !ok || len(dst) != len(segs) || !storage.SameStore(sink.t, file) {
		return false, nil
	}
	for i, seg := range segs {
		if !f.carriesOver(src, seg, dst[i]) {
			return false, nil
		}
	}
	for i, seg := range segs {
		if err := f.w.claim(dst[i], seg.KeyGroup); err != nil {
			f.err = err
			return false, err
		}
		f.w.addSegment(savepoint.Segment{Ref: dst[i], Stats: seg.Stats, File: f.key, Offset: seg.Offset, Length: seg.Length})
	}
	sink.unread, sink.unreadName = file, name
	f.size, f.unread = file.Size(), name
	return true, nil
}

// wholeSource returns the sink, the file of src and its name where this
// file may be that file whole: segs are all its segments, in order; its
// name claims a digest under this format's naming rule, with the stem and
// extension this file was created under; it is of the newest format
// version, so its preamble is the one written; and this file is written
// to a bucket and has nothing but its preamble yet.
func (f *DataFileWriter) wholeSource(src *Reader, segs []savepoint.Segment) (*composeSink, storage.File, string, bool) {
	sink, ok := f.out.(*composeSink)
	if !ok || f.usable() != nil || f.size != preambleLen || len(segs) == 0 || src.idx.version != NewestVersion {
		return nil, nil, "", false
	}
	name := segs[0].File
	if stem, ext := dataFileStem(name); stem+ext != f.key || name == f.key {
		return nil, nil, "", false
	}
	file, err := src.file(name)
	if err != nil {
		return nil, nil, "", false
	}
	end := int64(preambleLen)
	for _, s := range segs {
		if s.File != name || s.Offset != end {
			return nil, nil, "", false
		}
		end += s.Length
	}
	if end != file.Size() {
		return nil, nil, "", false
	}
	return sink, file, name, true
}

// carriesOver reports whether seg of src, copied as the segment of ref in
// its key group, keeps its index entry as it is: the shapes are the same,
// and the histograms, if any, are carried over (see copySegment).
func (f *DataFileWriter) carriesOver(src *Reader, seg savepoint.Segment, ref savepoint.StateRef) bool {
	o, err := f.w.target(ref, seg.KeyGroup)
	if err != nil || src.meta.Check(seg.Ref) != nil {
		return false
	}
	so := &src.meta.Operators[seg.Ref.Operator]
	if shapeOf(so, seg.Ref, seg.KeyGroup) != shapeOf(o, ref, seg.KeyGroup) {
		return false
	}
	out := f.histCounts(o, ref)
	defer out.release()
	return out == nil || histogramsCarried(out, &seg, ttlMillisOf(so, seg.Ref))
}

// histogramsCarried reports whether the histograms of seg, whose state
// has a TTL of srcTTL milliseconds, are those that out would count: seg
// has them, and they are anchored at the same time under the same TTL,
// where there is one.
func histogramsCarried(out *histCounts, seg *savepoint.Segment, srcTTL int64) bool {
	return seg.Sizes != nil && (!out.ttl || seg.Anchor == out.anchor && srcTTL == out.ttlMillis)
}

// CopySegment copies seg of src into this file as opaque bytes, as the
// segment of (ref, kg). Each block is checked as a reader checks it before
// it is written (its CRC and header, and the framing and order of its
// records, their key group included), and the segment against its index
// entry at its end, so that a copy never writes records a reader would
// refuse; the records are not decoded further, nor rewritten, and the index
// numbers are taken from seg. Its histograms are counted again only where
// the copy's differ (another anchor or TTL, or a source of format version
// 1); otherwise they are carried over, checked against the least and
// greatest times counted, and the histograms alone are left to verify to
// check in full, as on the source. The destination must have the same shape
// (state kind and TTL, or timer service) and the same key groups: a copy
// cannot move keys.
func (f *DataFileWriter) CopySegment(ctx context.Context, src *Reader, seg savepoint.Segment, ref savepoint.StateRef, kg int) error {
	return f.copySegment(ctx, src, nil, seg, ref, kg)
}

// copySegment is CopySegment, reading through ahead when it is set.
func (f *DataFileWriter) copySegment(ctx context.Context, src *Reader, ahead *storage.Prefetcher, seg savepoint.Segment, ref savepoint.StateRef, kg int) error {
	if ahead != nil {
		// The block reader closes it with itself; until then, here.
		defer func() {
			if ahead != nil {
				ahead.Close()
			}
		}()
	}
	if err := f.usable(); err != nil {
		return err
	}
	o, err := f.w.target(ref, kg)
	if err != nil {
		return err
	}
	if err := src.meta.Check(seg.Ref); err != nil {
		return fmt.Errorf("snapshotfmt: source segment: %w", err)
	}
	so := &src.meta.Operators[seg.Ref.Operator]
	file, err := src.file(seg.File)
	if err != nil {
		return err
	}
	if seg.Offset < preambleLen || seg.Length <= 0 || seg.Offset > file.Size()-seg.Length {
		return fmt.Errorf("snapshotfmt: source segment at %s offset %d length %d is not in the source", seg.File, seg.Offset, seg.Length)
	}
	srcShape, dstShape := shapeOf(so, seg.Ref, seg.KeyGroup), shapeOf(o, ref, kg)
	switch {
	case srcShape.kind != dstShape.kind || srcShape.ttl != dstShape.ttl:
		return fmt.Errorf("snapshotfmt: cannot copy a segment of source %s into %s: their records differ", src.meta.Describe(seg.Ref), f.w.meta.Describe(ref))
	case srcShape != dstShape:
		return fmt.Errorf("snapshotfmt: cannot copy key group %d of max parallelism %d into key group %d of max parallelism %d: keys would land in the wrong key group",
			seg.KeyGroup, so.MaxParallelism, kg, o.MaxParallelism)
	}
	if err := f.w.claim(ref, kg); err != nil {
		return err
	}
	// From here on a failure leaves a partial segment in the file, so it
	// fails the file.
	start := f.size
	br := newBlockReader(ctx, file, seg.File, &seg)
	br.pf, ahead = ahead, nil
	defer br.release()
	var e savepoint.Entry
	rr := newRecordReader(srcShape, &e, br)
	// The histograms: a segment copied into a savepoint that anchors them
	// at the same time, under the same TTL, has the ones its index entry
	// has, which are carried over; they are the one figure a copy takes
	// without counting it, and are checked against the times it does
	// count. Otherwise they are counted as the records are checked: those
	// of a source that has them are checked, and the copy's are counted
	// at its own anchor and TTL, so that a source of another creation time
	// or without histograms (format version 1) still gives the copy
	// correct ones.
	out := f.histCounts(o, ref)
	srcTTL := ttlMillisOf(so, seg.Ref)
	carried := out != nil && histogramsCarried(out, &seg, srcTTL)
	switch {
	case carried:
		out.release()
		out = nil
	case out != nil && seg.Sizes != nil:
		rr.hist = newHistCounts(srcShape, srcTTL, seg.Anchor)
		rr.reanchored = out
	default:
		rr.hist = out
	}
	defer func() {
		if rr.hist != out {
			rr.hist.release()
		}
		out.release()
	}()
	var sizes [copyBatch]int
	var times [copyBatch]int64
	for {
		if err := ctx.Err(); err != nil {
			f.err = err
			return err
		}
		rr.endBlock()
		err := br.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			f.err = err
			return err
		}
		payload, more, err := br.payload()
		if err != nil {
			f.err = err
			return err
		}
		rr.startBlock(payload, more)
		if srcShape.timers() {
			for rr.next() {
			}
		} else {
			// The batched loop checks and counts all that next does, and
			// leaves to next what it does not take on.
			for rr.values(sizes[:], times[:]) > 0 || rr.next() {
			}
		}
		if off, err := rr.failure(); err != nil {
			f.err = recordError(br, off, err)
			return f.err
		}
		if err := br.finish(); err != nil {
			f.err = err
			return err
		}
		if err := f.copied(br.cur, file, br.blockAt(), src.idx.version); err != nil {
			return err
		}
	}
	err = rr.check(&seg.Stats)
	if err == nil && carried && srcShape.ttl {
		err = modifiedSpansTimes(&seg.Stats, srcTTL)
	}
	if err != nil {
		f.err = at(seg.File, seg.KeyGroup, seg.Offset, err)
		return f.err
	}
	stats := seg.Stats
	stats.KeyGroup = kg
	if out != nil {
		rr.hist.fill(&stats)
		if rr.reanchored != nil {
			stats.Modified, stats.Anchor = rr.reanchored.modified.sparse(), rr.reanchored.anchor
		}
	}
	f.w.addSegment(savepoint.Segment{Ref: ref, Stats: stats, File: f.key, Offset: start, Length: f.size - start})
	return nil
}

// Close completes the file and names it. A segment still open makes the
// file unusable.
func (f *DataFileWriter) Close() error {
	if f.closed {
		return f.err
	}
	f.closed = true
	if f.open != nil && f.err == nil {
		f.err = fmt.Errorf("snapshotfmt: data file %s closed with %s still open", f.key, f.open.where)
	}
	if f.enc != nil {
		f.enc.Close()
	}
	if f.out == nil {
		return f.err
	}
	if f.err != nil {
		f.out.abort()
		return f.err
	}
	name, err := f.out.finish(context.Background())
	if err != nil {
		f.err = fmt.Errorf("snapshotfmt: writing %s: %w", f.key, err)
		return f.err
	}
	f.name = name
	return nil
}

// Name is the file's name in the savepoint, known once Close succeeded.
func (f *DataFileWriter) Name() string { return f.name }

// Finish writes _metadata, once every data file is closed, and publishes
// the savepoint.
func (w *Writer) Finish(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return errors.New("snapshotfmt: writer already finished or aborted")
	}
	// The model is checked again: the writer must never publish what the
	// reader would reject, even if it was changed since NewWriter.
	if err := checkMetadata(w.meta); err != nil {
		return fmt.Errorf("snapshotfmt: invalid metadata: %w", err)
	}
	idx := &index{segments: w.segments}
	names := map[string]string{}
	for key, f := range w.files {
		if !f.closed {
			return fmt.Errorf("snapshotfmt: data file %s is not closed", key)
		}
		if f.err != nil {
			return fmt.Errorf("snapshotfmt: data file %s failed: %w", key, f.err)
		}
		idx.files = append(idx.files, dataFile{name: f.name, size: f.size})
		names[key] = f.name
	}
	slices.SortFunc(idx.files, func(a, b dataFile) int { return cmp.Compare(a.name, b.name) })
	for i := 1; i < len(idx.files); i++ {
		if idx.files[i].name == idx.files[i-1].name {
			return fmt.Errorf("snapshotfmt: two data files are named %s", idx.files[i].name)
		}
	}
	for _, segs := range idx.segments {
		for i := range segs {
			segs[i].File = names[segs[i].File]
		}
		slices.SortFunc(segs, func(a, b savepoint.Segment) int { return lessSegment(&a, &b) })
	}
	body := encodeMetadataBody(w.meta, idx)
	file := appendPreamble(nil, typeMetadata)
	file = binary.BigEndian.AppendUint64(file, uint64(len(body)))
	file = append(file, body...)
	file = binary.BigEndian.AppendUint32(file, crc.Checksum(file[preambleLen:]))

	out, err := w.dst.Create(ctx, MetadataName)
	if err != nil {
		return fmt.Errorf("snapshotfmt: %s: %w", MetadataName, err)
	}
	if _, err := out.Write(file); err != nil {
		out.Close()
		return fmt.Errorf("snapshotfmt: writing %s: %w", MetadataName, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("snapshotfmt: writing %s: %w", MetadataName, err)
	}
	if err := w.dst.Publish(ctx); err != nil {
		return err
	}
	w.done = true
	return nil
}

// Abort removes everything written. It is a no-op after Finish succeeded.
// Call it once no goroutine uses the data file writers any more.
func (w *Writer) Abort() error {
	if !w.stop() {
		return nil
	}
	return w.dst.Abort()
}

// Leave stops the writer as Abort does, but leaves what it wrote at its
// target where it is: for a writer that may no longer delete there, whose
// files another writer may have replaced by its own of the same names.
func (w *Writer) Leave() { w.stop() }

// stop ends the data files' writers; it reports false when the writer had
// ended already.
func (w *Writer) stop() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return false
	}
	w.done = true
	for _, f := range w.files {
		if f.closed || f.out == nil {
			continue
		}
		f.closed = true
		f.err = errors.New("snapshotfmt: writer aborted")
		f.out.abort()
		if f.enc != nil {
			f.enc.Close()
		}
	}
	return true
}
