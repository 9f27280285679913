// Package extsort sorts more records than fit in memory, for rewrites
// that move entries between key groups (the rescale of Flink savepoints in
// flinkfmt/flinkrewrite). It sits below the rewrites and knows no savepoint
// layout: a record is a class (a rewrite puts the key group and state in
// it), a key and a value, ordered by class, then key bytes.
//
// It works in two phases. A Spiller appends records, unsorted, to one file
// per bucket (a range of classes the caller chooses, sized to fit a sort
// chunk); each goroutine has its own. A Sorter then reads a bucket's files
// in chunks that fit its memory budget, sorts each chunk, and either emits
// it (a bucket that fits in one chunk) or writes it as a sorted run; runs
// are combined by a k-way merge, in several passes when there are more
// than its fan-in. Records with equal class and key keep the order of the
// files given and, within a file, of their addition.
//
// Memory is bounded by the budget, plus the largest single record, which
// grows a chunk that could not hold it.
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

// Spill is one spill file: its path, empty when nothing was spilled into
// its bucket, and its size.
type Spill struct {
	Path string
	Size int64
}

// Spiller writes records into one spill file per bucket, under a name
// prefix of its own in a directory.
type Spiller struct {
	dir, name string
	bufSize   int
	files     []*spillFile
	scratch   []byte
}

type spillFile struct {
	Spill
	f *os.File
	w *bufio.Writer
}

// NewSpiller spills into buckets files in dir, named after name, with a
// write buffer of bufSize bytes for each file it opens.
func NewSpiller(dir, name string, buckets, bufSize int) *Spiller {
	return &Spiller{dir: dir, name: name, bufSize: bufSize, files: make([]*spillFile, buckets)}
}

// Add appends a record to bucket's file.
func (s *Spiller) Add(bucket int, class uint32, key, value []byte) error {
	f := s.files[bucket]
	if f == nil {
		path := filepath.Join(s.dir, fmt.Sprintf("%s-b%05d.spill", s.name, bucket))
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("extsort: %w", err)
		}
		f = &spillFile{Spill: Spill{Path: path}, f: fh, w: bufio.NewWriterSize(fh, s.bufSize)}
		s.files[bucket] = f
	}
	s.scratch = appendRecord(s.scratch[:0], class, key, value)
	n, err := f.w.Write(s.scratch)
	f.Size += int64(n)
	if err != nil {
		return fmt.Errorf("extsort: spilling: %w", err)
	}
	return nil
}

// Close flushes and closes every file and returns them by bucket.
func (s *Spiller) Close() ([]Spill, error) {
	out := make([]Spill, len(s.files))
	var errs []error
	for b, f := range s.files {
		if f == nil {
			continue
		}
		out[b] = f.Spill
		errs = append(errs, f.w.Flush(), f.f.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("extsort: spilling: %w", err)
	}
	return out, nil
}

// A record in a spill or run file: uvarint class, then key and value,
// each after its uvarint length.
func appendRecord(b []byte, class uint32, key, value []byte) []byte {
	b = binary.AppendUvarint(b, uint64(class))
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = binary.AppendUvarint(b, uint64(len(value)))
	return append(b, value...)
}

// errShort means a record continues beyond the bytes at hand.
var errShort = errors.New("extsort: record continues beyond the buffer")

// maxLen bounds a key or value: a chunk indexes its records with 32-bit
// offsets.
const maxLen = 1 << 31

// parseRecord decodes the record at b[off:]; it returns the offsets of its
// key and value and where it ends.
func parseRecord(b []byte, off int) (class uint32, koff, klen, voff, vlen, end int, err error) {
	c, n := binary.Uvarint(b[off:])
	if n <= 0 {
		return 0, 0, 0, 0, 0, 0, short(n)
	}
	if c > 0xFFFFFFFF {
		return 0, 0, 0, 0, 0, 0, errors.New("extsort: class out of range")
	}
	off += n
	kl, n := binary.Uvarint(b[off:])
	if n <= 0 {
		return 0, 0, 0, 0, 0, 0, short(n)
	}
	off += n
	if kl >= maxLen {
		return 0, 0, 0, 0, 0, 0, errors.New("extsort: key length out of range")
	}
	if uint64(len(b)-off) < kl {
		return 0, 0, 0, 0, 0, 0, errShort
	}
	koff, klen = off, int(kl)
	off += klen
	vl, n := binary.Uvarint(b[off:])
	if n <= 0 {
		return 0, 0, 0, 0, 0, 0, short(n)
	}
	off += n
	if vl >= maxLen {
		return 0, 0, 0, 0, 0, 0, errors.New("extsort: value length out of range")
	}
	if uint64(len(b)-off) < vl {
		return 0, 0, 0, 0, 0, 0, errShort
	}
	return uint32(c), koff, klen, off, int(vl), off + int(vl), nil
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
	voff, vlen uint32
}

const recSize = 32

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
}

// NewSorter returns a sorter that holds about budget bytes and writes its
// runs into dir under the name prefix name.
func NewSorter(budget int, dir, name string) *Sorter {
	return &Sorter{budget: max(budget, 2*minChunk), dir: dir, name: name, fanIn: 64}
}

