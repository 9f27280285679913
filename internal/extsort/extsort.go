package extsort

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// Spill is the spilled records of one bucket: in a file of their own
// (Path, Chunks nil), in spans of a file that a Spiller shares between its
// buckets (Path and Chunks), or, for a caller whose records fit in memory,
// held in Data instead of a file. Path is empty when nothing was spilled.
// Size counts the records' bytes.
type Spill struct {
	Path   string
	Size   int64
	Data   []byte
	Chunks []Chunk
}

// Chunk is a span of a spill file: Len bytes at Off.
type Chunk struct{ Off, Len int64 }

// Spiller writes records into buckets, all in one file, under a name of
// its own in a directory. Each bucket collects its records in a write
// buffer that is appended to the file, as a chunk of the bucket, when it
// fills: one file instead of one per bucket, since creating and removing
// files costs the file system more than appending to one, above all where
// many were removed a moment before. A Spiller is used by one goroutine.
type Spiller struct {
	path    string
	bufSize int
	f       *os.File
	end     int64
	buckets []*spillBucket
}

// spillBucket is one bucket of a Spiller: its write buffer, and the chunks
// that were appended from it.
type spillBucket struct {
	s *Spiller
	w *bufio.Writer
	Spill
}

// NewSpiller spills into buckets, in a file in dir named after name, with
// a write buffer of bufSize bytes for each bucket it writes into.
func NewSpiller(dir, name string, buckets, bufSize int) *Spiller {
	return &Spiller{path: filepath.Join(dir, name+".spill"), bufSize: bufSize, buckets: make([]*spillBucket, buckets)}
}

// Add appends a record without a subkey to bucket.
func (s *Spiller) Add(bucket int, class uint32, key, value []byte) error {
	return s.AddSub(bucket, class, key, nil, value)
}

// AddSub appends a record to bucket.
func (s *Spiller) AddSub(bucket int, class uint32, key, sub, value []byte) error {
	b := s.buckets[bucket]
	if b == nil {
		b = &spillBucket{s: s, Spill: Spill{Path: s.path}}
		b.w = bufio.NewWriterSize(b, s.bufSize)
		s.buckets[bucket] = b
	}
	// Encoded straight into the write buffer where it fits there.
	n, err := b.w.Write(AppendRecord(b.w.AvailableBuffer(), class, key, sub, value))
	b.Size += int64(n)
	if err != nil {
		return fmt.Errorf("extsort: spilling: %w", err)
	}
	return nil
}

// Write appends p to the spill file as the bucket's next chunk, joined to
// its last one when that ends where p starts.
func (b *spillBucket) Write(p []byte) (int, error) {
	s := b.s
	if s.f == nil {
		f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return 0, err
		}
		s.f = f
	}
	n, err := s.f.Write(p)
	if n > 0 {
		if k := len(b.Chunks) - 1; k >= 0 && b.Chunks[k].Off+b.Chunks[k].Len == s.end {
			b.Chunks[k].Len += int64(n)
		} else {
			b.Chunks = append(b.Chunks, Chunk{Off: s.end, Len: int64(n)})
		}
		s.end += int64(n)
	}
	return n, err
}

