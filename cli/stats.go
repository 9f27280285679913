package cli

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

func (h *sizeHist) add(size int) {
	if size < smallSizes {
		if h.small == nil {
			h.small = new([smallSizes]uint64)
		}
		h.small[size]++
	} else {
		if h.large == nil {
			h.large = map[int]uint64{}
		}
		h.large[size]++
	}
	h.n++
	h.max = max(h.max, size)
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

// ageHist counts TTL entries by age at a given time.
type ageHist struct {
	ttlMillis, now int64
	// bounds are the upper bounds, in milliseconds of age, of every bucket
	// but the last, which is open; cuts are the same bounds as last-modified
	// times (now - bound), so that placing an entry takes no subtraction.
	bounds, cuts [len(ageBuckets)]int64
	counts       [len(ageBuckets) + 1]uint64
	// future counts entries last modified after now.
	future uint64
	// expired counts the entries that ttl.Expired calls expired at now:
	// those last modified at or before lastExpired, when anyExpired is 1.
	expired     uint64
	lastExpired int64
	anyExpired  int
}

func newAgeHist(ttlMillis, now int64) *ageHist {
	h := &ageHist{ttlMillis: ttlMillis, now: now}
	if last, ok := ttl.LastExpired(ttlMillis, now); ok {
		h.lastExpired, h.anyExpired = last, 1
	}
	for i, b := range ageBuckets {
		h.bounds[i] = fraction(ttlMillis, b.num, b.den)
		h.cuts[i] = satSub(now, h.bounds[i])
	}
	return h
}

func (h *ageHist) add(lastModified int64) {
	h.expired += uint64(b2i(lastModified <= h.lastExpired) & h.anyExpired)
	if lastModified > h.now {
		h.future++
		return
	}
	// An age at or above bound i is a last-modified time at or before cut
	// i. The cuts decrease, so the bucket is the number of cuts at or after
	// the time, counted without branches.
	i := 0
	for _, c := range &h.cuts {
		i += b2i(lastModified <= c)
	}
	h.counts[i]++
}

// b2i is 1 for true. The compiler turns it into a flag move, not a
// branch: ages are in no order, so branches on them are mispredicted.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (h *ageHist) merge(o *ageHist) {
	for i := range h.counts {
		h.counts[i] += o.counts[i]
	}
	h.future += o.future
	h.expired += o.expired
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
