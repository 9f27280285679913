package inspect

import (
	"maps"
	"math"
	"slices"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/ttl"
)

// smallSizes is how many value sizes a sizeHist counts in an array; larger
// sizes go to a map. Most values are small, so the common case costs an
// array increment, and the map holds few distinct sizes.
const smallSizes = 1024

// sizeHist is the exact distribution of value sizes: percentiles are exact
// and workers' histograms merge by addition.
type sizeHist struct {
	small *[smallSizes]uint64
	large map[int]uint64
	n     uint64
	max   int
}

func (h *sizeHist) add(size int) { h.addN(size, 1) }

// addAll adds a batch of sizes. Values of a state mostly have one size, so
// it counts each run of equal sizes in a register and adds it at once.
func (h *sizeHist) addAll(sizes []int) {
	for i := 0; i < len(sizes); {
		size, j := sizes[i], i+1
		for j < len(sizes) && sizes[j] == size {
			j++
		}
		h.addN(size, uint64(j-i))
		i = j
	}
}

// addN adds n values of one size.
func (h *sizeHist) addN(size int, n uint64) {
	if size < smallSizes {
		h.smallArray()[size] += n
		h.max = max(h.max, size)
	} else {
		h.addLarge(size, n)
	}
	h.n += n
}

// smallArray is h.small, allocated if need be.
func (h *sizeHist) smallArray() *[smallSizes]uint64 {
	if h.small == nil {
		h.small = new([smallSizes]uint64)
	}
	return h.small
}

// addLarge adds n values of a size of smallSizes or more, all but to the
// count of values, for addN and for an iterator that counts sizes into
// small itself (counted).
func (h *sizeHist) addLarge(size int, n uint64) {
	if h.large == nil {
		h.large = map[int]uint64{}
	}
	h.large[size] += n
	h.max = max(h.max, size)
}

// counted takes in n values that an iterator counted into h.small itself,
// and into h.large by addLarge.
func (h *sizeHist) counted(n uint64) {
	h.n += n
	for size := smallSizes - 1; size > h.max; size-- {
		if h.small[size] > 0 {
			h.max = size
			break
		}
	}
}

