package inspect

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/ttl"
)

func TestSizePercentiles(t *testing.T) {
	var h sizeHist
	// 1..100: the nearest-rank p50 is the 50th value, p99 the 99th.
	for s := 1; s <= 100; s++ {
		h.add(s)
	}
	for _, c := range []struct {
		p    float64
		want int
	}{{50, 50}, {99, 99}, {100, 100}, {0, 1}, {1, 1}, {1.5, 2}} {
		if got := h.percentile(c.p); got != c.want {
			t.Errorf("p%v of 1..100 = %d, want %d", c.p, got, c.want)
		}
	}
	if h.max != 100 || h.n != 100 {
		t.Errorf("max %d n %d, want 100 100", h.max, h.n)
	}
}

func TestSizePercentilesLarge(t *testing.T) {
	// Sizes beyond the array go to the map; the ranks run across both:
	// {8 x 3, 5000, 70000}: p50 is the 3rd of 5 values (8), p80 the 4th
	// (5000), p99 the 5th (70000).
	var a, b sizeHist
	a.add(8)
	a.add(5000)
	b.add(8)
	b.add(8)
	b.add(70000)
	a.merge(&b)
	for _, c := range []struct {
		p    float64
		want int
	}{{50, 8}, {60, 8}, {61, 5000}, {80, 5000}, {99, 70000}} {
		if got := a.percentile(c.p); got != c.want {
			t.Errorf("p%v = %d, want %d", c.p, got, c.want)
		}
	}
	if a.max != 70000 || a.n != 5 {
		t.Errorf("max %d n %d, want 70000 5", a.max, a.n)
	}
	var empty sizeHist
	if got := empty.percentile(50); got != 0 {
		t.Errorf("p50 of nothing = %d, want 0", got)
	}
}

func TestSkew(t *testing.T) {
	st := func(entries ...uint64) []savepoint.Stats {
		var out []savepoint.Stats
		for i, e := range entries {
			out = append(out, savepoint.Stats{KeyGroup: i, Entries: e})
		}
		return out
	}
	for _, c := range []struct {
		stats []savepoint.Stats
		maxP  int
		want  float64
	}{
		// Four key groups of 10 at max parallelism 4: a perfect spread.
		{st(10, 10, 10, 10), 4, 1},
		// 40 entries over 128 key groups, mean 0.3125; the largest holds 25.
		{st(25, 5, 5, 5), 128, 80},
		// Everything in one key group of 128.
		{st(7), 128, 128},
		{nil, 128, 0},
	} {
		if got := skew(c.stats, c.maxP); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("skew(%v, %d) = %v, want %v", c.stats, c.maxP, got, c.want)
		}
	}
}

func TestAgeBuckets(t *testing.T) {
	const now = 1_000_000_000
	const ttlMs = 400 // bounds at 100, 200, 300, 400, 800
	h := newAgeHist(ttlMs, now)
	if want := [...]int64{100, 200, 300, 400, 800}; h.bounds != want {
		t.Fatalf("bounds %v, want %v", h.bounds, want)
	}
	for _, age := range []int64{0, 99, 100, 250, 399, 400, 799, 800, 5000, -1} {
		h.add(now - age)
	}
	// [0,100): 0, 99; [100,200): 100; [200,300): 250; [300,400): 399;
	// [400,800): 400, 799; >= 800: 800, 5000; future: -1.
	if want := []uint64{2, 1, 1, 1, 2, 2}; !slices.Equal(h.counts(), want) {
		t.Errorf("counts %v, want %v", h.counts(), want)
	}
	if h.future() != 1 {
		t.Errorf("future %d, want 1", h.future())
	}
	// ttl.Expired: lastModified + 400 <= now, so ages 400 and beyond.
	if h.expiredFrom < 0 {
		t.Errorf("the expiry threshold of an ordinary TTL is not taken from the buckets")
	}
	if h.expiredCount() != 4 {
		t.Errorf("expired %d, want 4", h.expiredCount())
	}
	from, to := h.bucket(5)
	if from != 800 || to != -1 {
		t.Errorf("last bucket [%d, %d), want [800, open)", from, to)
	}
	o := newAgeHist(ttlMs, now)
	o.add(now - 150)
	h.merge(o)
	if h.counts()[1] != 2 {
		t.Errorf("after merge, bucket 1 holds %d, want 2", h.counts()[1])
	}
}

// TestAgeHistExpiredAgreesWithTheRule checks the expired count, whether it
// is read off the buckets or counted entry by entry, against ttl.Expired.
func TestAgeHistExpiredAgreesWithTheRule(t *testing.T) {
	edges := []int64{math.MinInt64, math.MinInt64 + 1, -1, 0, 1, 1000, math.MaxInt64 - 1, math.MaxInt64}
	rng := rand.New(rand.NewPCG(7, 11))
	for _, ttlMs := range []int64{1, 400, 7 * 24 * 3600 * 1000, math.MaxInt64, -5} {
		for _, now := range append([]int64{1_000_000, rng.Int64()}, edges...) {
			h := newAgeHist(ttlMs, now)
			var want uint64
			times := append([]int64{}, edges...)
			for range 200 {
				times = append(times, now-rng.Int64N(4*max(ttlMs%1_000_000, 1)+1), rng.Int64()-rng.Int64())
			}
			for _, lm := range times {
				h.add(lm)
				if ttl.Expired(lm, ttlMs, now) {
					want++
				}
			}
			if got := h.expiredCount(); got != want {
				t.Errorf("ttl %d, now %d: expired %d, want %d (from slot %d)", ttlMs, now, got, want, h.expiredFrom)
			}
		}
	}
}

