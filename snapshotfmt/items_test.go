package snapshotfmt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/savepoint"
)

// itemsByNext is every entry of a keyed state's segment as Next reads it,
// as "key namespace item" with the item framed as a record holds it.
func itemsByNext(t *testing.T, r *Reader, seg savepoint.Segment, isMap bool) []string {
	t.Helper()
	var out []string
	it := r.iterate(context.Background(), seg)
	defer it.Close()
	for it.Next() {
		e := it.Entry()
		out = append(out, fmt.Sprintf("%x %x %x", e.Key, e.Namespace, frameItem(isMap, e)))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// itemsByNextItems is itemsByNext through NextItems, which also gives the
// number of calls whose key and namespace repeat the previous call's.
func itemsByNextItems(t *testing.T, r *Reader, seg savepoint.Segment, isMap bool) (out []string, pieces int) {
	t.Helper()
	it := r.iterate(context.Background(), seg)
	defer it.Close()
	var lastKey, lastNs []byte
	for {
		key, ns, items, n := it.NextItems()
		if n == 0 {
			break
		}
		if len(out) > 0 && bytes.Equal(key, lastKey) && bytes.Equal(ns, lastNs) {
			pieces++
		}
		lastKey, lastNs = bytes.Clone(key), bytes.Clone(ns)
		got := 0
		for off := 0; off < len(items); got++ {
			start := off
			ok := true
			if isMap {
				_, off, ok = itemField(items, off)
			}
			if ok {
				_, off, ok = itemField(items, off)
			}
			if !ok {
				t.Fatalf("NextItems gave badly framed items %x", items)
			}
			out = append(out, fmt.Sprintf("%x %x %x", key, ns, items[start:off]))
		}
		if got != n {
			t.Fatalf("NextItems said %d items and gave %d", n, got)
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out, pieces
}

// TestNextItemsAgreesWithNext reads every keyed state's segment both ways,
// in blocks so small that records continue from block to block, in the
// default blocks, and in blocks so large that they stream through a
// window whose refills fall inside records.
func TestNextItemsAgreesWithNext(t *testing.T) {
	ctx := context.Background()
	meta := testMeta()
	for _, tc := range []struct {
		name  string
		keys  int
		opts  Options
		split bool // records must continue from block to block
	}{
		{"small blocks", 40, Options{BlockSize: 300}, true},
		{"default blocks", 300, Options{}, false},
		{"streamed blocks", 3000, Options{Compression: CodecZstd, BlockSize: 8 * streamWindow}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Open(ctx, writeOneFile(t, meta, testData(tc.keys), tc.opts))
			if err != nil {
				t.Fatal(err)
			}
			entries, pieces := 0, 0
			for _, seg := range opSegments(r, 0) {
				if seg.Ref.Timer {
					continue
				}
				isMap := meta.Operators[0].States[seg.Ref.State].Kind == savepoint.Map
				want := itemsByNext(t, r, seg, isMap)
				got, p := itemsByNextItems(t, r, seg, isMap)
				if !slices.Equal(got, want) {
					t.Fatalf("%v key group %d: NextItems gives %d items, Next %d, or other ones", seg.Ref, seg.KeyGroup, len(got), len(want))
				}
				entries += len(got)
				pieces += p
			}
			if entries == 0 || tc.split && pieces == 0 {
				t.Fatalf("%d entries read, %d records continued in another block", entries, pieces)
			}
		})
	}
}

// NextItems refuses what Next refuses, at the same place.
func TestNextItemsRejectsBadRecords(t *testing.T) {
	k := keysIn(71, 2, 128)
	v := func(t int64) []byte { return append(ts(t), 0, 0, 0, 0, 0, 0, 0, 1) }
	one := savepoint.Stats{Keys: 1, Entries: 1, MinTimestamp: 5, MaxTimestamp: 5}
	two := savepoint.Stats{Keys: 2, Entries: 2, MinTimestamp: 5, MaxTimestamp: 5}
	first := int64(preambleLen + blockHeaderLen)
	for _, tc := range []struct {
		name string
		d    *memDir
		want string
		off  int64
	}{
		{"keys out of order", handmade(0, 71, two, append(record(k[1], nil, v(5)), record(k[0], nil, v(5))...)),
			"not after the previous one", first + int64(len(record(k[1], nil, v(5))))},
		{"two values in a record", handmade(0, 71, two, record(k[0], nil, v(5), v(5))),
			"with 2 items, want 1", first + int64(len(k[0])) + 2},
		{"wrong key group", handmade(0, 72, one, record(k[0], nil, v(5))), "belongs to key group 71, not 72", first},
		{"short TTL value", handmade(0, 71, one, record(k[0], nil, []byte{1, 2, 3})), "shorter than its 8-byte timestamp", first + int64(len(k[0])) + 3},
		{"entries differ from the index", handmade(0, 71, savepoint.Stats{Keys: 1, Entries: 2, MinTimestamp: 5, MaxTimestamp: 5}, record(k[0], nil, v(5))),
			"holds 1 entries, the index says 2", preambleLen},
		{"truncated record", handmade(0, 71, one, record(k[0], nil, v(5))[:len(k[0])+6]),
			"value: length 16 beyond the 2 bytes remaining", first + int64(len(k[0])) + 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r, err := Open(ctx, tc.d)
			if err != nil {
				t.Fatal(err)
			}
			it := r.iterate(ctx, opSegments(r, 0)[0])
			for _, _, _, n := it.NextItems(); n > 0; _, _, _, n = it.NextItems() {
			}
			err = it.Err()
			var e *savepoint.Error
			if !errors.Is(err, ErrCorrupt) || !errors.As(err, &e) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NextItems: %v, want ErrCorrupt saying %q", err, tc.want)
			}
			if e.File != "data-000" || e.Offset != tc.off {
				t.Fatalf("error at %s offset %d, want data-000 offset %d", e.File, e.Offset, tc.off)
			}
		})
	}
	t.Run("timers", func(t *testing.T) {
		ctx := context.Background()
		r, err := Open(ctx, handmade(1, 71, savepoint.Stats{Entries: 1, MinTimestamp: 5, MaxTimestamp: 5}, timer(5, k[0])))
		if err != nil {
			t.Fatal(err)
		}
		it := r.iterate(ctx, opSegments(r, 0)[0])
		if _, _, _, n := it.NextItems(); n != 0 || it.Err() == nil || !strings.Contains(it.Err().Error(), "timers") {
			t.Fatalf("NextItems on timers: %d items, %v", n, it.Err())
		}
	})
}

// FilterItems keeps the items whose time the predicate accepts, copying
// them as they are, and refuses framing that does not parse.
func TestFilterItems(t *testing.T) {
	ttlValue := func(ts int64, rest string) []byte {
		return append(binary.BigEndian.AppendUint64(nil, uint64(ts)), rest...)
	}
	frame := func(isMap bool, mapKey string, value []byte) []byte {
		var b []byte
		if isMap {
			b = binary.AppendUvarint(b, uint64(len(mapKey)))
			b = append(b, mapKey...)
		}
		b = binary.AppendUvarint(b, uint64(len(value)))
		return append(b, value...)
	}
	even := func(ts int64) bool { return ts%2 == 0 }
	for _, isMap := range []bool{false, true} {
		var items, want []byte
		for i := range 7 {
			item := frame(isMap, fmt.Sprint("k", i), ttlValue(int64(i/2), strings.Repeat("v", i)))
			items = append(items, item...)
			if even(int64(i / 2)) {
				want = append(want, item...)
			}
		}
		got, n, err := FilterItems([]byte("prefix"), items, isMap, even)
		if err != nil || n != 4 || !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Errorf("map %v: FilterItems kept %d items, %x, %v; want 4, %x", isMap, n, got, err, want)
		}
		if _, _, err := FilterItems(nil, items[:len(items)-1], isMap, even); err == nil {
			t.Errorf("map %v: a truncated last item was not refused", isMap)
		}
	}
	if _, _, err := FilterItems(nil, frame(false, "", []byte("short")), false, even); err == nil || !strings.Contains(err.Error(), "offset 0") {
		t.Errorf("a value shorter than its time: %v", err)
	}
}
