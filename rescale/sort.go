package rescale

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/stateproc/stateproc/internal/uvarint"
	"github.com/stateproc/stateproc/keygroup"
)

// sink receives groups in order: a header, then its items.
type sink interface {
	group(h *header) error
	// item gets an item framed as the format frames it (for a map state the
	// map key, then the value, each after its uvarint length), which is the
	// spill encoding's item after its tag, and v, the value within it.
	// Neither slice is kept after the call returns.
	item(framed, v []byte) error
}

// group locates one group of a chunk: its sort key and its records
// (header and items) in the chunk's buffer. Offsets rather than slices keep
// it at 48 bytes, which matters with millions of small groups per chunk.
type group struct {
	time int64
	// keyPrefix is the key's first 8 bytes, big-endian, zero-padded: most
	// comparisons end there, without touching the buffer.
	keyPrefix      uint64
	kg, ref        int32
	keyOff, keyLen uint32
	nsOff, nsLen   uint32
	start, end     uint32
}

const groupSize = 48

// minChunk is the smallest chunk buffer, so that filling one always makes
// progress.
const minChunk = 4 << 10

// sorter sorts the groups of one bucket at a time into a sink, within a
// memory budget. It belongs to one worker and reuses its buffers from
// bucket to bucket.
type sorter struct {
	shapes []refShape
	// budget bounds the chunk buffer plus the group index.
	budget int
	// dir receives run files when a bucket does not fit in one chunk.
	dir   string
	name  string
	runNo int
	// fanIn bounds the runs one merge reads at once.
	fanIn int

	buf    []byte
	groups []group
	// The bucket being sorted, and the buffers of sortGroups.
	kgs    keygroup.Range
	tmp    []group
	counts []int
	starts []int
}

// minSortBudget is the least memory a sorter works with.
const minSortBudget = 64 << 10

func newSorter(shapes []refShape, budget int, dir, name string) *sorter {
	return &sorter{shapes: shapes, budget: budget, dir: dir, name: name, fanIn: 64}
}

// sortBucket reads the spill files of one bucket, size bytes in all, and
// passes their groups to out in order.
func (s *sorter) sortBucket(ctx context.Context, paths []string, size int64, kgs keygroup.Range, out sink) error {
	s.kgs = kgs
	in := &concatReader{paths: paths}
	defer in.close()
	var runs []string
	defer func() {
		for _, r := range runs {
			os.Remove(r)
		}
	}()
	// Half the budget for data, half for the index of its groups and the
	// scratch space sorting it takes: a chunk of small groups fills the
	// index first.
	dataCap := s.budget / 2
	maxGroups := max(1, s.budget/2/(2*groupSize))
	// The buffers are sized for the bucket, so that a small savepoint does
	// not pay for the whole budget, and grow only from bucket to bucket:
	// growing them as a chunk fills would leave garbage as large as
	// themselves for the collector.
	// One byte more than the bucket, so that reading it whole meets the end
	// of its files before the buffer is full.
	if want := max(minChunk, int(min(int64(dataCap), size+1))); cap(s.buf) < want {
		s.buf = make([]byte, 0, want)
	}
	// A guess of the groups: appending beyond it only costs garbage.
	if want := min(maxGroups, int(size/48)+1); cap(s.groups) < want {
		s.groups, s.tmp = make([]group, 0, want), make([]group, 0, want)
	}
	s.buf = s.buf[:0]
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		eof, err := in.fill(&s.buf)
		if err != nil {
			return err
		}
		used, err := s.parse(eof, maxGroups)
		if err != nil {
			return err
		}
		if len(s.groups) == 0 {
			if eof {
				break
			}
			// One record does not fit: grow the chunk to hold it.
			s.buf = slices.Grow(s.buf, max(minChunk, cap(s.buf)))
			continue
		}
		s.sortGroups()
		last := eof && used == len(s.buf)
		if last && len(runs) == 0 {
			return s.emit(out)
		}
		run, err := s.writeRun()
		if err != nil {
			return err
		}
		runs = append(runs, run)
		if last {
			break
		}
		if err := s.carry(used); err != nil {
			return err
		}
	}
	if len(runs) == 0 {
		return nil
	}
	return s.merge(ctx, runs, out)
}

