package serializers

import (
	"bytes"
	"errors"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func deepEqual[T any](a, b T) bool { return reflect.DeepEqual(a, b) }

func TestCompositeRoundTrips(t *testing.T) {
	long := strings.Repeat("x", 200) // a frame length of two bytes
	roundTrip(t, List(String()), []string{}, deepEqual)
	roundTrip(t, List(String()), []string{"", "a", long, "ü"}, deepEqual)
	roundTrip(t, List(List(Int64())), [][]int64{{}, {1, math.MinInt64}, {math.MaxInt64}}, deepEqual)
	roundTrip(t, List(Void()), []VoidNamespace{{}, {}, {}}, deepEqual)

	roundTrip(t, Map(String(), Int64()), map[string]int64{}, deepEqual)
	roundTrip(t, Map(String(), Int64()), map[string]int64{"": 0, "a": -1, long: 2}, deepEqual)
	roundTrip(t, Map(Int64(), List(String())), map[int64][]string{-1: {"x"}, 0: {}, 1 << 40: {long}}, deepEqual)

	one, zero := int64(1), int64(0)
	roundTrip(t, Nullable(Int64()), nil, deepEqual)
	roundTrip(t, Nullable(Int64()), &one, deepEqual)
	roundTrip(t, Nullable(Int64()), &zero, deepEqual)
	var none *int64
	roundTrip(t, Nullable(Nullable(Int64())), &none, deepEqual) // present, inner null
	roundTrip(t, Nullable(Bytes()), &[]byte{}, deepEqual)

	roundTrip(t, TTL(String()), TTLValue[string]{LastModified: -5, Value: long}, deepEqual)
	roundTrip(t, TTL(Map(String(), Bool())), TTLValue[map[string]bool]{LastModified: math.MaxInt64, Value: map[string]bool{"t": true}}, deepEqual)

	timer := Timer(String(), Window())
	roundTrip(t, timer, TimerValue[string, TimeWindow]{Timestamp: math.MinInt64, Key: "", Namespace: TimeWindow{-1, 1}}, deepEqual)
	roundTrip(t, timer, TimerValue[string, TimeWindow]{Timestamp: 1700000000000, Key: long, Namespace: TimeWindow{0, math.MaxInt64}}, deepEqual)
	roundTrip(t, Timer(Int64(), Void()), TimerValue[int64, VoidNamespace]{Timestamp: 3, Key: 42}, deepEqual)

	roundTrip(t, Window(), TimeWindow{Start: math.MinInt64, End: math.MaxInt64}, deepEqual)
}

func TestMapEncodingIsSortedAndUnique(t *testing.T) {
	m := map[string]int32{}
	for i := range 100 {
		m[strings.Repeat("k", i%7)+string(rune('a'+i%26))+strings.Repeat("z", i/26)] = int32(i)
	}
	s := Map(String(), Int32())
	first := must[[]byte](t)(s.Append(nil, m))
	for range 20 {
		if again := must[[]byte](t)(s.Append(nil, m)); !bytes.Equal(again, first) {
			t.Fatal("the same map encoded to different bytes")
		}
	}
	var keys []string
	if err := readEntries(first, func(_ int, k, _ []byte) error { keys = append(keys, string(k)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(m) || !slices.IsSorted(keys) {
		t.Fatalf("keys %q are not the sorted %d keys", keys, len(m))
	}
	if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, keys) {
		t.Fatalf("keys %q, want %q", keys, got)
	}

	// Keys whose encodings collide cannot be written.
	nanKeys := map[float64]int32{math.NaN(): 1, math.Float64frombits(math.Float64bits(math.NaN())): 2}
	if _, err := Map(Float64(), Int32()).Append(nil, nanKeys); !errors.Is(err, ErrEncode) {
		t.Fatalf("two NaN keys with the same bits: %v, want ErrEncode", err)
	}
}

func TestMapDecodeRejectsUnsortedAndDuplicates(t *testing.T) {
	s := Map(String(), Int32())
	for name, src := range map[string]string{
		"unsorted":  "02 01 62 04 00000001 01 61 04 00000002",
		"duplicate": "02 01 61 04 00000001 01 61 04 00000002",
	} {
		_, err := s.Decode(unhex(t, src))
		if !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), "key 1 is not greater than key 0") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Different bytes, same key: non-canonical Avro.
	longKeys := Map(must[Of[int64]](t)(Avro[int64](`"long"`)), Int32())
	_, err := longKeys.Decode(unhex(t, "02 01 02 04 00000001 02 8200 04 00000002"))
	if !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), "key 1 decodes to the same value as an earlier key") {
		t.Errorf("non-canonical duplicate key: %v", err)
	}
	// A prefix sorts first.
	got := must[map[string]int32](t)(s.Decode(unhex(t, "02 01 61 04 00000001 02 6161 04 00000002")))
	if !reflect.DeepEqual(got, map[string]int32{"a": 1, "aa": 2}) {
		t.Fatalf("got %v", got)
	}
}

