// Package workers runs independent pieces of work, such as the segments of
// a scan or the files of an export, on a fixed number of goroutines: the
// one worker loop of the module.
package workers

import (
	"context"
	"runtime"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// Default is the number of workers when none is asked for: one per core the
// Go runtime may use.
func Default() int { return runtime.GOMAXPROCS(0) }

// Run calls do for every item 0..n-1 on min(workers, n) goroutines
// (Default when workers is 0 or less). Each goroutine takes the next item
// when it is done with one, so items start in order and a goroutine that
// meets short items does more of them. worker numbers the goroutine, from
// 0, so that do may keep state per worker without locks. The first error
// cancels the context the others are given and is returned once every
// goroutine has stopped.
func Run(ctx context.Context, n, workers int, do func(ctx context.Context, worker, item int) error) error {
	if workers <= 0 {
		workers = Default()
	}
	g, ctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	for w := range min(workers, n) {
		g.Go(func() error {
			for {
				if err := ctx.Err(); err != nil {
					return err
				}
				i := int(next.Add(1) - 1)
				if i >= n {
					return nil
				}
				if err := do(ctx, w, i); err != nil {
					return err
				}
			}
		})
	}
	return g.Wait()
}
