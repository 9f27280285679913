package snapshotfmt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/savepoint"
)

// handmade is a savepoint of the example's metadata whose one segment
// (state usd_total, or timer service event-time for ref 1) holds the given
// block payloads, stored uncompressed with valid CRCs, so that the
// iterator's checks below the CRC can be reached.
func handmade(ref, kg int, stats savepoint.Stats, payloads ...[]byte) *memDir {
	return handmadeIn(exampleMeta(), ref, kg, stats, payloads...)
}

// handmadeIn is handmade for the flat state ref of meta's first operator.
func handmadeIn(meta *savepoint.Metadata, ref, kg int, stats savepoint.Stats, payloads ...[]byte) *memDir {
	data := appendPreamble(nil, typeData)
	raw := uint64(0)
	for _, p := range payloads {
		blk := append(make([]byte, blockHeaderLen), p...)
		block, _ := sealBlock(blk, nil, nil)
		data = append(data, block...)
		raw += uint64(len(p))
	}
	stats.KeyGroup = kg
	if stats.Bytes == 0 {
		stats.Bytes = raw
	}
	seg := savepoint.Segment{Stats: stats, Ref: flatRef(meta, 0, ref), File: "data-000", Offset: preambleLen, Length: int64(len(data) - preambleLen)}
	segs := make([][]savepoint.Segment, len(meta.Operators))
	segs[0] = []savepoint.Segment{seg}
	idx := &index{files: []dataFile{{"data-000", int64(len(data))}}, segments: segs}
	d := newMemDir()
	d.files["data-000"] = data
	d.files[MetadataName] = metadataFile(encodeMetadataBody(meta, withHistograms(d, meta, idx)))
	return d
}

func record(key, ns []byte, items ...[]byte) []byte {
	b := appendBytes(nil, key)
	b = appendBytes(b, ns)
	b = binary.AppendUvarint(b, uint64(len(items)))
	for _, it := range items {
		b = appendBytes(b, it)
	}
	return b
}

func timer(t int64, key []byte) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(t)^timerTimeBits)
	b = appendBytes(b, key)
	return appendBytes(b, nil)
}

func TestIteratorRejectsBadRecords(t *testing.T) {
	k := keysIn(71, 2, 128)
	v := func(t int64) []byte { return append(ts(t), 0, 0, 0, 0, 0, 0, 0, 1) }
	one := savepoint.Stats{Keys: 1, Entries: 1, MinTimestamp: 5, MaxTimestamp: 5}
	two := savepoint.Stats{Keys: 2, Entries: 2, MinTimestamp: 5, MaxTimestamp: 5}
	first := int64(preambleLen + blockHeaderLen) // file offset of the first record
	for _, tc := range []struct {
		name string
		d    *memDir
		want string
		off  int64
	}{
		{"keys out of order", handmade(0, 71, two, append(record(k[1], nil, v(5)), record(k[0], nil, v(5))...)),
			"not after the previous one", first + int64(len(record(k[1], nil, v(5))))},
		{"key repeats", handmade(0, 71, two, append(record(k[0], nil, v(5)), record(k[0], nil, v(5))...)),
			"repeats in a value state", first + int64(len(record(k[0], nil, v(5))))},
		{"key repeats across blocks", handmade(0, 71, two, record(k[0], nil, v(5)), record(k[0], nil, v(5))),
			"repeats in a value state", first + int64(len(record(k[0], nil, v(5)))) + blockOverhead},
		{"two values in a record", handmade(0, 71, two, record(k[0], nil, v(5), v(5))),
			"with 2 items, want 1", first + int64(len(k[0])) + 2},
		{"wrong key group", handmade(0, 72, one, record(k[0], nil, v(5))), "belongs to key group 71, not 72", first},
		{"short TTL value", handmade(0, 71, one, record(k[0], nil, []byte{1, 2, 3})), "shorter than its 8-byte timestamp", first + int64(len(k[0])) + 3},
		{"entries differ from the index", handmade(0, 71, savepoint.Stats{Keys: 1, Entries: 2, MinTimestamp: 5, MaxTimestamp: 5}, record(k[0], nil, v(5))),
			"holds 1 entries, the index says 2", preambleLen},
		{"timestamps differ from the index", handmade(0, 71, savepoint.Stats{Keys: 1, Entries: 1, MinTimestamp: 4, MaxTimestamp: 5}, record(k[0], nil, v(5))),
			"timestamps run from 5 to 5, the index says 4 to 5", preambleLen},
		{"bytes differ from the index", handmade(0, 71, savepoint.Stats{Keys: 1, Entries: 1, Bytes: 99, MinTimestamp: 5, MaxTimestamp: 5}, record(k[0], nil, v(5))),
			fmt.Sprintf("holds %d raw bytes, the index says 99", len(record(k[0], nil, v(5)))), preambleLen},
		{"truncated record", handmade(0, 71, one, record(k[0], nil, v(5))[:len(k[0])+6]),
			"value: length 16 beyond the 2 bytes remaining", first + int64(len(k[0])) + 3},
		{"timers out of order", handmade(1, 71, savepoint.Stats{Entries: 2, MinTimestamp: 5, MaxTimestamp: 6}, append(timer(6, k[0]), timer(5, k[0])...)),
			"timers not strictly increasing", first + int64(len(timer(6, k[0])))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r, err := Open(ctx, tc.d)
			if err != nil {
				t.Fatal(err)
			}
			err = verify(ctx, r)
			var e *savepoint.Error
			if !errors.Is(err, ErrCorrupt) || !errors.As(err, &e) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Verify = %v, want ErrCorrupt saying %q", err, tc.want)
			}
			if e.File != "data-000" || e.KeyGroup != opSegments(r, 0)[0].KeyGroup || e.Offset != tc.off {
				t.Fatalf("error at %s key group %d offset %d, want data-000 key group %d offset %d", e.File, e.KeyGroup, e.Offset, opSegments(r, 0)[0].KeyGroup, tc.off)
			}
		})
	}
}

