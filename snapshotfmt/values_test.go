package snapshotfmt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/savepoint"
)

// valuesRun is what one read of a segment gave: the value sizes and TTL
// times, in order, and the error that ended it.
type valuesRun struct {
	sizes []int
	times []int64
	err   string
}

// bothWays reads the one segment of d with Next, then with NextValues in
// batches of batch, and returns both runs. It reads it a third time, as a
// scan does, counting sizes and times (countedWay).
func bothWays(t testing.TB, d *memDir, ttlOn bool, batch int) (next, values valuesRun) {
	ctx := context.Background()
	r, err := Open(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seg := opSegments(r, 0)[0]
	it := r.iterate(ctx, seg)
	for it.Next() {
		v := it.Entry().Value
		if ttlOn {
			next.times = append(next.times, int64(binary.BigEndian.Uint64(v)))
			v = v[8:]
		}
		next.sizes = append(next.sizes, len(v))
	}
	next.err = fmt.Sprint(it.Err())
	it.Close()
	it = r.iterate(ctx, seg)
	defer it.Close()
	sizes, times := make([]int, batch), make([]int64, batch)
	for {
		n := it.NextValues(sizes, times)
		values.sizes = append(values.sizes, sizes[:n]...)
		if ttlOn {
			values.times = append(values.times, times[:n]...)
		}
		if n < batch {
			break
		}
	}
	values.err = fmt.Sprint(it.Err())
	countedWay(t, r, seg, next, batch)
	return next, values
}

// countedWay reads seg once more with NextValues in batches of batch,
// counting the sizes (CountSizes) and the times at or before cuts taken
// from next (CountTimes): the same sizes, times and error as Next, and
// when the segment reads to its end, the counts of next's sizes and times.
func countedWay(t testing.TB, r *Reader, seg savepoint.Segment, next valuesRun, batch int) {
	t.Helper()
	it := r.iterate(context.Background(), seg)
	defer it.Close()
	var cuts []int64
	if len(next.times) > 0 {
		sorted := slices.Sorted(slices.Values(next.times))
		cuts = oneCutABucket(r, seg, []int64{sorted[len(sorted)/2], sorted[0], sorted[len(sorted)-1] - 1})
	}
	small := make([]uint64, 4)
	sizeCounts := map[int]uint64{}
	countingSizes := it.CountSizes(small, func(size int, n uint64) { sizeCounts[size] += n })
	countingTimes := cuts != nil && it.CountTimes(cuts)
	var got valuesRun
	sizes, times := make([]int, batch), make([]int64, batch)
	for {
		n := it.NextValues(sizes, times)
		got.sizes = append(got.sizes, sizes[:n]...)
		if next.times != nil {
			got.times = append(got.times, times[:n]...)
		}
		if n < batch {
			break
		}
	}
	got.err = fmt.Sprint(it.Err())
	if got.err != next.err || !slices.Equal(got.sizes, next.sizes) || !slices.Equal(got.times, next.times) {
		t.Fatalf("counting, batches of %d:\nNextValues %v\nNext       %v", batch, got, next)
	}
	if it.Err() != nil {
		return
	}
	if countingSizes {
		for size, n := range small {
			if n > 0 {
				sizeCounts[size] += n
			}
		}
		want := map[int]uint64{}
		for _, size := range next.sizes {
			want[size]++
		}
		if !maps.Equal(sizeCounts, want) {
			t.Fatalf("batches of %d: sizes counted %v, want %v", batch, sizeCounts, want)
		}
	}
	if countingTimes {
		counts := make([]uint64, len(cuts))
		it.TimeCounts(counts)
		for i, c := range cuts {
			var want uint64
			for _, tm := range next.times {
				want += b2u(tm <= c)
			}
			if counts[i] != want {
				t.Fatalf("batches of %d: %d times at or before %d, want %d", batch, counts[i], c, want)
			}
		}
	}
}

// segmentOf is a savepoint whose one segment, of the map state
// category-counts of testMeta (every key in key group 0) changed to kind
// and with or without its TTL, holds payloads as its blocks. The index
// entry has the counts a reader finds in them, as far as they decode, so
// that good records pass the segment's checks and bad ones fail where the
// records do.
func segmentOf(kind savepoint.Kind, ttlOn bool, payloads ...[]byte) *memDir {
	const mapState = 2
	meta := testMeta()
	op := &meta.Operators[0]
	op.Parallelism, op.MaxParallelism, op.OperatorStates = 1, 1, nil
	op.States[mapState].Kind = kind
	if kind != savepoint.Map {
		op.States[mapState].MapKey = savepoint.KeyedState{}.MapKey
	}
	if !ttlOn {
		op.States[mapState].TTL = nil
	}
	s := shapeOf(op, savepoint.StateRef{State: mapState}, 0)
	var e savepoint.Entry
	rr := newRecordReader(s, &e, nil)
	for _, p := range payloads {
		rr.endBlock()
		rr.startBlock(p, 0)
		for rr.next() {
		}
	}
	// An index entry must count a key and no more keys than entries.
	keys := max(rr.keys, 1)
	stats := savepoint.Stats{Keys: keys, Entries: max(rr.entries, keys)}
	if ttlOn {
		stats.MinTimestamp, stats.MaxTimestamp = rr.minTS, rr.maxTS
	}
	return handmadeIn(meta, mapState, 0, stats, payloads...)
}

// mapPairs gives n pairs of map keys prefix and a three-digit number, each
// of value v(i).
func mapPairs(prefix string, n int, v func(i int) []byte) [][]byte {
	var pairs [][]byte
	for i := range n {
		pairs = append(pairs, fmt.Appendf(nil, "%s%03d", prefix, i), v(i))
	}
	return pairs
}

// TestNextValuesInTheZone puts the faults and the odd shapes of
// TestNextValuesInTheMiddleOfABlock after a run of good items, where
// NextValues reads them in its loop away from the block's end, and at
// every distance from that end: the same sizes, times and error as Next.
// The records after them are good, so the good cases read to the end of
// the segment and its checks.
func TestNextValuesInTheZone(t *testing.T) {
	v := func(t int64) []byte { return append(ts(t), 0, 0, 0, 0, 0, 0, 0, 7) }
	pad := mapPairs("0-", 40, func(i int) []byte { return v(int64(100 + i%7)) })
	long := append(ts(9), bytes.Repeat([]byte{'x'}, 300)...)
	longKey := bytes.Repeat([]byte{'m'}, 200)
	k := [][]byte{[]byte("k1"), []byte("k2"), []byte("k3")}
	for _, tc := range []struct {
		name  string
		pairs [][]byte // after the pad, in a record of k[0]
		tail  []byte   // records after it
		want  string   // in the error; empty for good records
	}{
		{"good short fields", [][]byte{[]byte("a"), v(3), []byte("b"), v(4)}, mapRecord(k[1], []byte("a"), v(5)), ""},
		{"a long value", [][]byte{[]byte("a"), v(3), []byte("b"), long, []byte("c"), v(4)}, nil, ""},
		{"a long map key", [][]byte{[]byte("a"), v(3), longKey, v(6), []byte("n"), v(7)}, nil, ""},
		{"map keys that tie on eight bytes", [][]byte{[]byte("category-01"), v(3), []byte("category-02"), v(4), []byte("category-10"), v(5)}, nil, ""},
		{"a map key of eight bytes and longer ones", [][]byte{[]byte("abcdefgh"), v(5), []byte("abcdefgh\x00"), v(6), []byte("abcdefghi"), v(7)}, nil, ""},
		{"map keys whose prefix is zero", nil, mapRecord(k[1], []byte{0, 0, 0, 0, 0, 0, 0, 0}, v(4), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0}, v(5)), ""},
		{"an empty map key first", nil, mapRecord(k[1], []byte{}, v(4), []byte("a"), v(5)), ""},
		{"map keys out of order", [][]byte{[]byte("a"), v(3), []byte("c"), v(4), []byte("b"), v(5)}, nil, "map keys not strictly increasing"},
		{"map keys out of order after eight bytes", [][]byte{[]byte("category-01"), v(3), []byte("category-03"), v(4), []byte("category-02"), v(5)}, nil, "map keys not strictly increasing"},
		{"map key repeats", [][]byte{[]byte("a"), v(3), []byte("a"), v(4)}, nil, "map keys not strictly increasing"},
		{"map key shorter than the one before", [][]byte{[]byte("abcdefgh\x00"), v(4), []byte("abcdefgh"), v(5)}, nil, "map keys not strictly increasing"},
		{"TTL value of 7 bytes", [][]byte{[]byte("a"), v(3), []byte("b"), ts(4)[:7]}, nil, "shorter than its 8-byte timestamp"},
		{"empty TTL value", [][]byte{[]byte("a"), v(3), []byte("b"), {}}, nil, "shorter than its 8-byte timestamp"},
		{"wrong order of records", nil, slices.Concat(mapRecord(k[2], []byte("a"), v(3)), mapRecord(k[1], []byte("a"), v(3))), "not after the previous one"},
		{"(key, namespace) repeats", nil, mapRecord(k[0], []byte("z"), v(3)), "repeats within a block"},
		{"a multi-byte item count", nil, mapRecord(k[1], mapPairs("c", 200, func(i int) []byte { return v(int64(i)) })...), ""},
		{"record with no items", nil, mapRecord(k[1]), "record with no items"},
	} {
		pairs := append(slices.Clone(pad), tc.pairs...)
		// A record after them puts them more than a zone away from the
		// block's end; cut short by every amount to that, the payload has
		// each item meet the end, as a whole and inside each field.
		trail := mapRecord([]byte("zz"), mapPairs("t", 20, func(int) []byte { return v(8) })...)
		whole := slices.Concat(mapRecord(k[0], pairs...), tc.tail, trail)
		for cut := 0; cut <= len(trail)+itemZone && cut < len(whole); cut++ {
			p := whole[:len(whole)-cut]
			// Without TTL the same bytes are good but where map keys
			// break their order.
			for _, ttlOn := range []bool{true, false} {
				batch := []int{512, 1, 7}[cut%3]
				next, values := bothWays(t, segmentOf(savepoint.Map, ttlOn, p), ttlOn, batch)
				if cut == 0 && ttlOn {
					if tc.want == "" && next.err != "<nil>" {
						t.Fatalf("%s: Next: %s", tc.name, next.err)
					}
					if tc.want != "" && !strings.Contains(next.err, tc.want) {
						t.Fatalf("%s: Next: %s, want an error saying %q", tc.name, next.err, tc.want)
					}
				}
				if values.err != next.err || !slices.Equal(values.sizes, next.sizes) || !slices.Equal(values.times, next.times) {
					t.Fatalf("%s, TTL %v, %d bytes cut, batches of %d:\nNextValues %v\nNext       %v", tc.name, ttlOn, cut, batch, values, next)
				}
			}
		}
	}
}