func TestAgeBucketsExtremeTimes(t *testing.T) {
	h := newAgeHist(math.MaxInt64, 0)
	for i := 1; i < len(h.bounds); i++ {
		if h.bounds[i] < h.bounds[i-1] {
			t.Errorf("bounds out of order for the largest TTL: %v", h.bounds)
		}
	}
	h.add(math.MinInt64)
	h.add(math.MaxInt64)
	if want := []uint64{0, 0, 0, 0, 0, 1}; !slices.Equal(h.counts(), want) || h.future() != 1 {
		t.Errorf("extreme times: counts %v future %d, want %v and 1", h.counts(), h.future(), want)
	}
	if got := satSub(math.MinInt64, 1); got != math.MinInt64 {
		t.Errorf("satSub(min, 1) = %d", got)
	}
	if got := satSub(math.MaxInt64, -1); got != math.MaxInt64 {
		t.Errorf("satSub(max, -1) = %d", got)
	}
	if got := satSub(5, 7); got != -2 {
		t.Errorf("satSub(5, 7) = %d", got)
	}
}

func TestLongestRun(t *testing.T) {
	for _, c := range []struct {
		in   []uint64
		want uint64
	}{{nil, 0}, {[]uint64{5}, 1}, {[]uint64{3, 1, 3, 2, 3, 1}, 3}, {[]uint64{1, 2, 3}, 1}} {
		if got := longestRun(c.in); got != c.want {
			t.Errorf("longestRun(%v) = %d, want %d", c.in, got, c.want)
		}
	}
}

// TestBatchesAgreeWithSingleAdds checks the batch forms of both histograms,
// which the scan uses, and the ages from counts at the cuts, against adding
// one value at a time.
func TestBatchesAgreeWithSingleAdds(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	// The nows beside the ordinary one put the cuts at the ends of int64
	// and the expiry threshold off them.
	for _, now := range []int64{1_767_758_922_174, math.MinInt64, math.MinInt64 + 3, -1, math.MaxInt64} {
		for _, ttlMs := range []int64{1, 400, 7 * 24 * 3600 * 1000, math.MaxInt64} {
			one, batch := newAgeHist(ttlMs, now), newAgeHist(ttlMs, now)
			times := []int64{math.MinInt64, math.MinInt64 + 1, math.MaxInt64, now, now + 1, satSub(now, ttlMs), satSub(now, ttlMs) + 1}
			for _, c := range one.cuts {
				times = append(times, c, satSub(c, 1), c+min(1, math.MaxInt64-c))
			}
			for range 5000 {
				times = append(times, satSub(now, rng.Int64N(3*max(ttlMs%1_000_000_000, 1))-rng.Int64N(100)))
			}
			for _, tm := range times {
				one.add(tm)
			}
			batch.addAll(times[:17])
			batch.addAll(times[17:])
			if one.slots != batch.slots || one.expiredCount() != batch.expiredCount() {
				t.Errorf("now %d, ttl %d: batches give slots %v, %d expired; single adds %v, %d",
					now, ttlMs, batch.slots, batch.expiredCount(), one.slots, one.expiredCount())
			}
			// The counts at or before each cut, as an iterator gives them.
			counted := newAgeHist(ttlMs, now)
			cuts := counted.atOrBefore()
			counts := make([]uint64, len(cuts))
			for _, tm := range times {
				for i, c := range cuts {
					counts[i] += uint64(b2i(tm <= c))
				}
			}
			counted.addCounts(uint64(len(times)), counts)
			if one.slots != counted.slots || one.expiredCount() != counted.expiredCount() {
				t.Errorf("now %d, ttl %d: counts give slots %v, %d expired; single adds %v, %d",
					now, ttlMs, counted.slots, counted.expiredCount(), one.slots, one.expiredCount())
			}
		}
	}
	var one, batch sizeHist
	sizes := []int{8, 8, 8, 0, 0, smallSizes - 1, smallSizes, smallSizes, 5000, 8}
	for range 3000 {
		sizes = append(sizes, []int{8, 8, 8, 16, 2000}[rng.IntN(5)])
	}
	for _, s := range sizes {
		one.add(s)
	}
	batch.addAll(sizes[:5])
	batch.addAll(sizes[5:])
	if *one.small != *batch.small || !maps.Equal(one.large, batch.large) || one.n != batch.n || one.max != batch.max {
		t.Errorf("size batches differ from single adds: n %d/%d max %d/%d", batch.n, one.n, batch.max, one.max)
	}
}
