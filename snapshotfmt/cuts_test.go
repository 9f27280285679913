package snapshotfmt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
)

// cutsSavepoint writes the TTL value state (ref 0, TTL a day) and the TTL
// map state (ref 2, TTL a week) of testMeta's operator, in key group kg,
// with last-modified times from times, in blocks of blockSize.
func cutsSavepoint(t *testing.T, kg int, times []int64, blockSize int) *memDir {
	t.Helper()
	var keys []string
	for i := 0; len(keys) < len(times); i++ {
		if k := fmt.Sprintf("user-%05d", i); keygroup.Of([]byte(k), 16) == kg {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var value, mp []savepoint.Entry
	for i, k := range keys {
		value = append(value, savepoint.Entry{Key: []byte(k), Value: append(ts(times[i]), "session"[:i%8]...)})
		// Three map entries a key: enough for runs of items in a record.
		for j := range 3 {
			tm := times[(i+j*7)%len(times)]
			mp = append(mp, savepoint.Entry{Key: []byte(k), MapKey: fmt.Appendf(nil, "c%d", j), Value: append(ts(tm), byte(j))})
		}
	}
	d := newMemDir()
	data := []segData{{op: 0, ref: 0, kg: kg, entries: value}, {op: 0, ref: 2, kg: kg, entries: mp}}
	writeSavepoint(t, d, testMeta(), data, Options{BlockSize: blockSize})
	return d
}

// TestCountTimesAgreesWithTheTimes reads TTL segments with CountTimes, in
// batches of several sizes and in small and default blocks (so that some
// values come through the per-item path and some through the batch loops),
// and compares each count with the times that Next reads.
func TestCountTimesAgreesWithTheTimes(t *testing.T) {
	const anchor, day = 1_700_000_000_000, 24 * 3600 * 1000
	rng := rand.New(rand.NewPCG(3, 4))
	ordinary := make([]int64, 600)
	for i := range ordinary {
		ordinary[i] = anchor - rng.Int64N(20*day) + rng.Int64N(day)
	}
	// Times beyond 2^61 of 0 take the loop that saturates.
	extreme := append(slices.Clone(ordinary[:300]), math.MinInt64, math.MinInt64+1, math.MaxInt64, math.MaxInt64-1, 1<<62, -1<<62)
	for _, tc := range []struct {
		name      string
		times     []int64
		blockSize int
	}{
		{"ordinary times", ordinary, 0},
		{"ordinary times in small blocks", ordinary, 256},
		{"extreme times", extreme, 0},
		{"extreme times in small blocks", extreme, 300},
	} {
		d := cutsSavepoint(t, 5, tc.times, tc.blockSize)
		ctx := context.Background()
		r, err := Open(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		for _, seg := range opSegments(r, 0) {
			var got []int64
			it := r.iterate(ctx, seg)
			for it.Next() {
				got = append(got, int64(binary.BigEndian.Uint64(it.Entry().Value)))
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			it.Close()
			slices.Sort(got)
			mid := got[len(got)/2]
			// Cuts on times, beside them, and at the ends of int64, one at
			// a time, then all of those that a bucket each can take.
			candidates := []int64{math.MinInt64, got[0], got[0] + 1, mid - 1, mid, mid + 1, got[len(got)-1], math.MaxInt64, anchor, anchor - day, anchor - 7*day}
			sets := [][]int64{}
			for _, c := range candidates {
				sets = append(sets, []int64{c})
			}
			sets = append(sets, oneCutABucket(r, seg, candidates), []int64{anchor, anchor, anchor - day})
			for _, cuts := range sets {
				for _, batch := range []int{1, 5, 512} {
					counts, ok := countTimes(t, r, seg, cuts, batch)
					if !ok {
						t.Fatalf("%s, %v: CountTimes refused cuts %v", tc.name, seg.Ref, cuts)
					}
					for i, c := range cuts {
						want := 0
						for _, tm := range got {
							want += int(b2u(tm <= c))
						}
						if counts[i] != uint64(want) {
							t.Errorf("%s, %v, batches of %d: %d times at or before %d, want %d", tc.name, seg.Ref, batch, counts[i], c, want)
						}
					}
				}
			}
		}
		r.Close()
	}
}

// oneCutABucket keeps the cuts, in order, that fall in a bucket of seg's
// last-modified histogram that no cut before holds.
func oneCutABucket(r *Reader, seg savepoint.Segment, cuts []int64) []int64 {
	h := newHistCounts(shape{ttl: true}, r.Metadata().Operators[0].States[seg.Ref.State].TTL.Millis(), seg.Anchor)
	defer h.release()
	var out []int64
	seen := map[int]bool{}
	for _, c := range cuts {
		if b := h.modifiedBucket(c); !seen[b] {
			seen[b] = true
			out = append(out, c)
		}
	}
	return out
}

// countTimes reads seg with NextValues in batches, counting cuts, and
// returns the counts, or false when CountTimes refused them.
func countTimes(t *testing.T, r *Reader, seg savepoint.Segment, cuts []int64, batch int) ([]uint64, bool) {
	t.Helper()
	it := r.iterate(context.Background(), seg)
	defer it.Close()
	if !it.CountTimes(cuts) {
		return nil, false
	}
	sizes, times := make([]int, batch), make([]int64, batch)
	for it.NextValues(sizes, times) == batch {
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	counts := make([]uint64, len(cuts))
	it.TimeCounts(counts)
	return counts, true
}

// TestCountTimesRefusals: CountTimes counts nothing where it cannot, and
// leaves the histogram it shares with the checks as it was, so that the
// segment still reads to its end without an error.
func TestCountTimesRefusals(t *testing.T) {
	const anchor = 1_700_000_000_000
	times := []int64{anchor - 5, anchor - 3_000_000, anchor - 3_000_001}
	d := cutsSavepoint(t, 5, times, 0)
	ctx := context.Background()
	r, err := Open(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	segs := opSegments(r, 0)
	if _, ok := countTimes(t, r, segs[0], []int64{anchor - 3_000_000, anchor - 3_000_001}, 512); ok {
		t.Error("CountTimes took two cuts in one bucket")
	}
	it := r.iterate(ctx, segs[0])
	it.Next()
	if it.CountTimes([]int64{anchor}) {
		t.Error("CountTimes took cuts after the first entry")
	}
	it.Close()

	// Without TTL, and without histograms in the index (a v1 savepoint's).
	meta := testMeta()
	meta.Operators[0].States[2].TTL = nil
	entries := []savepoint.Entry{{Key: []byte("k"), MapKey: []byte("a"), Value: []byte{1}}}
	d = newMemDir()
	writeSavepoint(t, d, meta, []segData{{op: 0, ref: 2, kg: keygroup.Of([]byte("k"), 16), entries: entries}}, Options{})
	noTTL, err := Open(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	defer noTTL.Close()
	v1 := segs[0]
	v1.Sizes, v1.Modified = nil, nil
	for _, c := range []struct {
		name string
		r    *Reader
		seg  savepoint.Segment
	}{{"a state without TTL", noTTL, opSegments(noTTL, 0)[0]}, {"a segment without histograms", r, v1}} {
		if _, ok := countTimes(t, c.r, c.seg, []int64{anchor}, 512); ok {
			t.Errorf("CountTimes counted the times of %s", c.name)
		}
	}
	// A refused set of cuts leaves the histogram's checks as they were.
	it = r.iterate(ctx, segs[1])
	it.CountTimes([]int64{anchor - 3_000_000, anchor - 3_000_001})
	for it.NextValues(make([]int, 4), make([]int64, 4)) == 4 {
	}
	if err := it.Err(); err != nil {
		t.Errorf("after refused cuts: %v", err)
	}
	it.Close()
}

// TestCountSizesAgreesWithTheSizes reads segments with CountSizes, with an
// array of 16 so that most sizes go to the call for larger ones, in
// batches of several sizes and in small and default blocks, and compares
// the counts with the sizes that Next reads: of a TTL value state, and of
// a list state without TTL whose values run to multi-byte lengths.
func TestCountSizesAgreesWithTheSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var value, list []savepoint.Entry
	kg := 3
	for i := 0; len(value) < 400; i++ {
		k := []byte(fmt.Sprintf("user-%05d", i))
		if keygroup.Of(k, 16) != kg {
			continue
		}
		size := []int{3, 3, 3, 20, 20, 700}[rng.IntN(6)]
		value = append(value, savepoint.Entry{Key: k, Value: append(ts(1_700_000_000_000-rng.Int64N(1e9)), make([]byte, size)...)})
		for range rng.IntN(4) {
			list = append(list, savepoint.Entry{Key: k, Value: make([]byte, []int{0, 5, 15, 16, 200}[rng.IntN(5)])})
		}
	}
	slices.SortStableFunc(value, func(a, b savepoint.Entry) int { return bytes.Compare(a.Key, b.Key) })
	slices.SortStableFunc(list, func(a, b savepoint.Entry) int { return bytes.Compare(a.Key, b.Key) })
	for _, blockSize := range []int{0, 256} {
		d := newMemDir()
		writeSavepoint(t, d, testMeta(), []segData{{op: 0, ref: 0, kg: kg, entries: value}, {op: 0, ref: 1, kg: kg, entries: list}}, Options{BlockSize: blockSize})
		ctx := context.Background()
		r, err := Open(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		for _, seg := range opSegments(r, 0) {
			ttlOn := seg.Ref.State == 0
			want := map[int]uint64{}
			it := r.iterate(ctx, seg)
			for it.Next() {
				want[len(it.Entry().Value)-8*int(b2u(ttlOn))]++
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			it.Close()
			for _, batch := range []int{1, 5, 512} {
				got := map[int]uint64{}
				small := make([]uint64, 16)
				it := r.iterate(ctx, seg)
				if !it.CountSizes(small, func(size int, n uint64) {
					if size < len(small) {
						t.Errorf("size %d counted by the call, not in the array", size)
					}
					got[size] += n
				}) {
					t.Fatalf("%v: CountSizes refused", seg.Ref)
				}
				sizes, times := make([]int, batch), make([]int64, batch)
				for it.NextValues(sizes, times) == batch {
				}
				if err := it.Err(); err != nil {
					t.Fatal(err)
				}
				it.Close()
				for size, n := range small {
					if n > 0 {
						got[size] += n
					}
				}
				if !maps.Equal(got, want) {
					t.Errorf("blocks of %d, %v, batches of %d: counts %v, want %v", blockSize, seg.Ref, batch, got, want)
				}
			}
		}
		r.Close()
	}
}

// TestNearBucket checks the last-modified bucket that the batch loop takes
// against ModifiedBucket, at and beside every bucket boundary and the ends
// of liveTable, and at random offsets, for times whose offset does not
// saturate.
func TestNearBucket(t *testing.T) {
	const anchor = 1_700_000_000_000
	ttlMillis := int64(7 * 24 * 3600 * 1000)
	shift, zero := ttlMillis-anchor-1, savepoint.ModifiedBucket(0)
	var offsets []int64
	for k := range savepoint.ModifiedBuckets {
		lo, hi := savepoint.ModifiedBucketRange(k)
		offsets = append(offsets, lo, hi, lo+1, hi-1)
	}
	for _, x := range []int64{liveTableLo, liveTableHi} {
		offsets = append(offsets, x-1, x, x+1, x+2, -x, -x+1)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		offsets = append(offsets, rng.Int64N(1<<rng.IntN(62))*(1-2*rng.Int64N(2)))
	}
	checked := 0
	for _, x := range offsets {
		tm := x - ttlMillis + anchor
		if !offsetsAdd(tm, tm, ttlMillis, anchor) {
			continue
		}
		want := savepoint.ModifiedBucket(savepoint.ExpiryOffset(tm, ttlMillis, anchor))
		if got := nearBucket(tm, shift, zero); got != want {
			t.Errorf("offset %d: bucket %d, want %d", x, got, want)
		}
		checked++
	}
	if checked < 100_000 {
		t.Fatalf("only %d offsets checked", checked)
	}
}