// Close flushes every bucket, closes the file and returns the spills by
// bucket.
func (s *Spiller) Close() ([]Spill, error) {
	out := make([]Spill, len(s.buckets))
	var errs []error
	for i, b := range s.buckets {
		if b == nil {
			continue
		}
		errs = append(errs, b.w.Flush())
		out[i] = b.Spill
	}
	if s.f != nil {
		errs = append(errs, s.f.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("extsort: spilling: %w", err)
	}
	return out, nil
}

// Release gives back the disk space of spills that have been read: a file
// of their own is removed. The chunks of a file a Spiller shares between
// buckets stay until the file goes with its directory, which its owner
// removes once every bucket is read: punching each chunk out of the file
// cost the file system about what removing a file per bucket did.
func Release(spills []Spill) {
	for _, sp := range spills {
		if sp.Path != "" && sp.Chunks == nil {
			os.Remove(sp.Path)
		}
	}
}

// Record is one record as the sorter emits it. Its slices are valid only
// during the call that gets it.
type Record struct {
	Class           uint32
	Key, Sub, Value []byte
}

// AppendRecord appends a record as spill and run files hold it, for a
// caller that builds spill files itself (a file of such records, one after
// another, is a Spill): uvarint class, then key, subkey and value, each
// after its uvarint length.
func AppendRecord(b []byte, class uint32, key, sub, value []byte) []byte {
	b = binary.AppendUvarint(b, uint64(class))
	b = appendBytes(b, key)
	b = appendBytes(b, sub)
	return appendBytes(b, value)
}

func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// errShort means a record continues beyond the bytes at hand.
var errShort = errors.New("extsort: record continues beyond the buffer")

// maxLen bounds a key or value: a chunk indexes its records with 32-bit
// offsets.
const maxLen = 1 << 31

// parseRecord decodes the record at b[off:] into r, with the offsets of
// its parts, and returns where it ends.
func parseRecord(b []byte, off int, r *rec) (end int, err error) {
	c, n := binary.Uvarint(b[off:])
	if n <= 0 {
		return 0, short(n)
	}
	if c > 0xFFFFFFFF {
		return 0, errors.New("extsort: class out of range")
	}
	r.class = uint32(c)
	off += n
	if r.koff, r.klen, off, err = parseBytes(b, off); err != nil {
		return 0, err
	}
	if r.soff, r.slen, off, err = parseBytes(b, off); err != nil {
		return 0, err
	}
	if r.voff, r.vlen, off, err = parseBytes(b, off); err != nil {
		return 0, err
	}
	return off, nil
}

// parseBytes decodes a length and the bytes after it at b[off:].
func parseBytes(b []byte, off int) (at, n uint32, end int, err error) {
	var l uint64
	var w int
	// Most lengths take one byte.
	if off < len(b) && b[off] < 0x80 {
		l, w = uint64(b[off]), 1
	} else if l, w = binary.Uvarint(b[off:]); w <= 0 {
		return 0, 0, 0, short(w)
	}
	off += w
	if l >= maxLen {
		return 0, 0, 0, errors.New("extsort: length out of range")
	}
	if uint64(len(b)-off) < l {
		return 0, 0, 0, errShort
	}
	return uint32(off), uint32(l), off + int(l), nil
}

func short(n int) error {
	if n == 0 {
		return errShort
	}
	return errors.New("extsort: bad varint")
}

// rec indexes one record of a chunk: its sort key and where it lies.
// prefix is the key's first 8 bytes, big-endian, zero-padded: most
// comparisons end there.
type rec struct {
	prefix     uint64 // 8 bytes; recSize in all
	class      uint32
	koff, klen uint32
	soff, slen uint32
	voff, vlen uint32
}

const recSize = 40

// minChunk is the smallest chunk buffer, so that filling one always makes
// progress.
const minChunk = 64 << 10

// Sorter sorts buckets within a memory budget; one goroutine uses one and
// it reuses its buffers from bucket to bucket.
type Sorter struct {
	budget int
	dir    string
	name   string
	runNo  int
	fanIn  int
	buf    []byte
	recs   []rec
	// Scratch space of sortChunk.
	tmp    []rec
	counts []int
	starts []int
	r      Record
	// runs are the run files of the bucket loaded, when it did not fit one
	// chunk; otherwise s.recs index the loaded chunk in s.buf.
	runs []string
}

// NewSorter returns a sorter that holds about budget bytes and writes its
// runs into dir under the name prefix name.
func NewSorter(budget int, dir, name string) *Sorter {
	return &Sorter{budget: max(budget, 2*minChunk), dir: dir, name: name, fanIn: 64}
}

// Sort reads the records of spills, one bucket's files in order, and
// passes them to emit sorted, without their subkeys. The slices emit gets
// are valid only during the call.
func (s *Sorter) Sort(ctx context.Context, spills []Spill, emit func(class uint32, key, value []byte) error) error {
	return s.SortRecords(ctx, spills, func(r *Record) error { return emit(r.Class, r.Key, r.Value) })
}

// SortRecords reads the records of spills, one bucket's files in order, and
// passes them to emit sorted by class, key and subkey; emit must not keep r.
func (s *Sorter) SortRecords(ctx context.Context, spills []Spill, emit func(r *Record) error) error {
	if err := s.Load(ctx, spills); err != nil {
		return err
	}
	return s.Emit(ctx, emit)
}

// Load reads the records of spills, one bucket's files in order, and sorts
// them: in memory when they fit one chunk, as sorted runs otherwise. Emit
// then passes them on, so that a caller with two sorters can load the next
// bucket while it writes the one before. Once Load returns, spills are
// read and no longer needed. A failed Load leaves nothing to emit.
func (s *Sorter) Load(ctx context.Context, spills []Spill) error {
	s.dropRuns()
	s.recs = s.recs[:0]
	in := &concatReader{}
	var size int64
	for _, sp := range spills {
		switch {
		case sp.Data != nil:
			in.spills = append(in.spills, sp)
			size += int64(len(sp.Data))
		case sp.Path != "":
			in.spills = append(in.spills, sp)
			size += sp.Size
		}
	}
	defer in.close()
	err := s.load(ctx, in, size)
	if err != nil {
		s.recs = s.recs[:0]
		s.dropRuns()
	}
	return err
}

func (s *Sorter) load(ctx context.Context, in *concatReader, size int64) error {
	// Half the budget for data, the other half for the index and sorting.
	dataCap := s.budget / 2
	if want := max(minChunk, int(min(int64(dataCap), size+1))); cap(s.buf) < want {
		s.buf = make([]byte, 0, chunkCap(want, dataCap))
	}
	// The index takes a scratch copy of itself when sorted.
	maxRecs := max(1, s.budget/2/(2*recSize))
	s.buf = s.buf[:0]
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		eof, err := in.fill(&s.buf)
		if err != nil {
			return err
		}
		used, err := s.index(maxRecs)
		if err != nil {
			return err
		}
		if len(s.recs) == 0 {
			if eof {
				if len(s.buf) > 0 {
					return errors.New("extsort: truncated record at the end of a spill file")
				}
				return nil
			}
			// One record does not fit: grow the chunk to hold it.
			s.buf = slices.Grow(s.buf, cap(s.buf))
			continue
		}
		s.sortChunk()
		last := eof && used == len(s.buf)
		if last && len(s.runs) == 0 {
			// The chunk stays for Emit.
			return nil
		}
		run, err := s.writeRun()
		if err != nil {
			return err
		}
		s.runs = append(s.runs, run)
		s.recs = s.recs[:0]
		if last {
			return nil
		}
		s.buf = s.buf[:copy(s.buf, s.buf[used:])]
	}
}

