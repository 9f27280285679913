package savepoint

import (
	"math"
	"testing"
)

// Every bucket's range holds the values that map to it, the ranges tile
// the numbers without gaps, and buckets increase with the value.
func TestSizeBucketsTile(t *testing.T) {
	var next uint64
	for b := range SizeBuckets {
		lo, hi := SizeBucketRange(b)
		if lo != next || hi < lo {
			t.Fatalf("bucket %d holds %d to %d, want it to start at %d", b, lo, hi, next)
		}
		for _, v := range []uint64{lo, hi, lo + (hi-lo)/2} {
			if got := SizeBucket(v); got != b {
				t.Fatalf("SizeBucket(%d) = %d, want %d", v, got, b)
			}
		}
		if b >= histExact && float64(hi-lo+1) > float64(lo)/8 {
			t.Fatalf("bucket %d holds %d to %d: wider than 1/8 of its lower bound", b, lo, hi)
		}
		next = hi + 1
	}
	if next != 0 {
		t.Fatalf("the last bucket ends before 2^64 - 1")
	}
	// The values FORMAT.md works through.
	for v, b := range map[uint64]int{0: 0, 8: 8, 15: 15, 16: 16, 17: 16, 18: 17, 31: 23, 32: 24, 604699999: 217} {
		if got := SizeBucket(v); got != b {
			t.Errorf("SizeBucket(%d) = %d, want %d", v, got, b)
		}
	}
}

func TestModifiedBucketsTile(t *testing.T) {
	next := int64(math.MinInt64)
	for k := range ModifiedBuckets {
		lo, hi := ModifiedBucketRange(k)
		if lo != next || hi < lo {
			t.Fatalf("bucket %d holds %d to %d, want it to start at %d", k, lo, hi, next)
		}
		for _, x := range []int64{lo, hi, lo + (hi-lo)/2} {
			if got := ModifiedBucket(x); got != k {
				t.Fatalf("ModifiedBucket(%d) = %d, want %d", x, got, k)
			}
		}
		if hi == math.MaxInt64 {
			if k != ModifiedBuckets-1 {
				t.Fatalf("bucket %d reaches the largest offset before the last bucket", k)
			}
			break
		}
		next = hi + 1
	}
	if SizeBucket(1<<63) != zeroBucket || ModifiedBucket(math.MaxInt64) != ModifiedBuckets-1 || ModifiedBucket(math.MinInt64) != 0 {
		t.Fatalf("the constants disagree with the buckets")
	}
	// The anchor is the top of a bucket: nothing expired at it shares a
	// bucket with anything that is not.
	if lo, hi := ModifiedBucketRange(ModifiedBucket(0)); hi != 0 || ModifiedBucket(1) != ModifiedBucket(0)+1 {
		t.Fatalf("offset 0 is in bucket %d to %d", lo, hi)
	}
}

func TestExpiryOffsetSaturates(t *testing.T) {
	for _, c := range []struct{ t, ttl, anchor, want int64 }{
		{1_700_000_000_000, 604_800_000, 1_700_000_100_000, 604_700_000},
		{math.MaxInt64 - 5, 10, 0, math.MaxInt64},
		{math.MaxInt64 - 5, 10, -10, math.MaxInt64},
		{math.MinInt64, 10, 100, math.MinInt64},
		{0, 10, math.MinInt64, math.MaxInt64},
	} {
		if got := ExpiryOffset(c.t, c.ttl, c.anchor); got != c.want {
			t.Errorf("ExpiryOffset(%d, %d, %d) = %d, want %d", c.t, c.ttl, c.anchor, got, c.want)
		}
	}
}
