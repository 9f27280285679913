package savepoint

import (
	"math"
	"math/bits"
)

// Histogram counts values in fixed log-scale buckets: its nonzero buckets
// in increasing order. A layout that keeps histograms in its index gives
// one per segment; nil means the layout does not record it.
//
// The buckets of a non-negative number v are exact below 16; above, each
// power of two [2^n, 2^(n+1)) splits into 8 buckets of equal width, so a
// bucket is at most 1/8 of its lower bound wide. The scheme is the
// snapshot format's (FORMAT.md, "Histograms"); it never changes, so
// histograms of different segments and savepoints add up bucket by bucket.
type Histogram []HistBucket

// HistBucket is one nonzero bucket of a Histogram.
type HistBucket struct {
	Bucket int
	Count  uint64
}

// Total is the number of values counted.
func (h Histogram) Total() uint64 {
	var n uint64
	for _, b := range h {
		n += b.Count
	}
	return n
}

const (
	// histSubBits is log2 of the buckets per power of two.
	histSubBits = 3
	histExact   = 2 << histSubBits // values below are their own bucket
)

// SizeBuckets is the number of buckets of a non-negative number: the
// bucket of math.MaxUint64 is SizeBuckets - 1.
const SizeBuckets = (64-histSubBits-1)<<histSubBits + histExact

// SizeBucket is the bucket of v.
func SizeBucket(v uint64) int {
	n := bits.Len64(v)
	if n <= histSubBits+1 {
		return int(v)
	}
	shift := n - histSubBits - 1
	return shift<<histSubBits + int(v>>shift)
}

// SizeBucketRange is the smallest and largest value of bucket i.
func SizeBucketRange(i int) (lo, hi uint64) {
	if i < histExact {
		return uint64(i), uint64(i)
	}
	shift := i>>histSubBits - 1
	m := uint64(i - shift<<histSubBits)
	lo = m << shift
	return lo, lo + (1<<shift - 1)
}

// zeroBucket is the last-modified bucket of expiry offset 0, below which
// lie the buckets of the negative offsets down to -2^63 (bucket 0).
const zeroBucket = (63-histSubBits)<<histSubBits + histExact/2 // SizeBucket(1 << 63)

// ModifiedBuckets is the number of buckets of a TTL last-modified
// histogram: those of offsets up to 0, and those of 1 to 2^63 - 1.
const ModifiedBuckets = zeroBucket + 1 + (62-histSubBits)<<histSubBits + histExact // ... + SizeBucket(1<<63 - 2) + 1

// ExpiryOffset is where an entry last modified at lastModified, under a TTL
// of ttlMillis, lies in a last-modified histogram anchored at anchor: its
// expiry time (lastModified + TTL, saturating, as the TTL rule has it)
// minus the anchor, saturating. It is at most 0 exactly when the entry is
// expired at anchor.
func ExpiryOffset(lastModified, ttlMillis, anchor int64) int64 {
	e := lastModified
	if ttlMillis > 0 && e > math.MaxInt64-ttlMillis {
		e = math.MaxInt64
	} else {
		e += ttlMillis
	}
	d := e - anchor
	// Overflow when the signs of e and anchor differ and d's sign is not e's.
	if (e >= 0) != (anchor >= 0) && (d >= 0) != (e >= 0) {
		if e >= 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return d
}

// ModifiedBucket is the bucket of expiry offset x. Buckets increase with x:
// x <= 0 takes the buckets of -x counted downwards, x > 0 those of x - 1
// upwards, so that 0 is the top of a bucket and the entries expired at the
// anchor are a whole number of buckets.
func ModifiedBucket(x int64) int {
	if x <= 0 {
		return zeroBucket - SizeBucket(-uint64(x))
	}
	return zeroBucket + 1 + SizeBucket(uint64(x-1))
}

// ModifiedBucketRange is the smallest and largest expiry offset of bucket k.
func ModifiedBucketRange(k int) (lo, hi int64) {
	if k <= zeroBucket {
		ulo, uhi := SizeBucketRange(zeroBucket - k)
		return negate(uhi), negate(ulo)
	}
	ulo, uhi := SizeBucketRange(k - zeroBucket - 1)
	return clampInt64(ulo) + 1, clampInt64(uhi) + 1
}

// negate returns -u as an int64, saturating at math.MinInt64.
func negate(u uint64) int64 {
	if u >= 1<<63 {
		return math.MinInt64
	}
	return -int64(u)
}

// clampInt64 returns u, at most math.MaxInt64 - 1, so that one more still
// fits.
func clampInt64(u uint64) int64 {
	if u >= math.MaxInt64 {
		return math.MaxInt64 - 1
	}
	return int64(u)
}