// chunkCap is the capacity of a new chunk buffer that must hold want
// bytes, within dataCap: an eighth more, so that the next buckets, which a
// caller sizes alike but which come out a little larger or smaller, reuse
// it rather than each allocate and fault in a buffer a few bytes larger.
func chunkCap(want, dataCap int) int {
	return min(dataCap, want+want/8)
}

// Emit passes the records Load sorted to emit, in order; emit must not keep
// r. The sorter is then ready for the next Load.
func (s *Sorter) Emit(ctx context.Context, emit func(r *Record) error) error {
	if len(s.runs) == 0 {
		err := s.emitChunk(emit)
		s.recs = s.recs[:0]
		return err
	}
	runs := s.runs
	s.runs = nil
	defer func() {
		for _, r := range runs {
			os.Remove(r)
		}
	}()
	return s.merge(ctx, runs, emit)
}

// dropRuns removes the run files of a Load that was not emitted.
func (s *Sorter) dropRuns() {
	for _, r := range s.runs {
		os.Remove(r)
	}
	s.runs = nil
}

// index indexes the complete records at the start of the buffer, at most
// maxRecs, and returns how many bytes they take.
func (s *Sorter) index(maxRecs int) (int, error) {
	s.recs = s.recs[:0]
	off := 0
	var r rec
	for off < len(s.buf) && len(s.recs) < maxRecs {
		end, err := parseRecord(s.buf, off, &r)
		if errors.Is(err, errShort) {
			break
		}
		if err != nil {
			return 0, err
		}
		r.prefix = prefixOf(s.buf[r.koff : r.koff+r.klen])
		if len(s.recs) == cap(s.recs) && off > 0 {
			// Grow once to what the whole chunk holds at the density seen
			// so far, rather than by doubling: each doubling copies the
			// index and touches fresh memory.
			want := maxRecs
			if f := float64(len(s.recs))*float64(len(s.buf))/float64(off)*1.25 + 16; f < float64(maxRecs) {
				want = int(f)
			}
			s.recs = slices.Grow(s.recs, want-len(s.recs))
		}
		s.recs = append(s.recs, r)
		off = end
	}
	return off, nil
}

