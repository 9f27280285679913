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

	"github.com/stateproc/stateproc/rewrite"
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
		endProgress(progress, err)
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

// endProgress takes a bar off the terminal, whether the work it followed
// succeeded or failed, so that the report or the error printed next starts
// on a clean line.
func endProgress(bar *progressbar.ProgressBar, err error) {
	if err == nil {
		bar.Finish()
	} else {
		bar.Clear()
	}
	bar.Exit()
}

// rewriteProgress draws a bar of the bytes of input a rewrite has
// processed on stderr when it is a terminal. The rewrite learns its total
// once it has planned, so the bar is made at its first report; a rewrite
// that reads nothing, as most dry runs, draws none.
type rewriteProgress struct {
	stderr io.Writer
	what   string
	bar    *progressbar.ProgressBar
}

// newRewriteProgress returns nil when stderr is not a terminal.
func newRewriteProgress(stderr io.Writer, what string) *rewriteProgress {
	if !stderrIsTerminal(stderr) {
		return nil
	}
	return &rewriteProgress{stderr: stderr, what: what}
}

// options adds the bar to a rewrite's options.
func (p *rewriteProgress) options(opts rewrite.Options) rewrite.Options {
	if p != nil {
		opts.Progress = p.update
	}
	return opts
}

// update is the rewrite's Progress: its meter calls it one call at a time.
func (p *rewriteProgress) update(done, total int64) {
	if p.bar == nil {
		p.bar = newProgress(p.stderr, total, p.what)
	}
	p.bar.Set64(done)
}

// end takes the bar off the terminal; the command calls it before it
// prints anything.
func (p *rewriteProgress) end(err error) {
	if p != nil && p.bar != nil {
		endProgress(p.bar, err)
	}
}

// segmentBytes sums what the segments take in their files.
func segmentBytes(segs []snapshotfmt.Segment) int64 {
	var n int64
	for _, s := range segs {
		n += s.Length
	}
	return n
}
