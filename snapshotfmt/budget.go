package snapshotfmt

import (
	"context"

	"golang.org/x/sync/semaphore"

	"github.com/stateproc/stateproc/internal/workers"
)

// BlockMemory is what the block readers of one process hold at once, all
// savepoints and goroutines together, in buffers beyond each reader's
// small own ones (a read window of readAhead, a decompression buffer of
// pooledRawLimit): the windows of large stored blocks, the buffers large
// compressed blocks decompress into, and the zstd windows of streamed
// blocks. Without it a savepoint of a few large blocks took a quarter of a
// gigabyte per core, whatever the size of its entries.
//
// A worker of internal/workers.Run that holds nothing waits for its share;
// one that already holds some, and every reader outside Run (which may hold
// several iterators at once in one goroutine, as a restore does), takes it
// when it is free and goes over the budget otherwise, so that nobody waits
// on memory that only it could give back. A single buffer larger than the
// budget waits for all of it.
const BlockMemory = 64 << 20

var blockMemory = newBudget(BlockMemory)

type budget struct {
	limit int64
	sem   *semaphore.Weighted
}

func newBudget(limit int64) *budget {
	return &budget{limit: limit, sem: semaphore.NewWeighted(limit)}
}

// grant is what one block reader holds of the budget. counted is the part
// taken from the semaphore, which release gives back; the rest went over
// the budget.
type grant struct {
	b       *budget
	slot    *workers.Slot
	size    int64
	counted int64
}

// reserve makes g cover n bytes in all, for buffers about to be allocated.
// It never shrinks g; release does.
func (g *grant) reserve(ctx context.Context, n int64) error {
	if n <= g.size {
		return nil
	}
	if g.slot == nil {
		g.slot = workers.SlotOf(ctx)
	}
	more := min(n-g.size, g.b.limit)
	if g.b.sem.TryAcquire(more) {
		g.take(n, more)
		return nil
	}
	if g.slot == nil || g.slot.Held() > g.counted {
		// Outside Run, or holding memory elsewhere: waiting could wait on
		// ourselves.
		g.size = n
		return nil
	}
	// The slot holds nothing but this grant: give it back and wait for the
	// whole, so that two readers growing at once cannot each hold half.
	g.release()
	want := min(n, g.b.limit)
	if err := g.b.sem.Acquire(ctx, want); err != nil {
		return err
	}
	g.take(n, want)
	return nil
}

func (g *grant) take(size, counted int64) {
	g.size = size
	g.counted += counted
	if g.slot != nil {
		g.slot.Hold(counted)
	}
}

// release gives back all of g.
func (g *grant) release() {
	if g.counted > 0 {
		g.b.sem.Release(g.counted)
		if g.slot != nil {
			g.slot.Hold(-g.counted)
		}
	}
	g.size, g.counted = 0, 0
}
