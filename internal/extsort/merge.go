package extsort

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// source is one sorted run being merged: a chunk in memory or a run file.
type source interface {
	// next advances to the next record; it returns false at the end or on
	// an error, which err then returns.
	next() bool
	// record is the current record, valid until next.
	record() []byte
	err() error
	close() error
}

type memRun struct {
	c   *chunk
	i   int
	cur []byte
}

func (m *memRun) next() bool {
	if m.i >= len(m.c.spans) {
		return false
	}
	m.cur = m.c.record(m.c.spans[m.i])
	m.i++
	return true
}

func (m *memRun) record() []byte { return m.cur }
func (m *memRun) err() error     { return nil }
func (m *memRun) close() error   { m.c.reset(); return nil }

// fileRun reads a run file. A record that fits its read buffer is read in
// place; a longer one is copied into buf.
type fileRun struct {
	path    string
	f       *os.File
	r       *bufio.Reader
	longest int
	cur     []byte
	pending int // bytes of the current record still in r, to discard
	buf     []byte
	e       error
}

func (s *Sorter) openRun(path string) (*fileRun, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("extsort: %w", err)
	}
	return &fileRun{path: path, f: f, r: bufio.NewReaderSize(f, readBuffer), longest: s.longest}, nil
}

func (fr *fileRun) next() bool {
	if fr.e != nil {
		return false
	}
	if fr.pending > 0 {
		if _, err := fr.r.Discard(fr.pending); err != nil {
			return fr.fail(err)
		}
		fr.pending = 0
	}
	n, err := binary.ReadUvarint(fr.r)
	if err == io.EOF {
		return false
	}
	if err != nil {
		return fr.fail(err)
	}
	if n > uint64(fr.longest) {
		return fr.fail(fmt.Errorf("a record of %d bytes, longer than any written", n))
	}
	if int(n) <= fr.r.Size() {
		if fr.cur, err = fr.r.Peek(int(n)); err != nil {
			return fr.fail(err)
		}
		fr.pending = int(n)
		return true
	}
	if uint64(cap(fr.buf)) < n {
		fr.buf = make([]byte, n)
	}
	fr.buf = fr.buf[:n]
	if _, err := io.ReadFull(fr.r, fr.buf); err != nil {
		return fr.fail(err)
	}
	fr.cur = fr.buf
	return true
}

func (fr *fileRun) fail(err error) bool {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	fr.e = fmt.Errorf("extsort: run file %s: %w", fr.path, err)
	return false
}

func (fr *fileRun) record() []byte { return fr.cur }
func (fr *fileRun) err() error     { return fr.e }
func (fr *fileRun) close() error   { return fr.f.Close() }

func closeAll(sources []source) error {
	var errs []error
	for _, s := range sources {
		errs = append(errs, s.close())
	}
	return errors.Join(errs...)
}

// Iterator streams the merged records with a sticky error: Next until it
// returns false, then Err.
type Iterator struct {
	ctx     context.Context
	cmp     func(a, b []byte) int
	sources []source
	// heap holds the indexes of the sources that have a current record,
	// ordered by it, ties by index: a min-heap.
	heap    []int
	started bool
	cur     []byte
	n       int
	err     error
}

func newIterator(ctx context.Context, sources []source, cmp func(a, b []byte) int) *Iterator {
	return &Iterator{ctx: ctx, cmp: cmp, sources: sources}
}

func (it *Iterator) less(a, b int) bool {
	if c := it.cmp(it.sources[a].record(), it.sources[b].record()); c != 0 {
		return c < 0
	}
	return a < b
}

func (it *Iterator) down(i int) {
	h := it.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && it.less(h[r], h[l]) {
			m = r
		}
		if !it.less(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// advance moves source i to its next record and restores the heap, whose
// top it is.
func (it *Iterator) advance() bool {
	top := it.heap[0]
	if it.sources[top].next() {
		it.down(0)
		return true
	}
	if err := it.sources[top].err(); err != nil {
		it.err = err
		return false
	}
	last := len(it.heap) - 1
	it.heap[0] = it.heap[last]
	it.heap = it.heap[:last]
	if len(it.heap) > 0 {
		it.down(0)
	}
	return true
}

// Next advances to the next record in order.
func (it *Iterator) Next() bool {
	if it.err != nil {
		return false
	}
	if it.n++; it.n%4096 == 0 {
		if it.err = it.ctx.Err(); it.err != nil {
			return false
		}
	}
	if !it.started {
		it.started = true
		for i, s := range it.sources {
			if s.next() {
				it.heap = append(it.heap, i)
			} else if it.err = s.err(); it.err != nil {
				return false
			}
		}
		for i := len(it.heap)/2 - 1; i >= 0; i-- {
			it.down(i)
		}
	} else if len(it.heap) > 0 && !it.advance() {
		return false
	}
	if len(it.heap) == 0 {
		it.cur = nil
		return false
	}
	it.cur = it.sources[it.heap[0]].record()
	return true
}

// Record is the current record, valid until Next.
func (it *Iterator) Record() []byte { return it.cur }

func (it *Iterator) Err() error { return it.err }

// Close closes the runs being read.
func (it *Iterator) Close() error {
	err := closeAll(it.sources)
	it.sources, it.heap = nil, nil
	return err
}