// Sort reads the records of spills, one bucket's files in order, and
// passes them to emit sorted. The slices emit gets are valid only during
// the call.
func (s *Sorter) Sort(ctx context.Context, spills []Spill, emit func(class uint32, key, value []byte) error) error {
	in := &concatReader{}
	var size int64
	for _, sp := range spills {
		if sp.Path != "" {
			in.paths = append(in.paths, sp.Path)
			size += sp.Size
		}
	}
	defer in.close()
	var runs []string
	defer func() {
		for _, r := range runs {
			os.Remove(r)
		}
	}()
	// Half the budget for data, the other half for the index and sorting.
	dataCap := s.budget / 2
	if want := max(minChunk, int(min(int64(dataCap), size+1))); cap(s.buf) < want {
		s.buf = make([]byte, 0, want)
	}
	maxRecs := max(1, s.budget/2/recSize)
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
				break
			}
			// One record does not fit: grow the chunk to hold it.
			s.buf = slices.Grow(s.buf, cap(s.buf))
			continue
		}
		s.sortChunk()
		last := eof && used == len(s.buf)
		if last && len(runs) == 0 {
			return s.emitChunk(emit)
		}
		run, err := s.writeRun()
		if err != nil {
			return err
		}
		runs = append(runs, run)
		if last {
			break
		}
		s.buf = s.buf[:copy(s.buf, s.buf[used:])]
	}
	if len(runs) == 0 {
		return nil
	}
	return s.merge(ctx, runs, emit)
}

// index indexes the complete records at the start of the buffer, at most
// maxRecs, and returns how many bytes they take.
func (s *Sorter) index(maxRecs int) (int, error) {
	s.recs = s.recs[:0]
	off := 0
	for off < len(s.buf) && len(s.recs) < maxRecs {
		class, koff, klen, voff, vlen, end, err := parseRecord(s.buf, off)
		if errors.Is(err, errShort) {
			break
		}
		if err != nil {
			return 0, err
		}
		s.recs = append(s.recs, rec{prefix: prefixOf(s.buf[koff : koff+klen]), class: class,
			koff: uint32(koff), klen: uint32(klen), voff: uint32(voff), vlen: uint32(vlen)})
		off = end
	}
	return off, nil
}

func prefixOf(key []byte) uint64 {
	var b [8]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:])
}

// sortChunk orders the records of the chunk; records with equal class and
// key keep their order, which is that of their offsets.
func (s *Sorter) sortChunk() {
	buf := s.buf
	slices.SortFunc(s.recs, func(a, b rec) int {
		if c := cmp.Compare(a.class, b.class); c != 0 {
			return c
		}
		if c := cmp.Compare(a.prefix, b.prefix); c != 0 {
			return c
		}
		if c := bytes.Compare(buf[a.koff:a.koff+a.klen], buf[b.koff:b.koff+b.klen]); c != 0 {
			return c
		}
		return cmp.Compare(a.koff, b.koff)
	})
}

func (s *Sorter) emitChunk(emit func(uint32, []byte, []byte) error) error {
	for _, r := range s.recs {
		if err := emit(r.class, s.buf[r.koff:r.koff+r.klen], s.buf[r.voff:r.voff+r.vlen]); err != nil {
			return err
		}
	}
	return nil
}

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
	path    string
	f       *os.File
	w       *bufio.Writer
	scratch []byte
}

func newRunWriter(path string) (*runWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("extsort: %w", err)
	}
	return &runWriter{path: path, f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

func (rw *runWriter) add(class uint32, key, value []byte) error {
	rw.scratch = appendRecord(rw.scratch[:0], class, key, value)
	_, err := rw.w.Write(rw.scratch)
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
func (s *Sorter) merge(ctx context.Context, runs []string, emit func(uint32, []byte, []byte) error) error {
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

func (s *Sorter) mergeInto(ctx context.Context, runs []string, emit func(uint32, []byte, []byte) error) error {
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
		if err := emit(c.class, c.key, c.value); err != nil {
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
	f          *os.File
	r          *bufio.Reader
	run        int
	class      uint32
	key, value []byte
}

func (c *cursor) next() (bool, error) {
	class, err := binary.ReadUvarint(c.r)
	if err == io.EOF {
		return false, nil
	}
	if err != nil || class > 0xFFFFFFFF {
		return false, runErr(err)
	}
	c.class = uint32(class)
	if c.key, err = c.bytes(c.key); err != nil {
		return false, err
	}
	c.value, err = c.bytes(c.value)
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
	if r := cmp.Or(cmp.Compare(c.class, o.class), bytes.Compare(c.key, o.key)); r != 0 {
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

// concatReader reads a bucket's spill files one after another.
type concatReader struct {
	paths []string
	f     *os.File
}

// fill reads into the free capacity of *buf; eof reports that every file
// has been read to its end.
func (c *concatReader) fill(buf *[]byte) (eof bool, err error) {
	b := *buf
	defer func() { *buf = b }()
	for len(b) < cap(b) {
		if c.f == nil {
			if len(c.paths) == 0 {
				return true, nil
			}
			if c.f, err = os.Open(c.paths[0]); err != nil {
				return false, fmt.Errorf("extsort: %w", err)
			}
			c.paths = c.paths[1:]
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
