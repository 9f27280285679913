package rescale

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
)

// spillFile is one file of the partition phase.
type spillFile struct {
	path string
	size int64
}

// spillFiles are the files of the partition phase: per worker, per bucket,
// a file, or one without a path where the worker wrote nothing into the
// bucket.
type spillFiles [][]spillFile

// ofBucket returns the paths of the files of bucket b and their total size.
func (s spillFiles) ofBucket(b int) ([]string, int64) {
	var paths []string
	var size int64
	for _, w := range s {
		if w[b].path != "" {
			paths = append(paths, w[b].path)
			size += w[b].size
		}
	}
	return paths, size
}

// partition streams every segment of operator op into spill files under
// dir, on workers goroutines, with about memory bytes of write buffers in
// all, and tells m of the first pass's share of each segment (see
// firstPassShare).
func partition(ctx context.Context, src savepoint.Source, p *opPlan, sh []refShape, bk *bucketing, dir string, n, memory int, m *rewrite.Meter) (spillFiles, error) {
	segs := slices.Clone(p.segs)
	// File order, so that the workers together read each file forwards.
	slices.SortFunc(segs, func(a, b savepoint.Segment) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Offset, b.Offset))
	})
	bufSize := min(64<<10, max(4<<10, memory/max(1, n*len(bk.buckets))))
	pws := make([]*partitioner, n)
	for w := range pws {
		pws[w] = &partitioner{
			dir: dir, id: w, hash: p.from.KeyHash, maxP: uint32(p.maxP), bk: bk,
			shapes: sh, bufSize: bufSize, files: make([]*spillWriter, len(bk.buckets)),
		}
	}
	err := workers.Run(ctx, len(segs), n, func(ctx context.Context, w, i int) error {
		if err := pws[w].segment(ctx, src, segs[i]); err != nil {
			return err
		}
		m.Add(firstPassShare(segs[i].Length))
		return nil
	})
	// Every worker's files are closed, whether the partition failed or not.
	files := make(spillFiles, n)
	errs := []error{err}
	for w, pw := range pws {
		written, cerr := pw.close()
		files[w] = written
		errs = append(errs, cerr)
	}
	return files, errors.Join(errs...)
}

// partitioner is one worker of the partition phase.
type partitioner struct {
	dir     string
	id      int
	hash    keygroup.Hash
	maxP    uint32
	bk      *bucketing
	shapes  []refShape
	bufSize int
	files   []*spillWriter
	// to, when set, takes each new key group's spill records instead of
	// the bucket files: the map stage of a shuffle (see Shuffle.Blocks).
	to func(kg int) spillOut
	// The current group, and the encoding scratch.
	h       header
	scratch []byte
}

// spillOut takes spill records in order.
type spillOut interface {
	write(b []byte) error
}

func (sw *spillWriter) write(b []byte) error {
	if _, err := sw.w.Write(b); err != nil {
		return fmt.Errorf("rescale: spilling: %w", err)
	}
	sw.size += int64(len(b))
	return nil
}

// out returns where the records of new key group kg go.
func (pw *partitioner) out(kg int) (spillOut, error) {
	if pw.to != nil {
		return pw.to(kg), nil
	}
	return pw.writer(int(pw.bk.of[kg]))
}

type spillWriter struct {
	spillFile
	f *os.File
	w *bufio.Writer
}

func (pw *partitioner) writer(b int) (*spillWriter, error) {
	if sw := pw.files[b]; sw != nil {
		return sw, nil
	}
	path := filepath.Join(pw.dir, fmt.Sprintf("w%02d-b%05d.spill", pw.id, b))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	sw := &spillWriter{spillFile: spillFile{path: path}, f: f, w: bufio.NewWriterSize(f, pw.bufSize)}
	pw.files[b] = sw
	return sw, nil
}

// segment spills the entries of one input segment. A group starts at every
// change of (key, namespace), and at every timer; only a new key is hashed.
func (pw *partitioner) segment(ctx context.Context, src savepoint.Source, seg savepoint.Segment) error {
	it := savepoint.SegmentEntries(ctx, src, seg)
	defer it.Close()
	ref := spillRef(pw.shapes, seg.Ref)
	if ref < 0 {
		return fmt.Errorf("rescale: a segment of operator %d, not the one rescaled", seg.Ref.Operator)
	}
	shape := pw.shapes[ref]
	first := true
	var w spillOut
	for it.Next() {
		e := it.Entry()
		b := pw.scratch[:0]
		newKey := first || shape.timer || !bytes.Equal(e.Key, pw.h.key)
		if newKey || !bytes.Equal(e.Namespace, pw.h.ns) {
			if newKey {
				h, err := pw.hash.Sum(e.Key)
				if err != nil {
					return err
				}
				pw.h.kg = int(h % pw.maxP)
				pw.h.key = append(pw.h.key[:0], e.Key...)
				var werr error
				if w, werr = pw.out(pw.h.kg); werr != nil {
					return werr
				}
			}
			pw.h.ref, pw.h.time = ref, e.Timestamp
			pw.h.ns = append(pw.h.ns[:0], e.Namespace...)
			b = appendHeader(b, &pw.h, shape.timer)
			first = false
		}
		if !shape.timer {
			b = appendItem(b, shape.isMap, e.MapKey, e.Value)
		}
		pw.scratch = b
		if err := w.write(b); err != nil {
			return err
		}
	}
	return it.Err()
}

// close flushes and closes every spill file and returns them by bucket.
func (pw *partitioner) close() ([]spillFile, error) {
	written := make([]spillFile, len(pw.files))
	var errs []error
	for b, sw := range pw.files {
		if sw == nil {
			continue
		}
		written[b] = sw.spillFile
		errs = append(errs, sw.w.Flush(), sw.f.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("rescale: spilling: %w", err)
	}
	return written, nil
}

// segmentEntries sums the index's entry counts of an operator's segments
// by spill ref: what the rescaled operator must hold again.
func segmentEntries(p *opPlan, sh []refShape) []uint64 {
	n := make([]uint64, len(sh))
	for _, s := range p.segs {
		if ref := spillRef(sh, s.Ref); ref >= 0 {
			n[ref] += s.Entries
		}
	}
	return n
}
