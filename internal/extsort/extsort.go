package extsort

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
)

// Options configure a Sorter.
type Options struct {
	// Compare orders records; it must be safe to call from several
	// goroutines at once.
	Compare func(a, b []byte) int
	// Memory bounds the chunks, in bytes: DefaultMemory when 0.
	Memory int
	// Writers is the number of writers that may fill chunks at once, each
	// a Memory/Writers share; 1 when 0. A further writer waits for one of
	// them to close.
	Writers int
	// Dir receives the run files, created when a chunk fills. It must
	// exist; the default is os.TempDir.
	Dir string
	// FanIn bounds the runs one merge reads at once; DefaultFanIn when 0.
	FanIn int
}

const (
	// DefaultMemory is the budget when Options.Memory is 0.
	DefaultMemory = 64 << 20
	// DefaultFanIn keeps a merge's read buffers at a few MiB.
	DefaultFanIn = 64
	// readBuffer is a run's read buffer in a merge.
	readBuffer = 64 << 10
	// spanSize is what the index of a chunk takes per record.
	spanSize = 8
	// minChunk keeps a chunk useful whatever the budget.
	minChunk = 16 << 10
)

// Sorter is one sort: writers add records, then Sorted reads them back in
// order. Close removes its files in every case.
type Sorter struct {
	opts      Options
	chunkSize int
	// free holds the chunks no writer fills at the moment; a chunk in it
	// may hold records.
	free chan *chunk

	mu      sync.Mutex
	runs    []string
	longest int // the longest record written to a run file
	added   int64
	sorted  bool
	closed  bool
}

// New returns a sorter. Nothing is allocated until records are added.
func New(o Options) (*Sorter, error) {
	if o.Compare == nil {
		return nil, errors.New("extsort: no comparison")
	}
	if o.Memory <= 0 {
		o.Memory = DefaultMemory
	}
	if o.Writers <= 0 {
		o.Writers = 1
	}
	if o.FanIn <= 0 {
		o.FanIn = DefaultFanIn
	}
	if o.FanIn < 2 {
		return nil, fmt.Errorf("extsort: fan-in %d below 2", o.FanIn)
	}
	// The chunks left in memory join the last merge, which must also
	// take at least one run file.
	o.FanIn = max(o.FanIn, o.Writers+1)
	if o.Dir == "" {
		o.Dir = os.TempDir()
	}
	s := &Sorter{opts: o, chunkSize: max(minChunk, o.Memory/o.Writers), free: make(chan *chunk, o.Writers)}
	for range o.Writers {
		s.free <- &chunk{}
	}
	return s, nil
}

// Added is the number of records added so far.
func (s *Sorter) Added() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.added
}

// Spilled is the number of run files written so far.
func (s *Sorter) Spilled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runs)
}