func (h *sizeHist) merge(o *sizeHist) {
	if o.small != nil {
		if h.small == nil {
			h.small = new([smallSizes]uint64)
		}
		for i, c := range o.small {
			h.small[i] += c
		}
	}
	for s, c := range o.large {
		if h.large == nil {
			h.large = map[int]uint64{}
		}
		h.large[s] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// percentile returns the nearest-rank percentile: the smallest size such
// that at least p percent of the values are no larger. It is 0 for an empty
// histogram.
func (h *sizeHist) percentile(p float64) int {
	if h.n == 0 {
		return 0
	}
	rank := max(uint64(math.Ceil(p/100*float64(h.n))), 1)
	var seen uint64
	if h.small != nil {
		for size, c := range h.small {
			if seen += c; seen >= rank {
				return size
			}
		}
	}
	for _, size := range slices.Sorted(maps.Keys(h.large)) {
		if seen += h.large[size]; seen >= rank {
			return size
		}
	}
	return h.max
}

// skew is the largest key group's entries against the mean over every key
// group of the max parallelism, empty ones included: 1 is a perfect spread,
// and a state whose entries sit in one key group of 128 has skew 128.
func skew(stats []savepoint.Stats, maxParallelism int) float64 {
	var total, largest uint64
	for _, s := range stats {
		total += s.Entries
		largest = max(largest, s.Entries)
	}
	if total == 0 || maxParallelism <= 0 {
		return 0
	}
	return float64(largest) * float64(maxParallelism) / float64(total)
}

// ageBuckets splits the ages of TTL entries (now minus last modified) at
// fractions of the TTL, so that every state's histogram reads the same
// way: four quarters of the TTL for live entries, then up to twice the TTL
// and beyond for entries that are expired but still stored (a leak shows
// there).
var ageBuckets = [...]struct{ num, den int64 }{{1, 4}, {1, 2}, {3, 4}, {1, 1}, {2, 1}}

// ageHist.add compares with its six cuts one by one: these fail to compile
// unless there are five buckets.
var (
	_ [len(ageBuckets) - 5]struct{}
	_ [5 - len(ageBuckets)]struct{}
)

// ageHist counts TTL entries by age at a given time. It is on the path of
// every TTL entry a scan reads, so placing one takes no branch.
type ageHist struct {
	ttlMillis, now int64
	// bounds are the upper bounds, in milliseconds of age, of every bucket
	// but the last, which is open. cuts[0] is now and cuts[i+1] is bound i
	// as a last-modified time (now - bound), so that placing an entry takes
	// no subtraction.
	bounds [len(ageBuckets)]int64
	cuts   [len(ageBuckets) + 1]int64
	// slots[0] counts entries last modified after now; slots[i+1] counts
	// bucket i.
	slots [len(ageBuckets) + 2]uint64
	// The entries that ttl.Expired calls expired at now are those last
	// modified at or before lastExpired, when anyExpired. That threshold is
	// normally a cut, and then expiredFrom is its slot: the expired
	// entries are the slots from there on. Otherwise expiredFrom is -1 and
	// add counts them in expired.
	expiredFrom int
	expired     uint64
	lastExpired int64
}

func newAgeHist(ttlMillis, now int64) *ageHist {
	h := &ageHist{ttlMillis: ttlMillis, now: now, expiredFrom: -1}
	h.cuts[0] = now
	for i, b := range ageBuckets {
		h.bounds[i] = fraction(ttlMillis, b.num, b.den)
		h.cuts[i+1] = satSub(now, h.bounds[i])
	}
	last, any := ttl.LastExpired(ttlMillis, now)
	switch {
	case !any:
		h.expiredFrom = len(h.slots)
	case ttlMillis > 0:
		for i, c := range h.cuts {
			if c == last {
				// An entry at or before cut i lies in a slot after i,
				// and only such an entry does, since the cuts never
				// increase.
				h.expiredFrom = i + 1
				break
			}
		}
	}
	h.lastExpired = last
	return h
}

func (h *ageHist) add(lastModified int64) {
	// The slot is the number of cuts at or after the time, counted without
	// branches: ages are in no order, so branches on them are mispredicted.
	// Written out rather than as a loop, which took twice as long.
	c := &h.cuts
	i := b2i(lastModified <= c[0]) + b2i(lastModified <= c[1]) + b2i(lastModified <= c[2]) +
		b2i(lastModified <= c[3]) + b2i(lastModified <= c[4]) + b2i(lastModified <= c[5])
	h.slots[i]++
	if h.expiredFrom < 0 {
		h.expired += uint64(b2i(lastModified <= h.lastExpired))
	}
}

// addAll adds a batch of last-modified times. It counts, for each cut, the
// times at or before it in local variables: no memory is written per time,
// where add increments a slot that depends on the time. It takes the cuts
// in two passes over the batch, since the counters and cuts of all six
// would not stay in registers at once. The cuts never increase (a TTL is at
// least a millisecond), so the slot counts are the differences of those
// counts.
func (h *ageHist) addAll(times []int64) {
	c0, c1, c2 := h.cuts[0], h.cuts[1], h.cuts[2]
	var n0, n1, n2 int
	for _, t := range times {
		n0 += b2i(t <= c0)
		n1 += b2i(t <= c1)
		n2 += b2i(t <= c2)
	}
	c3, c4, c5, last := h.cuts[3], h.cuts[4], h.cuts[5], h.lastExpired
	var n3, n4, n5, expired int
	if h.expiredFrom < 0 {
		for _, t := range times {
			n3 += b2i(t <= c3)
			n4 += b2i(t <= c4)
			n5 += b2i(t <= c5)
			expired += b2i(t <= last)
		}
		h.expired += uint64(expired)
	} else {
		for _, t := range times {
			n3 += b2i(t <= c3)
			n4 += b2i(t <= c4)
			n5 += b2i(t <= c5)
		}
	}
	h.slots[0] += uint64(len(times) - n0)
	h.slots[1] += uint64(n0 - n1)
	h.slots[2] += uint64(n1 - n2)
	h.slots[3] += uint64(n2 - n3)
	h.slots[4] += uint64(n3 - n4)
	h.slots[5] += uint64(n4 - n5)
	h.slots[6] += uint64(n5)
}

// atOrBefore are the times that addCounts takes the counts of: the cuts,
// then lastExpired when the expired entries are not a run of slots.
func (h *ageHist) atOrBefore() []int64 {
	if h.expiredFrom < 0 {
		return append(h.cuts[:], h.lastExpired)
	}
	return h.cuts[:]
}

// addCounts adds n times, of which counts[i] lie at or before the ith time
// of atOrBefore: what addAll adds for those times.
func (h *ageHist) addCounts(n uint64, counts []uint64) {
	h.slots[0] += n - counts[0]
	for i := 1; i < len(h.cuts); i++ {
		h.slots[i] += counts[i-1] - counts[i]
	}
	h.slots[len(h.cuts)] += counts[len(h.cuts)-1]
	if h.expiredFrom < 0 {
		h.expired += counts[len(h.cuts)]
	}
}

// b2i is 1 for true. The compiler turns it into a flag move, not a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (h *ageHist) merge(o *ageHist) {
	for i := range h.slots {
		h.slots[i] += o.slots[i]
	}
	h.expired += o.expired
}

// future is the number of entries last modified after now.
func (h *ageHist) future() uint64 { return h.slots[0] }

// counts are the entries per bucket.
func (h *ageHist) counts() []uint64 { return h.slots[1:] }

// expiredCount is the number of entries expired at now.
func (h *ageHist) expiredCount() uint64 {
	if h.expiredFrom < 0 {
		return h.expired
	}
	var n uint64
	for _, c := range h.slots[h.expiredFrom:] {
		n += c
	}
	return n
}

// bucket returns the age range [from, to) of bucket i; to is -1 for the
// open last bucket.
func (h *ageHist) bucket(i int) (from, to int64) {
	if i > 0 {
		from = h.bounds[i-1]
	}
	to = -1
	if i < len(h.bounds) {
		to = h.bounds[i]
	}
	return from, to
}

// satSub returns a - b, saturating at the largest and smallest int64, so
// that extreme times do not wrap around.
func satSub(a, b int64) int64 {
	d := a - b
	if (a >= 0) != (b >= 0) && (d >= 0) != (a >= 0) {
		if a >= 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return d
}

// fraction returns ttl * num / den without overflow for the small num and
// den of ageBuckets, saturating at the largest int64, so that the bounds
// stay in order for any TTL.
func fraction(ttl, num, den int64) int64 {
	whole := satMul(ttl/den, num)
	if whole == math.MaxInt64 {
		return whole
	}
	return whole + ttl%den*num/den
}

// satMul returns a * b for b > 0, saturating at the largest int64.
func satMul(a, b int64) int64 {
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}
