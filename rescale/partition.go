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
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/snapshotfmt"
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
func partition(ctx context.Context, src *snapshotfmt.Reader, p *opPlan, bk *bucketing, dir string, workers, memory int, m *rewrite.Meter) (spillFiles, error) {
	segs := src.Segments(p.index)
	// File order, so that the workers together read each file forwards.
	slices.SortFunc(segs, func(a, b snapshotfmt.Segment) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Offset, b.Offset))
	})
	bufSize := min(64<<10, max(4<<10, memory/max(1, workers*len(bk.buckets))))
	files := make(spillFiles, workers)
	g, ctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	for w := range workers {
		pw := &partitioner{
			dir: dir, id: w, hash: p.from.KeyHash, maxP: uint32(p.maxP), bk: bk,
			shapes: shapes(p.from), bufSize: bufSize, files: make([]*spillWriter, len(bk.buckets)),
		}
		g.Go(func() error {
			var err error
			for err == nil {
				i := int(next.Add(1) - 1)
				if i >= len(segs) {
					break
				}
				if err = pw.segment(ctx, src, segs[i]); err == nil {
					m.Add(firstPassShare(segs[i].Length))
				}
			}
			written, cerr := pw.close()
			files[w] = written
			return errors.Join(err, cerr)
		})
	}
	return files, g.Wait()
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
	// The current group, and the encoding scratch.
	h       header
	scratch []byte
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
func (pw *partitioner) segment(ctx context.Context, src *snapshotfmt.Reader, seg snapshotfmt.Segment) error {
	it := src.Entries(ctx, seg)
	defer it.Close()
	shape := pw.shapes[seg.Ref]
	first := true
	var w *spillWriter
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
				if w, werr = pw.writer(int(pw.bk.of[pw.h.kg])); werr != nil {
					return werr
				}
			}
			pw.h.ref, pw.h.time = seg.Ref, e.Timestamp
			pw.h.ns = append(pw.h.ns[:0], e.Namespace...)
			b = appendHeader(b, &pw.h, shape.timer)
			first = false
		}
		if !shape.timer {
			b = appendItem(b, shape.isMap, e.MapKey, e.Value)
		}
		pw.scratch = b
		if _, err := w.w.Write(b); err != nil {
			return fmt.Errorf("rescale: spilling: %w", err)
		}
		w.size += int64(len(b))
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
// by ref: what the rescaled operator must hold again.
func segmentEntries(src *snapshotfmt.Reader, op int, refs int) []uint64 {
	n := make([]uint64, refs)
	for _, s := range src.Segments(op) {
		n[s.Ref] += s.Entries
	}
	return n
}