// Writer takes a chunk to fill, waiting while every chunk is taken. The
// writer must be closed, by the goroutine that uses it.
func (s *Sorter) Writer(ctx context.Context) (*Writer, error) {
	select {
	case c := <-s.free:
		return &Writer{s: s, c: c}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Writer adds records to a sorter. It is used by one goroutine.
type Writer struct {
	s     *Sorter
	c     *chunk
	added int64
	err   error
}

// Add copies rec into the sort. When the chunk is full it is sorted and
// written to a run file first.
func (w *Writer) Add(rec []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.c == nil {
		return errors.New("extsort: writer is closed")
	}
	if len(rec) > maxRecord {
		return fmt.Errorf("extsort: a record of %d bytes, above the limit of %d", len(rec), maxRecord)
	}
	if !w.c.add(rec, w.s.chunkSize) {
		if w.err = w.s.spill(w.c); w.err != nil {
			return w.err
		}
		w.c.add(rec, w.s.chunkSize)
	}
	w.added++
	return nil
}

// Close hands the chunk back, with what it holds, for the next writer or
// for Sorted.
func (w *Writer) Close() error {
	if w.c == nil {
		return w.err
	}
	w.s.mu.Lock()
	w.s.added += w.added
	w.s.mu.Unlock()
	w.s.free <- w.c
	w.c = nil
	return w.err
}

// maxRecord keeps a record's length within a run file's uint32 spans.
const maxRecord = 1<<31 - 1

// chunk is records in one buffer, and their spans in it.
type chunk struct {
	data  []byte
	spans []span
}

type span struct{ off, len uint32 }

// add appends rec if the chunk can hold it within size bytes, counting
// what its buffers take (their capacity), not what they hold: the buffers
// grow by doubling up to that, so a small sort does not pay for the whole
// budget. An empty chunk takes a record of any size, growing as large as it
// needs.
func (c *chunk) add(rec []byte, size int) bool {
	if len(c.spans) == cap(c.spans) {
		limit := (size - cap(c.data)) / spanSize
		n := min(max(2*cap(c.spans), minChunk/spanSize), limit)
		if n <= len(c.spans) {
			if len(c.spans) > 0 {
				return false
			}
			n = 1
		}
		c.spans = append(make([]span, 0, n), c.spans...)
	}
	if need := len(c.data) + len(rec); need > cap(c.data) {
		limit := size - spanSize*cap(c.spans)
		n := min(max(2*cap(c.data), minChunk), limit)
		if n < need {
			if len(c.spans) > 0 {
				return false
			}
			n = need
		}
		c.data = append(make([]byte, 0, n), c.data...)
	}
	c.spans = append(c.spans, span{uint32(len(c.data)), uint32(len(rec))})
	c.data = append(c.data, rec...)
	return true
}

func (c *chunk) record(sp span) []byte { return c.data[sp.off : sp.off+sp.len : sp.off+sp.len] }

func (c *chunk) sort(cmp func(a, b []byte) int) {
	slices.SortFunc(c.spans, func(a, b span) int { return cmp(c.record(a), c.record(b)) })
}

func (c *chunk) reset() {
	c.data = c.data[:0]
	c.spans = c.spans[:0]
}

// spill sorts c, writes it to a new run file and empties it.
func (s *Sorter) spill(c *chunk) error {
	c.sort(s.opts.Compare)
	longest := 0
	path, err := s.writeRun(func(emit func([]byte) error) error {
		for _, sp := range c.spans {
			longest = max(longest, int(sp.len))
			if err := emit(c.record(sp)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.reset()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs = append(s.runs, path)
	s.longest = max(s.longest, longest)
	return nil
}

// writeRun creates a run file and fills it with the records fill emits,
// each as a uvarint length and the bytes.
func (s *Sorter) writeRun(fill func(emit func([]byte) error) error) (string, error) {
	f, err := os.CreateTemp(s.opts.Dir, "run-*")
	if err != nil {
		return "", fmt.Errorf("extsort: %w", err)
	}
	bw := bufio.NewWriterSize(f, readBuffer)
	var lenBuf [binary.MaxVarintLen64]byte
	err = fill(func(rec []byte) error {
		n := binary.PutUvarint(lenBuf[:], uint64(len(rec)))
		if _, err := bw.Write(lenBuf[:n]); err != nil {
			return err
		}
		_, err := bw.Write(rec)
		return err
	})
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("extsort: writing a run: %w", err)
	}
	return f.Name(), nil
}

// Sorted returns the records in order. Every writer must be closed; no
// record may be added afterwards. The iterator must be closed before the
// sorter.
func (s *Sorter) Sorted(ctx context.Context) (*Iterator, error) {
	s.mu.Lock()
	if s.sorted || s.closed {
		s.mu.Unlock()
		return nil, errors.New("extsort: Sorted called twice or after Close")
	}
	s.sorted = true
	s.mu.Unlock()
	var chunks []*chunk
	for range s.opts.Writers {
		select {
		case c := <-s.free:
			chunks = append(chunks, c)
		default:
			return nil, errors.New("extsort: a writer is still open")
		}
	}
	var mem []*chunk
	for _, c := range chunks {
		if len(c.spans) > 0 {
			c.sort(s.opts.Compare)
			mem = append(mem, c)
		}
	}
	// Merge file runs ahead until the rest fit one merge with the chunks
	// held in memory.
	for len(s.runs)+len(mem) > s.opts.FanIn {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := min(s.opts.FanIn, len(s.runs)+len(mem)-s.opts.FanIn+1)
		if err := s.premerge(ctx, n); err != nil {
			return nil, err
		}
	}
	var sources []source
	for _, c := range mem {
		sources = append(sources, &memRun{c: c})
	}
	for _, r := range s.runs {
		fr, err := s.openRun(r)
		if err != nil {
			closeAll(sources)
			return nil, err
		}
		sources = append(sources, fr)
	}
	return newIterator(ctx, sources, s.opts.Compare), nil
}

// premerge merges the first n file runs into one, which goes to the end of
// the list.
func (s *Sorter) premerge(ctx context.Context, n int) error {
	var sources []source
	for _, r := range s.runs[:n] {
		fr, err := s.openRun(r)
		if err != nil {
			closeAll(sources)
			return err
		}
		sources = append(sources, fr)
	}
	it := newIterator(ctx, sources, s.opts.Compare)
	path, err := s.writeRun(func(emit func([]byte) error) error {
		for it.Next() {
			if err := emit(it.Record()); err != nil {
				return err
			}
		}
		return it.Err()
	})
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	for _, r := range s.runs[:n] {
		os.Remove(r)
	}
	s.runs = append(s.runs[n:], path)
	return nil
}

// Close removes the run files and drops the chunks.
func (s *Sorter) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, r := range s.runs {
		if err := os.Remove(r); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	s.runs = nil
	return errors.Join(errs...)
}