// A list record may continue in the next block, and only there.
func TestListRecordsJoinAcrossBlocksOnly(t *testing.T) {
	k := keysIn(3, 1, 16)[0]
	meta := testMeta()
	stats := savepoint.Stats{KeyGroup: 3, Keys: 1, Entries: 3}
	build := func(payloads ...[]byte) *memDir {
		data := appendPreamble(nil, typeData)
		for _, p := range payloads {
			block, _ := sealBlock(append(make([]byte, blockHeaderLen), p...), nil, nil)
			data = append(data, block...)
			stats.Bytes += uint64(len(p))
		}
		seg := savepoint.Segment{Stats: stats, Ref: flatRef(meta, 0, 1), File: "d", Offset: preambleLen, Length: int64(len(data) - preambleLen)}
		idx := &index{files: []dataFile{{"d", int64(len(data))}}, segments: [][]savepoint.Segment{{seg}, nil}}
		d := newMemDir()
		d.files["d"] = data
		d.files[MetadataName] = metadataFile(encodeMetadataBody(meta, withHistograms(d, meta, idx)))
		stats.Bytes = 0
		return d
	}
	ctx := context.Background()
	good := build(record(k, nil, []byte("a"), []byte("b")), record(k, nil, []byte("c")))
	r, err := Open(ctx, good)
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, r, 0)
	if len(got) != 1 || len(got[0].entries) != 3 || string(got[0].entries[2].Value) != "c" {
		t.Fatalf("joined list read as %+v", got)
	}
	bad := build(append(record(k, nil, []byte("a"), []byte("b")), record(k, nil, []byte("c"))...))
	r, err = Open(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := verify(ctx, r); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "repeats within a block") {
		t.Fatalf("a list record split inside a block: %v", err)
	}
}

