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
	nested := SlotOf(ctx) != nil
	for w := range min(workers, n) {
		g.Go(func() error {
			ctx := ctx
			if !nested {
				ctx = context.WithValue(ctx, slotKey{}, &Slot{})
			}
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

// Slot stands for one goroutine of Run towards what it calls, through the
// context: a memory budget shared by the workers lets a worker wait for
// memory only while its slot holds none, since then it is not the one that
// must give some back, and so the workers never wait on each other in a
// circle. The goroutines of a Run nested in a worker share that worker's
// slot.
type Slot struct {
	held atomic.Int64
}

type slotKey struct{}

// SlotOf returns the slot of the worker that ctx belongs to, or nil outside
// Run.
func SlotOf(ctx context.Context) *Slot {
	s, _ := ctx.Value(slotKey{}).(*Slot)
	return s
}

// Held is what the slot holds of a budget.
func (s *Slot) Held() int64 { return s.held.Load() }

// Hold adds n, negative to give back, to what the slot holds.
func (s *Slot) Hold(n int64) { s.held.Add(n) }
