package bootstrap

import (
	"context"
	"errors"
	"fmt"

	"github.com/stateproc/stateproc/internal/extsort"
)

// spilling partitions the keyed entries into buckets of key groups, each
// bucket one spill file per worker, which Commit sorts one at a time.
type spilling struct {
	// ops is the operator of each bucket.
	ops []int
	// first is the index of each operator's first bucket, per is the key
	// groups a bucket of it covers (0: the operator is not keyed).
	first, per []int
	free       chan *extsort.Spiller
	spillers   []*extsort.Spiller
}

// maxOpenSpills bounds the spill files open at once, over all workers.
const maxOpenSpills = 512

// newSpilling makes the buckets of the keyed operators of maxP (one max
// parallelism per operator, 0 for one without keyed state), shared in
// proportion to it, and one spiller per worker. Buckets are many so that
// one fits the sort's memory for any input the spill disk holds, and few
// enough that every worker keeps a file open for each.
func newSpilling(dir string, maxP []int, workers, memory int) *spilling {
	total := 0
	for _, p := range maxP {
		total += p
	}
	want := min(total, max(8, maxOpenSpills/workers))
	s := &spilling{first: make([]int, len(maxP)), per: make([]int, len(maxP))}
	for op, p := range maxP {
		s.first[op] = len(s.ops)
		if p == 0 {
			continue
		}
		n := max(1, want*p/max(1, total))
		s.per[op] = (p + n - 1) / n
		for range (p + s.per[op] - 1) / s.per[op] {
			s.ops = append(s.ops, op)
		}
	}
	bufSize := min(64<<10, max(4<<10, memory/2/max(1, workers*len(s.ops))))
	s.free = make(chan *extsort.Spiller, workers)
	for w := range workers {
		sp := extsort.NewSpiller(dir, fmt.Sprintf("w%02d", w), len(s.ops), bufSize)
		s.spillers = append(s.spillers, sp)
		s.free <- sp
	}
	return s
}

func (s *spilling) bucketOf(op, kg int) int { return s.first[op] + kg/s.per[op] }

// take waits for a spiller no one uses.
func (s *spilling) take(ctx context.Context) (*extsort.Spiller, error) {
	select {
	case sp := <-s.free:
		return sp, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *spilling) give(sp *extsort.Spiller) { s.free <- sp }

// finish closes the spill files and returns them by worker, then bucket,
// and their bytes.
func (s *spilling) finish() ([][]extsort.Spill, int64, error) {
	var out [][]extsort.Spill
	var size int64
	var errs []error
	for _, sp := range s.spillers {
		files, err := sp.Close()
		errs = append(errs, err)
		out = append(out, files)
		for _, f := range files {
			size += f.Size
		}
	}
	s.spillers = nil
	return out, size, errors.Join(errs...)
}