// TestNextValuesAgreesWithNext reads every keyed segment of the test
// savepoint, whose records span several small blocks, both ways: the sizes
// and TTL times NextValues gives, in batches of every size, are those of
// the entries Next gives.
func TestNextValuesAgreesWithNext(t *testing.T) {
	ctx := context.Background()
	meta := testMeta()
	d := writeOneFile(t, meta, testData(40), Options{BlockSize: 300})
	r, err := Open(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	op := &meta.Operators[0]
	checked := 0
	for _, seg := range opSegments(r, 0) {
		if seg.Ref.Timer {
			continue
		}
		ttlOn := op.States[seg.Ref.State].TTL != nil
		var wantSizes []int
		var wantTimes []int64
		it := r.iterate(ctx, seg)
		for it.Next() {
			v := it.Entry().Value
			if ttlOn {
				wantTimes = append(wantTimes, int64(binary.BigEndian.Uint64(v)))
				v = v[8:]
			}
			wantSizes = append(wantSizes, len(v))
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
		for _, batch := range []int{1, 3, 64, 4096} {
			var gotSizes []int
			var gotTimes []int64
			sizes, times := make([]int, batch), make([]int64, batch)
			it := r.iterate(ctx, seg)
			for {
				n := it.NextValues(sizes, times)
				gotSizes = append(gotSizes, sizes[:n]...)
				if ttlOn {
					gotTimes = append(gotTimes, times[:n]...)
				}
				if n < batch {
					break
				}
			}
			if err := it.Err(); err != nil {
				t.Fatalf("segment %+v, batches of %d: %v", seg, batch, err)
			}
			it.Close()
			if !slices.Equal(gotSizes, wantSizes) || !slices.Equal(gotTimes, wantTimes) {
				t.Fatalf("segment of state %d key group %d, batches of %d: sizes %v times %v, want %v and %v",
					flat(r, seg), seg.KeyGroup, batch, gotSizes, gotTimes, wantSizes, wantTimes)
			}
			checked += len(gotSizes)
		}
	}
	if checked == 0 {
		t.Fatal("no keyed entries read")
	}
}

// TestNextValuesReportsWhatNextReports runs the bad segments of
// TestIteratorRejectsBadRecords through NextValues: the same error, at the
// same place.
func TestNextValuesReportsWhatNextReports(t *testing.T) {
	ctx := context.Background()
	k := keysIn(71, 2, 128)
	v := func(t int64) []byte { return append(ts(t), 0, 0, 0, 0, 0, 0, 0, 1) }
	one := savepoint.Stats{Keys: 1, Entries: 1, MinTimestamp: 5, MaxTimestamp: 5}
	two := savepoint.Stats{Keys: 2, Entries: 2, MinTimestamp: 5, MaxTimestamp: 5}
	for name, d := range map[string]*memDir{
		"keys out of order": handmade(0, 71, two, append(record(k[1], nil, v(5)), record(k[0], nil, v(5))...)),
		"short TTL value":   handmade(0, 71, one, record(k[0], nil, []byte{1, 2, 3})),
		"index miscount":    handmade(0, 71, savepoint.Stats{Keys: 1, Entries: 2, MinTimestamp: 5, MaxTimestamp: 5}, record(k[0], nil, v(5))),
		"truncated record":  handmade(0, 71, one, record(k[0], nil, v(5))[:len(k[0])+6]),
		"timers":            handmade(1, 71, savepoint.Stats{Entries: 1, MinTimestamp: 5, MaxTimestamp: 5}, timer(5, k[0])),
	} {
		t.Run(name, func(t *testing.T) {
			r, err := Open(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			seg := opSegments(r, 0)[0]
			it := r.iterate(ctx, seg)
			for it.Next() {
			}
			want := it.Err()
			it.Close()
			it = r.iterate(ctx, seg)
			defer it.Close()
			sizes, times := make([]int, 8), make([]int64, 8)
			for it.NextValues(sizes, times) == len(sizes) {
			}
			got := it.Err()
			if name == "timers" {
				if want != nil || got == nil || !strings.Contains(got.Error(), "no values") {
					t.Fatalf("timers: Next %v, NextValues %v; want nil and a refusal", want, got)
				}
				return
			}
			if want == nil || got == nil || got.Error() != want.Error() {
				t.Fatalf("NextValues: %v, Next: %v", got, want)
			}
		})
	}
}

// mapRecord frames a map state's record of the pairs map key, value.
func mapRecord(key []byte, pairs ...[]byte) []byte {
	b := appendBytes(nil, key)
	b = appendBytes(b, nil)
	b = binary.AppendUvarint(b, uint64(len(pairs)/2))
	for _, p := range pairs {
		b = appendBytes(b, p)
	}
	return b
}

// TestNextValuesInTheMiddleOfABlock runs NextValues over map records whose
// faults lie past the first item of a block, where it reads the bytes in
// its own loop: the same error at the same place as Next, and on good
// records of long and short fields the same sizes, times and histograms.
func TestNextValuesInTheMiddleOfABlock(t *testing.T) {
	ctx := context.Background()
	meta := testMeta()
	const kg, mapState = 5, 2 // category-counts, TTL; max parallelism 16
	k := keysIn(kg, 3, 16)
	other := keysIn(kg+1, 4, 16)
	var wrongGroup []byte // a key of another key group after k[0]
	for _, o := range other {
		if bytes.Compare(o, k[0]) > 0 {
			wrongGroup = o
			break
		}
	}
	v := func(t int64) []byte { return append(ts(t), 0, 0, 0, 0, 0, 0, 0, 7) }
	long := append(ts(9), bytes.Repeat([]byte{'x'}, 300)...)
	mk := func(s string) []byte { return []byte(s) }
	longKey := bytes.Repeat([]byte{'m'}, 200)
	// Entries last modified at the savepoint's creation are live under
	// its week's TTL, the others long expired: both sides of the
	// last-modified histogram.
	live := meta.CreatedAt
	week := meta.Operators[0].States[mapState].TTL.Millis() // live-week+1 expires a millisecond after
	stats := savepoint.Stats{Keys: 3, Entries: 8, MinTimestamp: 3, MaxTimestamp: live + 1}
	for _, tc := range []struct {
		name    string
		payload []byte
		want    string // in Next's error; empty for good records
	}{
		{"good records of short and long fields", slices.Concat(
			mapRecord(k[0], mk("a"), v(3), mk("b"), long, mk("c"), v(4)),
			mapRecord(k[1], mk("a"), v(5), longKey, v(6), mk("n"), v(7)),
			mapRecord(k[2], mk("a"), v(live-week+1), mk("b"), v(live+1))), ""},
		{"good records of map keys that share their first eight bytes", slices.Concat(
			mapRecord(k[0], mk("category-01"), v(3), mk("category-02"), v(4), mk("category-10"), v(5)),
			mapRecord(k[1], mk("abcdefgh"), v(5), mk("abcdefgh\x00"), v(6), mk("abcdefghi"), v(7)),
			mapRecord(k[2], mk("a"), v(live-week+1), mk("b"), v(live+1))), ""},
		{"map keys out of order", mapRecord(k[0], mk("a"), v(3), mk("c"), v(4), mk("b"), v(5)), "map keys not strictly increasing"},
		{"map keys out of order after their first eight bytes", mapRecord(k[0], mk("category-01"), v(3), mk("category-03"), v(4), mk("category-02"), v(5)), "map keys not strictly increasing"},
		{"short TTL value after a tie of prefixes", mapRecord(k[0], mk("category-01"), v(3), mk("category-02"), v(4), mk("category-03"), []byte{1, 2, 3}), "shorter than its 8-byte timestamp"},
		{"map key of eight bytes repeats", mapRecord(k[0], mk("a"), v(3), mk("abcdefgh"), v(4), mk("abcdefgh"), v(5)), "map keys not strictly increasing"},
		{"map key shorter than the one before it", mapRecord(k[0], mk("a"), v(3), mk("abcdefgh\x00"), v(4), mk("abcdefgh"), v(5)), "map keys not strictly increasing"},
		{"map key repeats", mapRecord(k[0], mk("a"), v(3), mk("b"), v(4), mk("b"), v(5)), "map keys not strictly increasing"},
		{"short TTL value", mapRecord(k[0], mk("a"), v(3), mk("b"), []byte{1, 2, 3}), "shorter than its 8-byte timestamp"},
		{"keys out of order", slices.Concat(mapRecord(k[1], mk("a"), v(3)), mapRecord(k[0], mk("a"), v(3))), "not after the previous one"},
		{"(key, namespace) repeats", slices.Concat(mapRecord(k[0], mk("a"), v(3)), mapRecord(k[0], mk("b"), v(3))), "repeats within a block"},
		{"wrong key group", slices.Concat(mapRecord(k[0], mk("a"), v(3)), mapRecord(wrongGroup, mk("a"), v(3))), "not 5"},
		{"record with no items", slices.Concat(mapRecord(k[0], mk("a"), v(3)), mapRecord(k[1])), "record with no items"},
		{"truncated item", mapRecord(k[0], mk("a"), v(3), mk("b"), v(4))[:len(k[0])+17], "beyond the"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Open(ctx, handmadeIn(meta, mapState, kg, stats, tc.payload))
			if err != nil {
				t.Fatal(err)
			}
			seg := opSegments(r, 0)[0]
			var wantSizes []int
			var wantTimes []int64
			it := r.iterate(ctx, seg)
			for it.Next() {
				wantTimes = append(wantTimes, int64(binary.BigEndian.Uint64(it.Entry().Value)))
				wantSizes = append(wantSizes, len(it.Entry().Value)-8)
			}
			want := it.Err()
			it.Close()
			switch {
			case tc.want == "" && want != nil:
				t.Fatalf("Next: %v", want)
			case tc.want != "" && (want == nil || !strings.Contains(want.Error(), tc.want)):
				t.Fatalf("Next: %v, want an error saying %q", want, tc.want)
			}
			it = r.iterate(ctx, seg)
			defer it.Close()
			var gotSizes []int
			var gotTimes []int64
			sizes, times := make([]int, 64), make([]int64, 64)
			for {
				n := it.NextValues(sizes, times)
				gotSizes, gotTimes = append(gotSizes, sizes[:n]...), append(gotTimes, times[:n]...)
				if n < len(sizes) {
					break
				}
			}
			if got := it.Err(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("NextValues: %v, Next: %v", got, want)
			}
			if !slices.Equal(gotSizes, wantSizes) || !slices.Equal(gotTimes, wantTimes) {
				t.Fatalf("NextValues: sizes %v times %v; Next: %v and %v", gotSizes, gotTimes, wantSizes, wantTimes)
			}
			if tc.want == "" && len(gotSizes) != 8 {
				t.Fatalf("read %d entries, want 8", len(gotSizes))
			}
		})
	}
}

// TestNextValuesOfMapStatesAtTheExtremes reads map states with TTL and
// without, whose last-modified times run to both ends of int64 (the offsets
// from the anchor saturate), with NextValues: the sizes and times of Next,
// and each segment checked against the histograms its writer counted.
func TestNextValuesOfMapStatesAtTheExtremes(t *testing.T) {
	ctx := context.Background()
	const kg, mapState = 3, 2
	extremes := []int64{math.MinInt64, math.MinInt64 + 1, -1 << 62, -1, 0, 1_700_000_000_000, 1 << 62, math.MaxInt64 - 1, math.MaxInt64}
	for _, withTTL := range []bool{true, false} {
		meta := testMeta()
		if !withTTL {
			meta.Operators[0].States[mapState].TTL = nil
		}
		var entries []savepoint.Entry
		for i, k := range keysIn(kg, 4, 16) {
			for j, lm := range extremes {
				v := []byte{byte(j), byte(i)}
				if withTTL {
					v = append(ts(lm), v...)
				}
				entries = append(entries, savepoint.Entry{Key: k, MapKey: []byte(fmt.Sprintf("category-%02d", j)), Value: v})
			}
		}
		r, err := Open(ctx, writeOneFile(t, meta, []segData{{op: 0, ref: mapState, kg: kg, entries: entries}}, Options{}))
		if err != nil {
			t.Fatal(err)
		}
		seg := opSegments(r, 0)[0]
		sizes, times := make([]int, 16), make([]int64, 16)
		it := r.iterate(ctx, seg)
		var gotSizes []int
		var gotTimes []int64
		for {
			n := it.NextValues(sizes, times)
			gotSizes = append(gotSizes, sizes[:n]...)
			if withTTL {
				gotTimes = append(gotTimes, times[:n]...)
			}
			if n < len(sizes) {
				break
			}
		}
		if err := it.Err(); err != nil {
			t.Fatalf("TTL %v: %v", withTTL, err)
		}
		it.Close()
		var wantSizes []int
		var wantTimes []int64
		for _, e := range entries {
			if withTTL {
				wantTimes = append(wantTimes, int64(binary.BigEndian.Uint64(e.Value)))
			}
			wantSizes = append(wantSizes, 2)
		}
		if !slices.Equal(gotSizes, wantSizes) || !slices.Equal(gotTimes, wantTimes) {
			t.Fatalf("TTL %v: sizes %v times %v, want %v and %v", withTTL, gotSizes, gotTimes, wantSizes, wantTimes)
		}
	}
}
