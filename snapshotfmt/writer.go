package snapshotfmt

import (
	"bufio"
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
// own DataFileWriter (several may be written concurrently); Finish writes
// the metadata last and publishes the directory. On any error, call Abort.
type Writer struct {
	staging storage.Staging
	meta    *savepoint.Metadata
	opts    Options

	mu       sync.Mutex
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
// aside: the writer produces those) and returns a writer into staging. meta
// must not change until Finish.
func NewWriter(staging storage.Staging, meta *savepoint.Metadata, opts Options) (*Writer, error) {
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
		staging:  staging,
		meta:     meta,
		opts:     opts,
		files:    map[string]*DataFileWriter{},
		claimed:  map[segmentKey]bool{},
		segments: make([][]savepoint.Segment, len(meta.Operators)),
	}, nil
}

// CreateDataFile creates a data file. The name must be a valid relative
// name, unique within the savepoint.
func (w *Writer) CreateDataFile(ctx context.Context, name string) (*DataFileWriter, error) {
	if err := checkDataFileName(name); err != nil {
		return nil, fmt.Errorf("snapshotfmt: data file: %w", err)
	}
	f := &DataFileWriter{w: w, name: name}
	w.mu.Lock()
	switch {
	case w.done:
		w.mu.Unlock()
		return nil, errors.New("snapshotfmt: writer already finished or aborted")
	case w.files[name] != nil:
		w.mu.Unlock()
		return nil, fmt.Errorf("snapshotfmt: data file %s created twice", name)
	}
	w.files[name] = f
	w.mu.Unlock()

	// A file that fails here is marked closed and failed, so that Finish
	// names it.
	out, err := w.staging.Create(ctx, name)
	if err != nil {
		f.closed, f.err = true, fmt.Errorf("snapshotfmt: %s: %w", name, err)
		return nil, f.err
	}
	f.out = out
	f.buf = bufio.NewWriterSize(out, 64<<10)
	if w.opts.Compression == CodecZstd {
		if f.enc, err = newZstdEncoder(); err != nil {
			f.err = fmt.Errorf("snapshotfmt: %s: %w", name, err)
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
	w       *Writer
	name    string
	out     io.WriteCloser
	buf     *bufio.Writer
	size    int64
	enc     *zstd.Encoder
	scratch []byte
	// rw encodes the open segment; its buffers serve one segment after
	// another.
	rw     *recordWriter
	open   *SegmentWriter
	closed bool
	// err is sticky: after a failed write, or a segment left half-written,
	// the file cannot become part of the savepoint.
	err error
}

func (f *DataFileWriter) write(b []byte) error {
	if f.err != nil {
		return f.err
	}
	n, err := f.buf.Write(b)
	f.size += int64(n)
	if err != nil {
		f.err = fmt.Errorf("snapshotfmt: writing %s: %w", f.name, err)
	}
	return f.err
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
		return fmt.Errorf("snapshotfmt: data file %s is closed", f.name)
	case f.open != nil:
		return fmt.Errorf("snapshotfmt: data file %s: a segment is still open", f.name)
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
	s := &SegmentWriter{f: f, ref: ref, start: f.size, rw: f.rw}
	s.where = fmt.Sprintf("%s key group %d", f.w.meta.Describe(ref), kg)
	f.open = s
	return s, nil
}

// SegmentWriter writes the entries of one segment.
type SegmentWriter struct {
	f      *DataFileWriter
	ref    savepoint.StateRef
	start  int64
	rw     *recordWriter
	where  string
	closed bool
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
	if err := s.rw.add(e); err != nil {
		if s.f.err != nil {
			return s.f.err
		}
		return fmt.Errorf("snapshotfmt: %s: %w", s.where, err)
	}
	return nil
}

// Close writes what is buffered and records the segment in the index. A
// segment without entries writes nothing and is not indexed.
func (s *SegmentWriter) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.f.open = nil
	if err := s.rw.flush(); err != nil {
		return err
	}
	if s.rw.entries == 0 {
		return nil
	}
	s.f.w.addSegment(savepoint.Segment{
		Ref:    s.ref,
		Stats:  s.rw.stats(),
		File:   s.f.name,
		Offset: s.start,
		Length: s.f.size - s.start,
	})
	return nil
}

// CopySegment copies seg of src into this file as opaque bytes, as the
// segment of (ref, kg): each block's CRC and header are verified, its
// records are not parsed, and the index numbers are taken from seg. The
// destination must have the same shape (state kind and TTL, or timer
// service) and the same key groups: a copy cannot move keys.
func (f *DataFileWriter) CopySegment(ctx context.Context, src *Reader, seg savepoint.Segment, ref savepoint.StateRef, kg int) error {
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
	file, ok := src.files[seg.File]
	if !ok || seg.Offset < preambleLen || seg.Length <= 0 || seg.Offset > file.Size()-seg.Length {
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
	var raw uint64
	br := newBlockReader(file, seg.File, &seg)
	for {
		if err := ctx.Err(); err != nil {
			f.err = err
			return err
		}
		err := br.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			f.err = err
			return err
		}
		raw += uint64(br.rawLen)
		if err := f.write(br.cur); err != nil {
			return err
		}
	}
	if raw != seg.Bytes {
		f.err = at(seg.File, seg.KeyGroup, seg.Offset, corruptf("segment holds %d raw bytes, the index says %d", raw, seg.Bytes))
		return f.err
	}
	stats := seg.Stats
	stats.KeyGroup = kg
	f.w.addSegment(savepoint.Segment{Ref: ref, Stats: stats, File: f.name, Offset: start, Length: f.size - start})
	return nil
}

// Close flushes and syncs the file. A segment still open makes the file
// unusable.
func (f *DataFileWriter) Close() error {
	if f.closed {
		return f.err
	}
	f.closed = true
	if f.open != nil && f.err == nil {
		f.err = fmt.Errorf("snapshotfmt: data file %s closed with %s still open", f.name, f.open.where)
	}
	if f.enc != nil {
		f.enc.Close()
	}
	if f.out == nil {
		return f.err
	}
	flushErr := f.buf.Flush()
	closeErr := f.out.Close()
	if f.err == nil && (flushErr != nil || closeErr != nil) {
		f.err = fmt.Errorf("snapshotfmt: writing %s: %w", f.name, errors.Join(flushErr, closeErr))
	}
	return f.err
}

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
	for name, f := range w.files {
		if !f.closed {
			return fmt.Errorf("snapshotfmt: data file %s is not closed", name)
		}
		if f.err != nil {
			return fmt.Errorf("snapshotfmt: data file %s failed: %w", name, f.err)
		}
		idx.files = append(idx.files, dataFile{name: name, size: f.size})
	}
	slices.SortFunc(idx.files, func(a, b dataFile) int { return cmp.Compare(a.name, b.name) })
	for _, segs := range idx.segments {
		slices.SortFunc(segs, func(a, b savepoint.Segment) int { return lessSegment(&a, &b) })
	}
	body := encodeMetadataBody(w.meta, idx)
	file := appendPreamble(nil, typeMetadata)
	file = binary.BigEndian.AppendUint64(file, uint64(len(body)))
	file = append(file, body...)
	file = binary.BigEndian.AppendUint32(file, crc.Checksum(file[preambleLen:]))

	out, err := w.staging.Create(ctx, MetadataName)
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
	if err := w.staging.Publish(ctx); err != nil {
		return err
	}
	w.done = true
	return nil
}

// Abort removes everything written. It is a no-op after Finish succeeded.
// Call it once no goroutine uses the data file writers any more.
func (w *Writer) Abort() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil
	}
	w.done = true
	for _, f := range w.files {
		if f.closed || f.out == nil {
			continue
		}
		f.closed = true
		f.err = errors.New("snapshotfmt: writer aborted")
		f.out.Close()
		if f.enc != nil {
			f.enc.Close()
		}
	}
	return w.staging.Abort()
}