func prefixOf(key []byte) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(key)
	}
	var b [8]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:])
}

// denseClasses bounds the classes a counting sort takes, relative to the
// records of a chunk: beyond it, clearing the counts would cost more than
// comparing.
const denseClasses = 1024

// sortChunk orders the records of the chunk; records with equal class, key
// and subkey keep their order, which is that of their offsets. When the
// chunk's classes span a small range, as a caller that numbers its key
// groups and states densely gives, a counting sort by class comes first,
// which is linear, and the records of each class are then sorted by
// merging the ascending runs they arrive in: a caller whose records come
// from sorted inputs pays n log(runs) comparisons rather than n log n.
func (s *Sorter) sortChunk() {
	if len(s.recs) < 2 {
		return
	}
	lo, hi := s.recs[0].class, s.recs[0].class
	for i := range s.recs {
		lo, hi = min(lo, s.recs[i].class), max(hi, s.recs[i].class)
	}
	n := int(hi-lo) + 1
	if n > len(s.recs)+denseClasses {
		buf := s.buf
		slices.SortFunc(s.recs, func(a, b rec) int {
			if c := cmp.Compare(a.class, b.class); c != 0 {
				return c
			}
			if c := compareKeys(buf, &a, &b); c != 0 {
				return c
			}
			return cmp.Compare(a.koff, b.koff)
		})
		return
	}
	s.counts = grown(s.counts, n+1)
	clear(s.counts)
	for i := range s.recs {
		s.counts[s.recs[i].class-lo+1]++
	}
	for c := 1; c <= n; c++ {
		s.counts[c] += s.counts[c-1]
	}
	s.tmp = grown(s.tmp, len(s.recs))
	// counts[c] is where the next record of class c goes; once all are
	// placed, it is where class c+1 starts.
	for i := range s.recs {
		c := s.recs[i].class - lo
		s.tmp[s.counts[c]] = s.recs[i]
		s.counts[c]++
	}
	start := 0
	for c := range n {
		end := s.counts[c]
		if end-start > 1 {
			if sorted := s.mergeRuns(s.tmp[start:end], s.recs[start:end]); &sorted[0] != &s.tmp[start] {
				copy(s.tmp[start:end], sorted)
			}
		}
		start = end
	}
	s.recs, s.tmp = s.tmp, s.recs
}

// compareKeys orders two records of one chunk by key, then subkey.
func compareKeys(buf []byte, a, b *rec) int {
	if a.prefix != b.prefix {
		return cmp.Compare(a.prefix, b.prefix)
	}
	if c := bytes.Compare(buf[a.koff:a.koff+a.klen], buf[b.koff:b.koff+b.klen]); c != 0 {
		return c
	}
	return bytes.Compare(buf[a.soff:a.soff+a.slen], buf[b.soff:b.soff+b.slen])
}

// mergeRuns sorts a, records of one class, by merging its ascending runs
// pairwise, pass after pass, between a and scratch (of the same length); it
// returns whichever holds the result. Merging takes the left record on
// ties, so it is stable.
func (s *Sorter) mergeRuns(a, scratch []rec) []rec {
	buf := s.buf
	starts := append(s.starts[:0], 0)
	for i := 1; i < len(a); i++ {
		if compareKeys(buf, &a[i-1], &a[i]) > 0 {
			starts = append(starts, i)
		}
	}
	for len(starts) > 1 {
		merged := starts[:0]
		for r := 0; r < len(starts); r += 2 {
			lo := starts[r]
			merged = append(merged, lo)
			if r+1 == len(starts) {
				copy(scratch[lo:], a[lo:])
				break
			}
			mid, hi := starts[r+1], len(a)
			if r+2 < len(starts) {
				hi = starts[r+2]
			}
			mergeTwo(buf, a[lo:mid], a[mid:hi], scratch[lo:hi])
		}
		starts = merged
		a, scratch = scratch, a
	}
	s.starts = starts
	return a
}

