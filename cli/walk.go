package cli

import (
	"cmp"
	"context"
	"io"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/sync/errgroup"

	"github.com/stateproc/stateproc/snapshotfmt"
)

// allSegments returns the segments of every operator in file order, so that
// workers taking them in turn read each file front to back.
func allSegments(r *snapshotfmt.Reader) []snapshotfmt.Segment {
	var segs []snapshotfmt.Segment
	for op := range r.Metadata().Operators {
		segs = append(segs, r.Segments(op)...)
	}
	slices.SortFunc(segs, func(a, b snapshotfmt.Segment) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Offset, b.Offset))
	})
	return segs
}

// walkSegments calls fn for every segment on one worker per core; each
// segment is a (state, key group) and independent of the others, so a
// worker needs nothing but its own accumulators, indexed by worker. The
// first error stops the walk and is returned.
func walkSegments(ctx context.Context, segs []snapshotfmt.Segment, workers int, progress *progressbar.ProgressBar,
	fn func(ctx context.Context, worker int, seg snapshotfmt.Segment) error) error {
	g, ctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	for w := range workers {
		g.Go(func() error {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(segs) {
					return nil
				}
				if err := fn(ctx, w, segs[i]); err != nil {
					return err
				}
				if progress != nil {
					progress.Add64(segs[i].Length)
				}
			}
		})
	}
	err := g.Wait()
	if progress != nil {
		if err == nil {
			progress.Finish()
		}
		progress.Exit()
	}
	return err
}

// workerCount is one worker per core the Go runtime may use.
func workerCount() int { return runtime.GOMAXPROCS(0) }

// newProgress returns a progress bar over total bytes drawn on stderr, or
// nil when stderr is not a terminal (a pipe, a file, a test).
func newProgress(stderr io.Writer, total int64, what string) *progressbar.ProgressBar {
	if !stderrIsTerminal(stderr) {
		return nil
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish())
}

// segmentBytes sums what the segments take in their files.
func segmentBytes(segs []snapshotfmt.Segment) int64 {
	var n int64
	for _, s := range segs {
		n += s.Length
	}
	return n
}
