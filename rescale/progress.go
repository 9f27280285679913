package rescale

import (
	"math/bits"
	"sync/atomic"

	"github.com/stateproc/stateproc/rewrite"
)

// A re-bucketed operator is read twice: its segments while it is
// partitioned, then its spill files while they are sorted and written. The
// meter counts its bytes of input once in all, part in each pass, so that
// it ends at the input's size.

// firstPassShare is the part of a segment's bytes counted once the
// partition has spilled it: a quarter, since partitioning takes about a
// quarter of the time of re-bucketing on the generated savepoints, the
// rest going to sorting, encoding and writing.
func firstPassShare(n int64) int64 { return n / 4 }

// secondPass counts the rest of an operator's bytes as its buckets are
// written, each bucket in proportion to its spill bytes. A bucket's share
// is the growth of owed × sorted / spilled over the bucket, so that the
// shares add up to owed whatever order the writers finish buckets in.
type secondPass struct {
	m       *rewrite.Meter
	owed    uint64
	spilled uint64
	sorted  atomic.Uint64
}

func newSecondPass(m *rewrite.Meter, owed int64, spills spillFiles) *secondPass {
	s := &secondPass{m: m, owed: uint64(owed)}
	for _, w := range spills {
		for _, f := range w {
			s.spilled += uint64(f.Size)
		}
	}
	if s.spilled == 0 {
		// Nothing to sort: the operator is done.
		m.Add(owed)
	}
	return s
}

// add counts a bucket of size spill bytes written.
func (s *secondPass) add(size int64) {
	if s.m == nil || size == 0 {
		return
	}
	end := s.sorted.Add(uint64(size))
	s.m.Add(int64(s.part(end) - s.part(end-uint64(size))))
}

// part is owed × sorted / spilled, rounded down, without overflow: sorted
// is at most spilled, so the quotient fits in 64 bits.
func (s *secondPass) part(sorted uint64) uint64 {
	hi, lo := bits.Mul64(sorted, s.owed)
	q, _ := bits.Div64(hi, lo, s.spilled)
	return q
}