// mergeTwo merges the sorted x and y into out.
func mergeTwo(buf []byte, x, y, out []rec) {
	i, j, k := 0, 0, 0
	for i < len(x) && j < len(y) {
		if compareKeys(buf, &y[j], &x[i]) < 0 {
			out[k] = y[j]
			j++
		} else {
			out[k] = x[i]
			i++
		}
		k++
	}
	k += copy(out[k:], x[i:])
	copy(out[k:], y[j:])
}

// grown returns s with length n, reusing its array when it is large enough.
func grown[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

func (s *Sorter) emitChunk(emit func(*Record) error) error {
	buf := s.buf
	for i := range s.recs {
		r := &s.recs[i]
		s.r = Record{Class: r.class, Key: buf[r.koff : r.koff+r.klen : r.koff+r.klen],
			Sub: buf[r.soff : r.soff+r.slen : r.soff+r.slen], Value: buf[r.voff : r.voff+r.vlen : r.voff+r.vlen]}
		if err := emit(&s.r); err != nil {
			return err
		}
	}
	return nil
}

// Runs is the number of sorted runs the sorter has written so far, merge
// passes included: 0 while every bucket fitted its budget.
func (s *Sorter) Runs() int { return s.runNo }

func (s *Sorter) runPath() string {
	s.runNo++
	return filepath.Join(s.dir, fmt.Sprintf("%s-run%05d", s.name, s.runNo))
}

// writeRun writes the sorted chunk to a new run file.
func (s *Sorter) writeRun() (string, error) {
	rw, err := newRunWriter(s.runPath())
	if err != nil {
		return "", err
	}
	err = s.emitChunk(rw.add)
	if cerr := rw.close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(rw.path)
		return "", err
	}
	return rw.path, nil
}

type runWriter struct {
	path string
	f    *os.File
	w    *bufio.Writer
}

func newRunWriter(path string) (*runWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("extsort: %w", err)
	}
	return &runWriter{path: path, f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

func (rw *runWriter) add(r *Record) error {
	_, err := rw.w.Write(AppendRecord(rw.w.AvailableBuffer(), r.Class, r.Key, r.Sub, r.Value))
	return err
}

func (rw *runWriter) close() error {
	if err := errors.Join(rw.w.Flush(), rw.f.Close()); err != nil {
		return fmt.Errorf("extsort: writing a sorted run: %w", err)
	}
	return nil
}

// merge combines sorted runs into emit; with more runs than the fan-in,
// consecutive runs are first merged into longer ones, which keeps the
// order of equal records.
func (s *Sorter) merge(ctx context.Context, runs []string, emit func(*Record) error) error {
	for len(runs) > s.fanIn {
		var next []string
		for i := 0; i < len(runs); i += s.fanIn {
			part := runs[i:min(i+s.fanIn, len(runs))]
			if len(part) == 1 {
				next = append(next, part[0])
				continue
			}
			rw, err := newRunWriter(s.runPath())
			if err != nil {
				return err
			}
			err = s.mergeInto(ctx, part, rw.add)
			if cerr := rw.close(); err == nil {
				err = cerr
			}
			for _, p := range part {
				os.Remove(p)
			}
			if err != nil {
				os.Remove(rw.path)
				return err
			}
			next = append(next, rw.path)
		}
		runs = next
	}
	err := s.mergeInto(ctx, runs, emit)
	for _, p := range runs {
		os.Remove(p)
	}
	return err
}

func (s *Sorter) mergeInto(ctx context.Context, runs []string, emit func(*Record) error) error {
	bufSize := max(4<<10, s.budget/(2*len(runs)))
	var h cursorHeap
	defer func() {
		for _, c := range h {
			c.f.Close()
		}
	}()
	for i, path := range runs {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("extsort: %w", err)
		}
		c := &cursor{f: f, r: bufio.NewReaderSize(f, bufSize), run: i}
		ok, err := c.next()
		if err != nil || !ok {
			f.Close()
			if err != nil {
				return err
			}
			continue
		}
		h.push(c)
	}
	for n := 0; len(h) > 0; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		c := h[0]
		if err := emit(&c.Record); err != nil {
			return err
		}
		ok, err := c.next()
		if err != nil {
			return err
		}
		if ok {
			h.fix0()
		} else {
			c.f.Close()
			h.pop0()
		}
	}
	return nil
}