// FuzzNextValues reads a block, or two, of records of a keyed state with
// Next and with NextValues: the same sizes, times and error, whatever the
// bytes. It is seeded with good records of every shape NextValues reads in
// a loop of its own or leaves to Next's: one-byte and longer lengths, map
// keys that tie on their first eight bytes, TTL values shorter than their
// timestamp.
func FuzzNextValues(f *testing.F) {
	v := func(t int64) []byte { return append(ts(t), 1, 2) }
	kinds := kinds4
	var recs []byte
	for i := range 30 {
		key := fmt.Appendf(nil, "key-%02d", i)
		recs = append(recs, mapRecord(key, mapPairs("category-", i%5+1, func(j int) []byte { return v(int64(1000 - i*j)) })...)...)
	}
	long := bytes.Repeat([]byte{'v'}, 200)
	listRecs := slices.Concat(record([]byte("a"), nil, v(1), v(2), append(ts(3), long...)), record([]byte("b"), nil, v(4)), record([]byte("c"), []byte("ns"), v(5)))
	single := slices.Concat(record([]byte("a"), nil, v(1)), record([]byte("b"), nil, append(ts(2), long...)), record([]byte("b"), []byte("x"), ts(3)[:5]))
	for _, ttlOn := range []bool{true, false} {
		f.Add(uint8(2), ttlOn, recs, uint16(len(recs)/2), uint16(64))
		f.Add(uint8(2), ttlOn, recs, uint16(0), uint16(3))
		f.Add(uint8(1), ttlOn, listRecs, uint16(0), uint16(512))
		f.Add(uint8(0), ttlOn, single, uint16(0), uint16(2))
	}
	f.Fuzz(func(t *testing.T, kind uint8, ttlOn bool, payload []byte, cut, batch uint16) {
		payloads := [][]byte{payload}
		if c := int(cut); c > 0 && c < len(payload) {
			payloads = [][]byte{payload[:c], payload[c:]}
		}
		if len(payload) == 0 {
			return
		}
		k := kinds[int(kind)%len(kinds)]
		n := int(batch)%600 + 1
		next, values := bothWays(t, segmentOf(k, ttlOn, payloads...), ttlOn, n)
		if values.err != next.err || !slices.Equal(values.sizes, next.sizes) || !slices.Equal(values.times, next.times) {
			t.Fatalf("batches of %d:\nNextValues %v\nNext       %v", n, values, next)
		}
	})
}

var kinds4 = []savepoint.Kind{savepoint.Value, savepoint.List, savepoint.Map, savepoint.Reducing}
