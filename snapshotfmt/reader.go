package snapshotfmt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/stateproc/stateproc/internal/crc"
	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// Reader reads a savepoint whose metadata has been checked: it is the
// layout's savepoint.Source. Its methods may be called from several
// goroutines at once, except Close.
type Reader struct {
	meta  *savepoint.Metadata
	idx   *index
	files map[string]*dataFileSlot
	// dir and ctx open the data files that OpenLazily leaves closed; a
	// bucket's files keep the context they are opened with for every read.
	dir storage.Dir
	ctx context.Context
}

// dataFileSlot is a data file, opened and checked once, at Open or at its
// first read.
type dataFileSlot struct {
	df   dataFile
	once sync.Once
	f    storage.File
	err  error
}

// Open reads and checks the metadata of the savepoint in dir: the preamble
// first, then the CRC, then every structural rule of FORMAT.md. It opens the
// data files and checks their sizes and preambles, but reads no segment.
// Once it has returned, the Reader reads through the files it opened and
// never through dir, which the caller may close.
func Open(ctx context.Context, dir storage.Dir) (*Reader, error) {
	r, err := OpenLazily(ctx, dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(r.idx.files))
	for i, df := range r.idx.files {
		names[i] = df.name
	}
	r.openFiles(names)
	for _, df := range r.idx.files {
		if _, err := r.file(df.name); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

// OpenLazily reads and checks the metadata as Open does, and opens no data
// file until it is first read, when its size and preamble are checked.
// It is for a caller that may read the index alone (inspect without a
// scan): in a bucket, that costs one object, and a listing of the prefix,
// made meanwhile, which checks that every data file is there at its size.
// A listing the store refuses (a reader allowed to get objects but not
// to list them) checks nothing.
func OpenLazily(ctx context.Context, dir storage.Dir) (*Reader, error) {
	var listed chan []storage.Object
	if storage.InBucket(dir) {
		listed = make(chan []storage.Object, 1)
		go func() {
			objs, err := storage.Files(ctx, dir)
			if err != nil {
				objs = nil
			}
			listed <- objs
		}()
	}
	f, err := dir.Open(ctx, MetadataName)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, at(MetadataName, -1, -1, notSavepointf("no %s in %s", MetadataName, dir.Location()))
		}
		return nil, at(MetadataName, -1, -1, err)
	}
	meta, idx, err := readMetadata(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	r := &Reader{meta: meta, idx: idx, files: make(map[string]*dataFileSlot, len(idx.files)), dir: dir, ctx: ctx}
	for _, df := range idx.files {
		r.files[df.name] = &dataFileSlot{df: df}
	}
	if listed != nil {
		if objs := <-listed; objs != nil {
			if err := idx.checkListed(objs); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// checkListed checks a listing of the savepoint's directory against the
// data files the metadata names: each there, at its size.
func (idx *index) checkListed(objs []storage.Object) error {
	sizes := make(map[string]int64, len(objs))
	for _, o := range objs {
		sizes[o.Name] = o.Size
	}
	for _, df := range idx.files {
		size, ok := sizes[df.name]
		if !ok {
			return missingFile(df)
		}
		if err := checkFileSize(df, size); err != nil {
			return err
		}
	}
	return nil
}

func missingFile(df dataFile) error {
	return at(df.name, -1, -1, corruptf("data file named in the metadata is missing"))
}

// checkFileSize checks that a data file is size bytes, as the metadata
// says.
func checkFileSize(df dataFile, size int64) error {
	if size == df.size {
		return nil
	}
	what := "truncated"
	if size > df.size {
		what = "trailing bytes"
	}
	return at(df.name, -1, min(size, df.size), corruptf("%s: the file is %d bytes, the metadata says %d", what, size, df.size))
}

func readMetadata(f storage.File) (*savepoint.Metadata, *index, error) {
	size := f.Size()
	all, err := readWhole(f, MetadataName, size)
	if err != nil {
		return nil, nil, err
	}
	version, err := checkMetadataPreamble(all[:min(size, preambleLen)])
	if err != nil {
		return nil, nil, err
	}
	if size < metadataHeaderLen+crc32.Size {
		return nil, nil, at(MetadataName, -1, size, corruptf("truncated: the file is %d bytes, a metadata file takes at least %d", size, metadataHeaderLen+crc32.Size))
	}
	bodyLen := binary.BigEndian.Uint64(all[preambleLen:])
	// The length is checked against the file before the body is decoded;
	// the CRC can only be checked once it has been read.
	follows := uint64(size - metadataHeaderLen - crc32.Size)
	if bodyLen > follows {
		return nil, nil, at(MetadataName, -1, preambleLen, corruptf("truncated: body length %d beyond the %d bytes remaining in the file", bodyLen, follows))
	}
	if bodyLen < follows {
		return nil, nil, at(MetadataName, -1, metadataHeaderLen+int64(bodyLen)+crc32.Size, corruptf("%d bytes of trailing garbage after the metadata", follows-bodyLen))
	}
	rest := all[preambleLen:]
	covered := rest[:len(rest)-crc32.Size]
	if want, got := binary.BigEndian.Uint32(rest[len(covered):]), crc.Checksum(covered); want != got {
		return nil, nil, at(MetadataName, -1, size-crc32.Size, corruptf("metadata checksum mismatch: stored %08x, computed %08x", want, got))
	}
	return decodeMetadataBody(covered[8:], version)
}

// wholeReadStep is the most readWhole reads in one request, and the most
// it asks memory for before the bytes are there.
const wholeReadStep = 64 << 20

// readWhole reads the size bytes of a file: in one read where that is at
// most wholeReadStep (in a bucket each read is a request), in reads of
// that much otherwise. The size is what the store says; memory grows with
// the bytes that arrive, so that a store that claims more than it holds
// fails with the offset where the file ended, not out of memory.
func readWhole(f storage.File, name string, size int64) ([]byte, error) {
	all := make([]byte, 0, min(size, wholeReadStep))
	for off := int64(0); off < size; {
		n := min(size-off, wholeReadStep)
		all = slices.Grow(all, int(n))[:off+n]
		if err := readAt(f, name, -1, all[off:], off); err != nil {
			return nil, err
		}
		off += n
	}
	return all, nil
}

// file returns the data file name, opening and checking it at its first
// use.
func (r *Reader) file(name string) (storage.File, error) {
	slot, ok := r.files[name]
	if !ok {
		return nil, fmt.Errorf("snapshotfmt: no data file %q in this savepoint", name)
	}
	slot.once.Do(func() { slot.f, slot.err = r.openDataFile(slot.df) })
	return slot.f, slot.err
}

// openInFlight bounds the data files that openFiles opens at once.
const openInFlight = 16

// openFiles opens the named data files several at a time. In a bucket
// each open is a round trip (a GET of the preamble that also gives the
// object's size and version), which would otherwise be made one file
// after another; on a local disk it costs little either way. What fails
// stays in its file's slot, for the caller that needs the file to report.
func (r *Reader) openFiles(names []string) {
	if len(names) < 2 {
		return
	}
	workers.Run(context.Background(), len(names), openInFlight, func(_ context.Context, _, i int) error {
		r.file(names[i])
		return nil
	})
}

func (r *Reader) openDataFile(df dataFile) (storage.File, error) {
	// The preamble comes with the open: in a bucket, one request.
	pre := make([]byte, preambleLen)
	f, n, err := storage.OpenFirst(r.ctx, r.dir, df.name, pre)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, missingFile(df)
		}
		return nil, at(df.name, -1, int64(n), err)
	}
	if err := checkFileSize(df, f.Size()); err != nil {
		f.Close()
		return nil, err
	}
	if n < len(pre) {
		f.Close()
		return nil, at(df.name, -1, int64(n), corruptf("truncated: the file ends after %d bytes", n))
	}
	if err := checkDataPreamble(df.name, pre, r.idx.version); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readAt reads len(p) bytes at off; a short read means the file shrank or
// lies about its size. kg is the key group the bytes belong to, or -1.
func readAt(f storage.File, name string, kg int, p []byte, off int64) error {
	n, err := f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return at(name, kg, off+int64(n), corruptf("truncated: the file ends after %d bytes", off+int64(n)))
	}
	return at(name, kg, off, err)
}

// Layout says what r reads: a stateproc savepoint and its format version.
func (r *Reader) Layout() savepoint.Layout {
	return savepoint.Layout{Name: "stateproc savepoint", Version: uint32(r.Version())}
}

// Version is the format version of the savepoint.
func (r *Reader) Version() Version { return r.idx.version }

// Metadata returns the savepoint's model. Callers must not modify it.
func (r *Reader) Metadata() *savepoint.Metadata { return r.meta }

// Close closes the data files.
func (r *Reader) Close() error {
	var errs []error
	for _, slot := range r.files {
		if slot.f != nil {
			errs = append(errs, slot.f.Close())
		}
	}
	r.files = nil
	return errors.Join(errs...)
}

// DataFiles returns the names of the data files the metadata lists, sorted,
// including those that hold no segment: a rewrite that keeps the layout
// keeps them too.
func (r *Reader) DataFiles() []string {
	names := make([]string, len(r.idx.files))
	for i, f := range r.idx.files {
		names[i] = f.name
	}
	return names
}

// codecInFlight is the most segments whose first bytes Codec reads, all at
// once from a bucket.
const codecInFlight = 16

// Codec returns the compression the savepoint was written with, for a
// rewrite to write its output alike: zstd when a segment holds a
// compressed block, none otherwise (and for a savepoint without segments).
// The index tells it without a read: an uncompressed block frames its raw
// payload with blockOverhead bytes, so a segment of uncompressed blocks
// alone is as long as its bytes and a positive multiple of blockOverhead,
// and one that is not holds a compressed block. The writer stores a block
// compressed only when that is smaller, so the length of a compressed
// segment gives it away but for a coincidence of about 1 in 13: where
// every one of more than codecInFlight segments looks uncompressed, the
// savepoint is taken as uncompressed (were some block compressed after
// all, its data hardly compresses). Of fewer, each segment's first byte,
// its codec, is read, at once in a bucket, until one is zstd. The codec
// byte is not verified here: it is only a hint.
func (r *Reader) Codec(ctx context.Context) (Codec, error) {
	var segs []savepoint.Segment
	for _, ops := range r.idx.segments {
		for _, seg := range ops {
			extra := seg.Length - int64(seg.Bytes)
			if extra < blockOverhead || extra%blockOverhead != 0 {
				return CodecZstd, nil
			}
			segs = append(segs, seg)
		}
	}
	if len(segs) > codecInFlight {
		return CodecNone, nil
	}
	names := r.DataFiles()
	r.openFiles(names)
	n := 1
	for _, name := range names {
		if f, err := r.file(name); err == nil && storage.ReadSize(f) > 0 {
			n = codecInFlight
			break
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var found atomic.Bool
	err := workers.Run(ctx, len(segs), n, func(_ context.Context, _, i int) error {
		if found.Load() {
			return nil
		}
		seg := segs[i]
		f, err := r.file(seg.File)
		if err != nil {
			return err
		}
		if seg.Offset < preambleLen || seg.Length <= 0 || seg.Offset > f.Size()-seg.Length {
			return fmt.Errorf("snapshotfmt: segment at %s offset %d length %d is not in the savepoint", seg.File, seg.Offset, seg.Length)
		}
		var b [1]byte
		if err := readAt(f, seg.File, seg.KeyGroup, b[:], seg.Offset); err != nil {
			return err
		}
		if Codec(b[0]) == CodecZstd {
			found.Store(true)
			cancel()
		}
		return nil
	})
	switch {
	case found.Load():
		return CodecZstd, nil
	case err != nil:
		return 0, err
	}
	return CodecNone, nil
}

// Segments returns the index's segments of ref in the key groups kgs,
// sorted by key group. It reads nothing.
func (r *Reader) Segments(_ context.Context, ref savepoint.StateRef, kgs keygroup.Range) ([]savepoint.Segment, error) {
	if err := r.meta.Check(ref); err != nil {
		return nil, err
	}
	segs := r.idx.segments[ref.Operator]
	var out []savepoint.Segment
	for i := sort.Search(len(segs), func(i int) bool { return segs[i].KeyGroup >= kgs.Start }); i < len(segs) && segs[i].KeyGroup <= kgs.End; i++ {
		if segs[i].Ref == ref {
			out = append(out, segs[i])
		}
	}
	return out, nil
}

// Entries iterates the segments of ref in kgs one after another. The
// iterator over a single segment is an *Iterator, which batches values
// (savepoint.ValueBatcher).
func (r *Reader) Entries(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) savepoint.EntryIterator {
	segs, err := r.Segments(ctx, ref, kgs)
	switch {
	case err != nil:
		return savepoint.Failed(err)
	case len(segs) == 0:
		return savepoint.Empty()
	case len(segs) == 1:
		return r.iterate(ctx, segs[0])
	}
	// In a bucket the next segments are read while one is iterated, within
	// a rangeShare-th of a walk's memory and requests: an engine's restore
	// iterates every state of its key groups at once, and size loads parts
	// of a state in parallel.
	if w := r.WalkSegments(ctx, segs, rangeShare); w != nil {
		i := 0
		return &walkedRange{EntryIterator: savepoint.Chain(func() savepoint.EntryIterator {
			if i == len(segs) {
				return nil
			}
			i++
			return w.Entries(ctx, i-1)
		}), walk: w}
	}
	return savepoint.Chain(func() savepoint.EntryIterator {
		if len(segs) == 0 {
			return nil
		}
		it := r.iterate(ctx, segs[0])
		segs = segs[1:]
		return it
	})
}

// rangeShare is the share of a walk's budget (see walk.go) that Entries
// reads a range of key groups ahead within, in a bucket.
const rangeShare = 8

// walkedRange iterates a range of segments through a walk, which it closes
// with itself.
type walkedRange struct {
	savepoint.EntryIterator
	walk savepoint.Walk
}

func (it *walkedRange) Close() error {
	err := it.EntryIterator.Close()
	it.walk.Close()
	return err
}

// ctxCheckEvery is how many entries an iterator reads between looks at its
// context.
const ctxCheckEvery = 4096

// Iterator streams the entries of one segment. It holds one block in memory
// at a time.
type Iterator struct {
	ctx   context.Context
	seg   savepoint.Segment
	br    *blockReader
	rr    *recordReader
	entry savepoint.Entry
	err   error
	done  bool
	// untilCtx counts down the entries until the next look at ctx.
	untilCtx int
	// sizes and times are NextItems' scratch space.
	sizes []int
	times []int64
}

// iterate returns an iterator over the entries of seg, which comes from r's
// index.
func (r *Reader) iterate(ctx context.Context, seg savepoint.Segment) *Iterator {
	it := &Iterator{ctx: ctx, seg: seg}
	f, err := r.file(seg.File)
	switch {
	case err != nil:
		it.err = err
	case r.meta.Check(seg.Ref) != nil:
		it.err = fmt.Errorf("snapshotfmt: segment of %s: %w", seg.File, r.meta.Check(seg.Ref))
	case seg.Offset < preambleLen || seg.Length <= 0 || seg.Offset > f.Size()-seg.Length:
		it.err = fmt.Errorf("snapshotfmt: segment at offset %d, length %d, is not within %s", seg.Offset, seg.Length, seg.File)
	}
	if it.err != nil {
		return it
	}
	it.br = newBlockReader(ctx, f, seg.File, &seg)
	op := &r.meta.Operators[seg.Ref.Operator]
	it.rr = newRecordReader(shapeOf(op, seg.Ref, seg.KeyGroup), &it.entry, it.br)
	if seg.Sizes != nil {
		// Reading the segment to its end checks its histograms too.
		var ttlMillis int64
		if c := op.States[seg.Ref.State].TTL; c != nil {
			ttlMillis = c.Millis()
		}
		it.rr.hist = newHistCounts(it.rr.shape, ttlMillis, seg.Anchor)
	}
	it.entry.KeyGroup = seg.KeyGroup
	it.untilCtx = ctxCheckEvery
	return it
}

// Next advances to the next entry. It returns false at the end of the
// segment or on an error, which Err then returns.
func (it *Iterator) Next() bool {
	if it.err != nil || it.done {
		return false
	}
	for {
		if it.rr.next() {
			if it.untilCtx--; it.untilCtx == 0 {
				it.untilCtx = ctxCheckEvery
				if err := it.ctx.Err(); err != nil {
					it.err = err
					return false
				}
			}
			return true
		}
		if !it.nextBlock() {
			it.br.endBlock()
			return false
		}
	}
}

// nextBlock moves on once the records of the current block are read: it
// reports a record error, or checks the segment against its index entry at
// its end, or starts the next block. It returns false when the iteration is
// over.
func (it *Iterator) nextBlock() bool {
	if off, err := it.rr.failure(); err != nil {
		it.err = recordError(it.br, off, err)
		return false
	}
	if err := it.ctx.Err(); err != nil {
		it.err = err
		return false
	}
	it.rr.endBlock()
	if err := it.br.finish(); err != nil {
		it.err = err
		return false
	}
	err := it.br.next()
	if err == io.EOF {
		it.done = true
		if err := it.rr.check(&it.seg.Stats); err != nil {
			it.err = at(it.seg.File, it.seg.KeyGroup, it.seg.Offset, err)
		}
		return false
	}
	if err != nil {
		it.err = err
		return false
	}
	payload, more, err := it.br.payload()
	if err != nil {
		it.err = err
		return false
	}
	it.rr.startBlock(payload, more)
	return true
}

// NextValues is savepoint.ValueBatcher's: it reads up to len(sizes) more
// entries of a keyed state's segment and stores the size of each one's
// value in sizes; when the state has TTL, it stores each value's
// last-modified time in lastModified, which must be as long, and leaves
// those 8 bytes out of the size. It returns how many entries it read, fewer
// than asked only at the end of the segment or on an error, which Err then
// returns. It checks all that Next checks, and is for a caller that needs no
// more of each entry: it fills no Entry.
func (it *Iterator) NextValues(sizes []int, lastModified []int64) int {
	if it.err != nil || it.done {
		return 0
	}
	if it.rr.timers() {
		it.err = fmt.Errorf("snapshotfmt: NextValues on the timers of %s, which have no values", it.seg.File)
		return 0
	}
	ttl := it.rr.ttl
	n := 0
	for n < len(sizes) {
		var times []int64
		if ttl {
			times = lastModified[n:]
		}
		if k := it.rr.values(sizes[n:], times); k > 0 {
			n += k
			continue
		}
		_, v, ok := it.rr.item()
		if !ok {
			if !it.nextBlock() {
				it.br.endBlock()
				break
			}
			continue
		}
		if ttl {
			lastModified[n] = int64(binary.BigEndian.Uint64(v))
			v = v[8:]
		}
		sizes[n] = len(v)
		n++
	}
	if err := it.ctx.Err(); err != nil && it.err == nil {
		it.err = err
	}
	return n
}

// CountTimes has the iterator count, of the last-modified times of a TTL
// state's values, those at or before each of cuts, which TimeCounts then
// gives once the segment is read to its end. The count rides on the
// last-modified histogram that reading checks against the index, at no
// more than a compare per value. It must come before the first entry is
// read, and reports false, counting nothing, where it cannot: a state
// without TTL, a segment whose index entry holds no histograms, or two
// different cuts within one bucket of the histogram.
func (it *Iterator) CountTimes(cuts []int64) bool {
	rr := it.rr
	if it.err != nil || it.done || rr.started || rr.timers() || !rr.ttl || rr.hist == nil {
		return false
	}
	return rr.hist.countCuts(cuts)
}

// TimeCounts stores in counts[i] how many values of the segment were last
// modified at or before the ith cut of CountTimes. It is for a segment that
// CountTimes accepted and that was read to its end without an error.
func (it *Iterator) TimeCounts(counts []uint64) {
	it.rr.hist.atOrBefore(counts)
}

// CountSizes has the iterator count the sizes of the values it reads, for
// a caller that would otherwise count the sizes NextValues stores (which
// it still stores): each size below len(small) in small, and larger ones by
// a call of large per run of values of one size. The sizes are counted with
// those of the size histogram that reading checks against the index. It
// must come before the first entry is read, and reports false, counting
// nothing, for a segment whose index entry holds no histograms or the
// timers. Where reading fails, it may have counted some values.
func (it *Iterator) CountSizes(small []uint64, large func(size int, n uint64)) bool {
	rr := it.rr
	if it.err != nil || it.done || rr.started || rr.timers() || rr.hist == nil {
		return false
	}
	rr.hist.countSizes(small, large)
	return true
}

// recordError locates an error in the records of the current block: at its
// file offset when the block is stored uncompressed, else at the block.
func recordError(br *blockReader, off int, err error) error {
	blockAt := br.blockAt()
	if br.codec == CodecNone {
		return at(br.name, br.kg, blockAt+blockHeaderLen+int64(off), err)
	}
	return at(br.name, br.kg, blockAt, corruptf("byte %d of the decompressed payload: %v", off, err))
}

// Entry returns the current entry. It and its slices are valid until the
// next call of Next, and read-only: the iterator sets each field only when
// it changes (the key once per record), so a change by the caller would
// carry over to the entries that follow.
func (it *Iterator) Entry() *savepoint.Entry { return &it.entry }

// Err returns the error that ended the iteration, if any.
func (it *Iterator) Err() error { return it.err }

// Close releases the iterator's buffers, so the last entry is no longer
// valid either. It does not close any file: those belong to the Reader.
func (it *Iterator) Close() error {
	it.done = true
	if it.br != nil {
		it.br.release()
	}
	if it.rr != nil {
		it.rr.hist.release()
	}
	it.br, it.rr = nil, nil
	return nil
}