// cursor reads the records of one run.
type cursor struct {
	f   *os.File
	r   *bufio.Reader
	run int
	Record
}

func (c *cursor) next() (bool, error) {
	class, err := binary.ReadUvarint(c.r)
	if err == io.EOF {
		return false, nil
	}
	if err != nil || class > 0xFFFFFFFF {
		return false, runErr(err)
	}
	c.Class = uint32(class)
	if c.Key, err = c.bytes(c.Key); err != nil {
		return false, err
	}
	if c.Sub, err = c.bytes(c.Sub); err != nil {
		return false, err
	}
	c.Value, err = c.bytes(c.Value)
	return err == nil, err
}

func (c *cursor) bytes(into []byte) ([]byte, error) {
	n, err := binary.ReadUvarint(c.r)
	if err != nil || n >= maxLen {
		return nil, runErr(err)
	}
	into = slices.Grow(into[:0], int(n))[:n]
	if _, err := io.ReadFull(c.r, into); err != nil {
		return nil, runErr(err)
	}
	return into, nil
}

func runErr(err error) error {
	if err == nil || err == io.EOF || err == io.ErrUnexpectedEOF {
		return errors.New("extsort: run file: truncated or bad record")
	}
	return fmt.Errorf("extsort: run file: %w", err)
}

func (c *cursor) less(o *cursor) bool {
	if r := cmp.Or(cmp.Compare(c.Class, o.Class), bytes.Compare(c.Key, o.Key), bytes.Compare(c.Sub, o.Sub)); r != 0 {
		return r < 0
	}
	return c.run < o.run
}

// cursorHeap is a binary min-heap of cursors by their current record.
type cursorHeap []*cursor

func (h *cursorHeap) push(c *cursor) {
	*h = append(*h, c)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h cursorHeap) fix0() {
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].less(h[m]) {
			m = l
		}
		if r < len(h) && h[r].less(h[m]) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h *cursorHeap) pop0() {
	s := *h
	s[0] = s[len(s)-1]
	*h = s[:len(s)-1]
	h.fix0()
}

// concatReader reads a bucket's spills one after another: the chunks of a
// shared file in order, a file of its own to its end.
type concatReader struct {
	spills []Spill
	f      *os.File
	// chunks are what is left to read of f, when it is shared.
	chunks []Chunk
}

// fill reads into the free capacity of *buf; eof reports that every spill
// has been read to its end.
func (c *concatReader) fill(buf *[]byte) (eof bool, err error) {
	b := *buf
	defer func() { *buf = b }()
	for len(b) < cap(b) {
		if c.f == nil {
			if len(c.spills) == 0 {
				return true, nil
			}
			if sp := &c.spills[0]; sp.Data != nil {
				n := copy(b[len(b):cap(b)], sp.Data)
				b, sp.Data = b[:len(b)+n], sp.Data[n:]
				if len(sp.Data) == 0 {
					c.spills = c.spills[1:]
				}
				continue
			}
			if c.f, err = os.Open(c.spills[0].Path); err != nil {
				return false, fmt.Errorf("extsort: %w", err)
			}
			// A copy, consumed here: the caller's spill stays whole.
			c.chunks = slices.Clone(c.spills[0].Chunks)
			c.spills = c.spills[1:]
		}
		if c.chunks != nil {
			if len(c.chunks) == 0 {
				c.f.Close()
				c.f, c.chunks = nil, nil
				continue
			}
			ch := &c.chunks[0]
			p := b[len(b):cap(b)]
			if int64(len(p)) > ch.Len {
				p = p[:ch.Len]
			}
			n, err := c.f.ReadAt(p, ch.Off)
			if n < len(p) {
				if err == nil || err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return false, fmt.Errorf("extsort: %s: %w", c.f.Name(), err)
			}
			b = b[:len(b)+n]
			ch.Off, ch.Len = ch.Off+int64(n), ch.Len-int64(n)
			if ch.Len == 0 {
				c.chunks = c.chunks[1:]
			}
			continue
		}
		n, err := c.f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			c.f.Close()
			c.f = nil
			continue
		}
		if err != nil {
			return false, fmt.Errorf("extsort: %w", err)
		}
	}
	return false, nil
}

func (c *concatReader) close() {
	if c.f != nil {
		c.f.Close()
	}
}