// parse indexes the complete groups at the start of the buffer. It returns
// how many bytes they take; the rest is carried to the next chunk. A group
// cut by the end of the buffer is indexed with the items that are there,
// unless it has none: then it is carried whole.
func (s *sorter) parse(eof bool, maxGroups int) (int, error) {
	s.groups = s.groups[:0]
	d := spillDecoder{buf: s.buf, shapes: s.shapes}
	var h header
	var cur *group
	items := 0
	for d.off < len(d.buf) {
		start := d.off
		tag := d.buf[d.off]
		d.off++
		var err error
		switch tag {
		case tagGroup:
			if s.dropEmpty(cur, items) {
				cur = nil
			}
			if len(s.groups) == maxGroups {
				return start, nil
			}
			if err = d.header(&h); err == nil && !s.kgs.Contains(h.kg) {
				err = fmt.Errorf("rescale: spill file: key group %d outside the bucket's %v", h.kg, s.kgs)
			}
			if err == nil {
				s.groups = append(s.groups, group{
					time: h.time, keyPrefix: prefixOf(h.key), kg: int32(h.kg), ref: int32(h.ref),
					keyOff: uint32(d.off - len(h.ns) - len(h.key) - uvarint.Len(uint64(len(h.ns)))), keyLen: uint32(len(h.key)),
					nsOff: uint32(d.off - len(h.ns)), nsLen: uint32(len(h.ns)),
					start: uint32(start),
				})
				cur, items = &s.groups[len(s.groups)-1], 0
			}
		case tagItem:
			if cur == nil {
				return 0, errors.New("rescale: spill file: an item before any group")
			}
			if s.shapes[cur.ref].timer {
				return 0, errors.New("rescale: spill file: an item in a timer group")
			}
			if _, _, err = d.item(s.shapes[cur.ref].isMap); err == nil {
				items++
			}
		default:
			return 0, fmt.Errorf("rescale: spill file: unknown record tag %d", tag)
		}
		if errors.Is(err, errShort) {
			if eof {
				return 0, errors.New("rescale: spill file: truncated record")
			}
			return s.cut(cur, items, start), nil
		}
		if err != nil {
			return 0, err
		}
		cur.end = uint32(d.off)
	}
	if eof {
		s.dropEmpty(cur, items)
		return len(s.buf), nil
	}
	return s.cut(cur, items, len(s.buf)), nil
}

// dropEmpty drops cur, the last group, if it is a state group without
// items: the header that carry put in front of a chunk for a group that
// did not continue after all.
func (s *sorter) dropEmpty(cur *group, items int) bool {
	if cur != nil && items == 0 && !s.shapes[cur.ref].timer {
		s.groups = s.groups[:len(s.groups)-1]
		return true
	}
	return false
}

// cut ends the chunk before the record at start, and returns where the
// carried bytes begin. A state group none of whose items made it into the
// chunk is carried whole, header included: a group is never written
// without entries.
func (s *sorter) cut(cur *group, items, start int) int {
	if cur != nil && s.dropEmpty(cur, items) {
		return int(cur.start)
	}
	return start
}

// emit passes the sorted groups of the chunk to out.
func (s *sorter) emit(out sink) error {
	d := spillDecoder{buf: s.buf, shapes: s.shapes}
	var h header
	for i := range s.groups {
		g := &s.groups[i]
		d.off = int(g.start) + 1
		if err := d.header(&h); err != nil {
			return err
		}
		if err := out.group(&h); err != nil {
			return err
		}
		isMap := s.shapes[h.ref].isMap
		for d.off < int(g.end) {
			d.off++ // the item tag
			start := d.off
			_, v, err := d.item(isMap)
			if err != nil {
				return err
			}
			if err := out.item(d.buf[start:d.off], v); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeRun writes the sorted groups of the chunk to a new run file: their
// records as they are, one group after another.
func (s *sorter) writeRun() (string, error) {
	path := s.runPath()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriterSize(f, 256<<10)
	for i := range s.groups {
		g := &s.groups[i]
		if _, err := w.Write(s.buf[g.start:g.end]); err != nil {
			f.Close()
			return "", err
		}
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		return "", fmt.Errorf("rescale: writing a sorted run: %w", err)
	}
	return path, nil
}

// carry moves the bytes from used on to the front of the buffer for the
// next chunk. Unless they start with a group header, the last group read
// may continue in them (with an item, or with the next bytes of the file
// when they are empty), so a copy of its header is put in front: the next
// chunk is then self-contained, the two pieces of the group sort equal, and
// the merge keeps them in run order. If the group does not continue after
// all, parse drops the header as an empty group.
func (s *sorter) carry(used int) error {
	rest := s.buf[used:]
	var hdr []byte
	if len(rest) == 0 || rest[0] == tagItem {
		// The group read last is the one whose records end at used;
		// sorting has moved it, so it is looked for.
		i := slices.IndexFunc(s.groups, func(g group) bool { return g.end == uint32(used) })
		if i < 0 {
			return errors.New("rescale: spill file: an item after a chunk's groups")
		}
		if !s.shapes[s.groups[i].ref].timer {
			d := spillDecoder{buf: s.buf, off: int(s.groups[i].start) + 1, shapes: s.shapes}
			var h header
			if err := d.header(&h); err != nil {
				return err
			}
			hdr = bytes.Clone(s.buf[s.groups[i].start:d.off])
		}
	}
	n := len(hdr) + len(rest)
	if n > cap(s.buf) {
		grown := make([]byte, n, n+cap(s.buf))
		copy(grown[len(hdr):], rest)
		s.buf = grown
	} else {
		// copy moves overlapping bytes correctly.
		s.buf = s.buf[:n]
		copy(s.buf[len(hdr):], rest)
	}
	copy(s.buf, hdr)
	return nil
}

// runPath names a new run file.
func (s *sorter) runPath() string {
	s.runNo++
	return filepath.Join(s.dir, fmt.Sprintf("%s-run%05d", s.name, s.runNo))
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
	for len(b) < cap(b) {
		if c.f == nil {
			if len(c.paths) == 0 {
				*buf = b
				return true, nil
			}
			if c.f, err = os.Open(c.paths[0]); err != nil {
				return false, err
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
			return false, err
		}
	}
	*buf = b
	return false, nil
}

func (c *concatReader) close() {
	if c.f != nil {
		c.f.Close()
	}
}
