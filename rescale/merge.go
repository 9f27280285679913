package rescale

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
)

// merge combines sorted runs into out. With more runs than the fan-in,
// consecutive runs are first merged into longer ones, which keeps the order
// between runs that ties depend on.
func (s *sorter) merge(ctx context.Context, runs []string, out sink) error {
	for len(runs) > s.fanIn {
		var next []string
		for i := 0; i < len(runs); i += s.fanIn {
			part := runs[i:min(i+s.fanIn, len(runs))]
			if len(part) == 1 {
				next = append(next, part[0])
				continue
			}
			path := s.runPath()
			rw, err := newRunWriter(path, s.shapes)
			if err != nil {
				return err
			}
			err = s.mergeInto(ctx, part, rw)
			if cerr := rw.close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			for _, p := range part {
				os.Remove(p)
			}
			next = append(next, path)
		}
		runs = next
	}
	err := s.mergeInto(ctx, runs, out)
	for _, p := range runs {
		os.Remove(p)
	}
	return err
}

// mergeInto merges runs, at most fanIn of them, into out: the least
// header first, on equal headers the earlier run first.
func (s *sorter) mergeInto(ctx context.Context, runs []string, out sink) error {
	// Each cursor reads with a buffer that shares the budget with the
	// others; the chunk buffer is not in use during a merge.
	bufSize := max(4<<10, s.budget/(2*len(runs)))
	h := cursorHeap{}
	defer func() {
		for _, c := range h {
			c.f.Close()
		}
	}()
	for i, path := range runs {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		c := &cursor{f: f, r: bufio.NewReaderSize(f, bufSize), run: i, shapes: s.shapes}
		ok, err := c.nextHeader()
		if err != nil {
			f.Close()
			return err
		}
		if !ok {
			f.Close()
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
		if err := out.group(&c.h); err != nil {
			return err
		}
		if err := c.items(out); err != nil {
			return err
		}
		ok, err := c.nextHeader()
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
	f      *os.File
	r      *bufio.Reader
	run    int
	shapes []refShape
	// h is the current group's header; its slices are the cursor's own.
	h       header
	key, ns []byte
	mk, v   []byte
	framed  []byte
	timeBuf [8]byte
	kgBuf   [2]byte
}

func (c *cursor) readBytes(into []byte) ([]byte, error) {
	n, err := binary.ReadUvarint(c.r)
	if err != nil {
		return nil, truncated(err)
	}
	if n > 1<<31 {
		return nil, errors.New("rescale: run file: length out of range")
	}
	into = grown(into, int(n))
	if _, err := io.ReadFull(c.r, into); err != nil {
		return nil, truncated(err)
	}
	return into, nil
}

func truncated(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return errors.New("rescale: run file: truncated record")
	}
	return err
}

// nextHeader reads the next record, which must be a group header; ok is
// false at the end of the run.
func (c *cursor) nextHeader() (ok bool, err error) {
	tag, err := c.r.ReadByte()
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if tag != tagGroup {
		return false, fmt.Errorf("rescale: run file: record tag %d where a group starts", tag)
	}
	if _, err := io.ReadFull(c.r, c.kgBuf[:]); err != nil {
		return false, truncated(err)
	}
	kg := binary.BigEndian.Uint16(c.kgBuf[:])
	ref, err := binary.ReadUvarint(c.r)
	if err != nil {
		return false, truncated(err)
	}
	if ref >= uint64(len(c.shapes)) {
		return false, fmt.Errorf("rescale: run file: ref %d out of range", ref)
	}
	c.h.kg, c.h.ref, c.h.time = int(kg), int(ref), 0
	if c.shapes[ref].timer {
		if _, err := io.ReadFull(c.r, c.timeBuf[:]); err != nil {
			return false, truncated(err)
		}
		c.h.time = int64(binary.BigEndian.Uint64(c.timeBuf[:]) ^ timerTimeBits)
	}
	if c.key, err = c.readBytes(c.key); err != nil {
		return false, err
	}
	if c.ns, err = c.readBytes(c.ns); err != nil {
		return false, err
	}
	c.h.key, c.h.ns = c.key, c.ns
	return true, nil
}

// items passes the items of the current group to out.
func (c *cursor) items(out sink) error {
	isMap := c.shapes[c.h.ref].isMap
	for {
		tag, err := c.r.Peek(1)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if tag[0] != tagItem {
			return nil
		}
		c.r.ReadByte()
		c.framed = c.framed[:0]
		if isMap {
			if c.mk, err = c.readBytes(c.mk); err != nil {
				return err
			}
			c.framed = appendBytes(c.framed, c.mk)
		}
		if c.v, err = c.readBytes(c.v); err != nil {
			return err
		}
		c.framed = appendBytes(c.framed, c.v)
		if err := out.item(c.framed, c.framed[len(c.framed)-len(c.v):]); err != nil {
			return err
		}
	}
}

func (c *cursor) less(o *cursor) bool {
	a, b := &c.h, &o.h
	if r := cmp.Or(cmp.Compare(a.kg, b.kg), cmp.Compare(a.ref, b.ref), cmp.Compare(a.time, b.time),
		bytes.Compare(a.key, b.key), bytes.Compare(a.ns, b.ns)); r != 0 {
		return r < 0
	}
	return c.run < o.run
}

// cursorHeap is a binary min-heap of cursors by their current header.
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

// fix0 restores the heap after the top cursor advanced.
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

// pop0 removes the top cursor.
func (h *cursorHeap) pop0() {
	s := *h
	s[0] = s[len(s)-1]
	*h = s[:len(s)-1]
	h.fix0()
}

// runWriter is a sink that writes a run file.
type runWriter struct {
	f       *os.File
	w       *bufio.Writer
	shapes  []refShape
	scratch []byte
}

func newRunWriter(path string, shapes []refShape) (*runWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	return &runWriter{f: f, w: bufio.NewWriterSize(f, 256<<10), shapes: shapes}, nil
}

func (rw *runWriter) group(h *header) error {
	rw.scratch = appendHeader(rw.scratch[:0], h, rw.shapes[h.ref].timer)
	_, err := rw.w.Write(rw.scratch)
	return err
}

func (rw *runWriter) item(framed, _ []byte) error {
	if err := rw.w.WriteByte(tagItem); err != nil {
		return err
	}
	_, err := rw.w.Write(framed)
	return err
}

func (rw *runWriter) close() error {
	return errors.Join(rw.w.Flush(), rw.f.Close())
}
