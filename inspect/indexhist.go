package inspect

import (
	"math"

	"github.com/stateproc/stateproc/savepoint"
)

// SizeRanges are value-size percentiles from the index's histograms: each
// the range of the bucket that holds it.
type SizeRanges struct {
	P50 SizeRange `json:"p50"`
	P99 SizeRange `json:"p99"`
	Max SizeRange `json:"max"`
}

// SizeRange is a range of value sizes in bytes, both ends included.
type SizeRange struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

// AgeRanges are Ages from the index's last-modified histograms: each count
// lies between Min and Max, and is exact where they meet, which they do
// for the expired count at the savepoint's creation time.
type AgeRanges struct {
	Buckets []AgeRangeBucket `json:"buckets"`
	Future  CountRange       `json:"future"`
	Expired CountRange       `json:"expired"`
}

// AgeRangeBucket is one range of ages, [From, To), as in AgeBucket.
type AgeRangeBucket struct {
	FromMillis int64      `json:"from_ms"`
	ToMillis   *int64     `json:"to_ms,omitempty"`
	Entries    CountRange `json:"entries"`
}

// CountRange bounds a count of entries.
type CountRange struct {
	Min uint64 `json:"min"`
	Max uint64 `json:"max"`
}

// Exact reports whether the count is known.
func (c CountRange) Exact() bool { return c.Min == c.Max }

// indexHists gathers the histograms of one state's segments.
type indexHists struct {
	sizes [savepoint.SizeBuckets]uint64
	n     uint64
	// segs holds the segments of a TTL state, whose last-modified
	// histograms may each have their own anchor.
	segs []savepoint.Stats
}

// add counts a segment's histograms; it returns false when the segment has
// none, so that the state's figures need a scan.
func (h *indexHists) add(s *savepoint.Stats, ttlOn bool) bool {
	if s.Sizes == nil || ttlOn && s.Modified == nil {
		return false
	}
	for _, b := range s.Sizes {
		h.sizes[b.Bucket] += b.Count
		h.n += b.Count
	}
	if ttlOn {
		h.segs = append(h.segs, *s)
	}
	return true
}

func (h *indexHists) sizeRanges() *SizeRanges {
	if h.n == 0 {
		return nil
	}
	return &SizeRanges{P50: h.percentile(50), P99: h.percentile(99), Max: h.percentile(100)}
}

// percentile is the bucket of the nearest-rank percentile, as sizeHist's.
func (h *indexHists) percentile(p float64) SizeRange {
	rank := max(uint64(math.Ceil(p/100*float64(h.n))), 1)
	var seen uint64
	for b, c := range h.sizes {
		if seen += c; seen >= rank {
			lo, hi := savepoint.SizeBucketRange(b)
			return SizeRange{lo, hi}
		}
	}
	return SizeRange{}
}

// ageRanges places the last-modified histograms at now in the buckets of
// the scan's ageHist. An entry of expiry offset x from its segment's anchor
// a was last modified at x + a - ttl, so each question about last-modified
// times is a range of x per segment.
func (h *indexHists) ageRanges(ttlMillis, now int64) *AgeRanges {
	if len(h.segs) == 0 {
		return nil
	}
	ref := newAgeHist(ttlMillis, now)
	out := &AgeRanges{}
	for i := range ref.counts() {
		from, to := ref.bucket(i)
		b := AgeRangeBucket{FromMillis: from}
		if to >= 0 {
			b.ToMillis = &to
		}
		out.Buckets = append(out.Buckets, b)
	}
	for _, s := range h.segs {
		// Times as expiry offsets of this segment: a last-modified time t
		// is offset t + ttl - anchor.
		off := func(t int64) int64 { return savepoint.ExpiryOffset(t, ttlMillis, s.Anchor) }
		// Ages [from, to) are last-modified times in (now - to, now - from].
		for i := range out.Buckets {
			from, to := ref.bucket(i)
			upper := off(satSub(now, from))
			lower := int64(math.MinInt64)
			if to >= 0 {
				lower = off(satSub(now, to))
			}
			out.Buckets[i].Entries.add(countIn(s.Modified, lower, upper, to < 0))
		}
		out.Future.add(countIn(s.Modified, off(now), math.MaxInt64, false))
		// Expired at now: expiry at or before now, an offset at most
		// now - anchor.
		out.Expired.add(countIn(s.Modified, math.MinInt64, satSub(now, s.Anchor), true))
	}
	return out
}

func (c *CountRange) add(o CountRange) { c.Min += o.Min; c.Max += o.Max }

// countIn bounds the entries of h whose offset x lies in (lower, upper],
// or [lower, upper] when closed: a bucket wholly inside counts for both
// bounds, one that straddles an end for the upper bound only.
func countIn(h savepoint.Histogram, lower, upper int64, closed bool) CountRange {
	var c CountRange
	for _, b := range h {
		lo, hi := savepoint.ModifiedBucketRange(b.Bucket)
		inLower := lo > lower || closed && lo >= lower
		overLower := hi > lower || closed && hi >= lower
		switch {
		case inLower && hi <= upper:
			c.Min += b.Count
			c.Max += b.Count
		case overLower && lo <= upper:
			c.Max += b.Count
		}
	}
	return c
}
