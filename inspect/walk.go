package inspect

import (
	"context"

	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/savepoint"
)

// segmentWalker is a source whose segments' figures come only from reading
// every entry (a Flink savepoint keeps no index): CountSegments returns the
// segments as savepoint.AllSegments does and gives visit each segment's
// entries from that same read, so that a scan reads the data once, not
// once to count and again to scan.
type segmentWalker interface {
	CountSegments(ctx context.Context, n int, visit func(w int, ref savepoint.StateRef, it savepoint.EntryIterator) error, progress func(done, total int64)) ([]savepoint.Segment, error)
}

// walkScan is scan for a segmentWalker: it returns the segments too.
func walkScan(ctx context.Context, src savepoint.Source, w segmentWalker, opts Options) ([]savepoint.Segment, *scanResult, error) {
	m := src.Metadata()
	n := opts.Workers
	if n <= 0 {
		n = workers.Default()
	}
	scanners := make([]*segmentScanner, n)
	segs, err := w.CountSegments(ctx, n, func(w int, ref savepoint.StateRef, it savepoint.EntryIterator) error {
		if scanners[w] == nil {
			scanners[w] = newSegmentScanner(m, opts.Now, opts.Top)
		}
		return scanners[w].segment(ref, it)
	}, opts.Progress)
	if err != nil {
		return nil, nil, err
	}
	res := newSegmentScanner(m, opts.Now, opts.Top).res
	for _, s := range scanners {
		if s != nil {
			res.merge(s.res)
		}
	}
	return segs, res, nil
}