func TestFramingRejectsNonCanonicalAndOversizedLengths(t *testing.T) {
	for _, c := range []struct {
		s   Serializer
		src string
		msg string
	}{
		{List(Int32()), "8000", "list: count is not in its shortest form"},
		{List(Int32()), "01 8400 00000001", "list: element length is not in its shortest form"},
		{List(Int32()), "05 00", "list: count 5 does not fit in the 1 bytes that remain"},
		{List(Int32()), "01 05 0000", "list: element length 5 exceeds the 2 bytes that remain"},
		{List(Int32()), "01 04 00000001 00", "list: 1 trailing bytes"},
		{List(Int32()), "ffffffffffffffff7f", "list: count 9223372036854775807 does not fit in the 0 bytes that remain"},
		{List(Int32()), "ffffffffffffffffffff01", "list: count overflows 64 bits"},
		{List(Int32()), "01 03 000000", "list element 0: int32: want 4 bytes, got 3"},
		{Map(String(), Int32()), "01 01 61", "map: value length truncated"},
		{Map(String(), Int32()), "02 01 61", "map: count 2 does not fit in the 2 bytes that remain"},
		{Nullable(Int32()), "", "nullable: want at least 1 byte, got 0"},
		{Nullable(Int32()), "00 00", "nullable: null followed by 1 trailing bytes"},
		{Nullable(Int32()), "02 00000001", "nullable: flag byte 0x02 is neither 0x00 nor 0x01"},
		{TTL(Int32()), "00000000000000", "ttl: want at least 8 bytes, got 7"},
		{TTL(Int32()), "0000000000000000 00", "ttl value: int32: want 4 bytes, got 1"},
		{Timer(String(), Void()), "8000000000000000", "timer: want at least 9 bytes, got 8"},
		{Timer(String(), Void()), "8000000000000000 02 61", "timer: key length 2 exceeds the 1 bytes that remain"},
		{Timer(String(), Void()), "8000000000000000 01 61 00", "timer namespace: void: want 0 bytes, got 1"},
	} {
		_, err := c.s.DecodeAny(unhex(t, c.src))
		if !errors.Is(err, ErrDecode) || !strings.HasSuffix(err.Error(), c.msg) {
			t.Errorf("%s: Decode(%s) = %v, want ErrDecode ending %q", c.s.Snapshot(), c.src, err, c.msg)
		}
	}
}

// Timer encodings sort as their timestamps do, negative ones included.
func TestTimerBytesSortByTimestamp(t *testing.T) {
	s := Timer(String(), Void())
	stamps := []int64{math.MinInt64, -1 << 40, -2, -1, 0, 1, 2, 1700000000000, math.MaxInt64}
	var prev []byte
	for _, ts := range stamps {
		b := must[[]byte](t)(s.Append(nil, TimerValue[string, VoidNamespace]{Timestamp: ts, Key: "k"}))
		if prev != nil && bytes.Compare(prev, b) >= 0 {
			t.Fatalf("timer at %d does not sort after the previous one: %x then %x", ts, prev, b)
		}
		prev = b
	}
}

func TestCompositeEncodeErrorsKeepDst(t *testing.T) {
	bad := "\xff"
	dst := []byte("keep")
	for name, f := range map[string]func() ([]byte, error){
		"list":     func() ([]byte, error) { return List(String()).Append(dst, []string{"ok", bad}) },
		"map key":  func() ([]byte, error) { return Map(String(), Int32()).Append(dst, map[string]int32{bad: 1}) },
		"map val":  func() ([]byte, error) { return Map(Int32(), String()).Append(dst, map[int32]string{1: bad}) },
		"nullable": func() ([]byte, error) { return Nullable(String()).Append(dst, &bad) },
		"ttl":      func() ([]byte, error) { return TTL(String()).Append(dst, TTLValue[string]{Value: bad}) },
		"timer key": func() ([]byte, error) {
			return Timer(String(), Void()).Append(dst, TimerValue[string, VoidNamespace]{Key: bad})
		},
	} {
		out, err := f()
		if !errors.Is(err, ErrEncode) || !strings.Contains(err.Error(), "UTF-8") || string(out) != "keep" {
			t.Errorf("%s: got %q, %v", name, out, err)
		}
	}
}
