package serializers

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func roundTrip[T any](t *testing.T, s Of[T], v T, eq func(a, b T) bool) []byte {
	t.Helper()
	b, err := s.Append(nil, v)
	if err != nil {
		t.Fatalf("%s: Append(%v): %v", s.Snapshot(), v, err)
	}
	got, err := s.Decode(b)
	if err != nil {
		t.Fatalf("%s: Decode(%x): %v", s.Snapshot(), b, err)
	}
	if !eq(got, v) {
		t.Fatalf("%s: round trip of %v gave %v", s.Snapshot(), v, got)
	}
	// Appending keeps what dst held.
	prefixed, err := s.Append([]byte("pre"), v)
	if err != nil || string(prefixed[:3]) != "pre" || string(prefixed[3:]) != string(b) {
		t.Fatalf("%s: Append to a non-empty dst gave %x, %v", s.Snapshot(), prefixed, err)
	}
	return b
}

func equal[T comparable](a, b T) bool { return a == b }

func TestPrimitiveRoundTrips(t *testing.T) {
	for _, v := range []bool{false, true} {
		roundTrip(t, Bool(), v, equal)
	}
	for _, v := range []int32{0, 1, -1, math.MinInt32, math.MaxInt32} {
		roundTrip(t, Int32(), v, equal)
	}
	for _, v := range []int64{0, 1, -1, 42, math.MinInt64, math.MaxInt64} {
		roundTrip(t, Int64(), v, equal)
	}
	sameBits32 := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
	for _, v := range []float32{0, float32(math.Copysign(0, -1)), 1.5, float32(math.Inf(-1)), math.MaxFloat32,
		math.SmallestNonzeroFloat32, math.Float32frombits(0x7fc00001), math.Float32frombits(0xffbadbad)} {
		roundTrip(t, Float32(), v, sameBits32)
	}
	sameBits64 := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
	for _, v := range []float64{0, math.Copysign(0, -1), -2.25, math.Inf(1), math.MaxFloat64,
		math.SmallestNonzeroFloat64, math.NaN(), math.Float64frombits(0x7ff0000000000001), math.Float64frombits(0xfff8dead0000beef)} {
		roundTrip(t, Float64(), v, sameBits64)
	}
	for _, v := range []string{"", "hello", "héllo wörld ✓", "\x00nul", strings.Repeat("x", 1<<16)} {
		roundTrip(t, String(), v, equal)
	}
	for _, v := range [][]byte{{}, {0}, {0xff, 0x00, 0x80}, make([]byte, 300)} {
		roundTrip(t, Bytes(), v, func(a, b []byte) bool { return string(a) == string(b) })
	}
	for _, v := range []time.Time{
		time.UnixMilli(0).UTC(), time.UnixMilli(-1).UTC(), time.UnixMilli(-62135596800000).UTC(),
		time.UnixMilli(1700000000123).UTC(), time.UnixMilli(math.MaxInt64).UTC(), time.UnixMilli(math.MinInt64).UTC(),
	} {
		roundTrip(t, Timestamp(), v, time.Time.Equal)
	}
}

func TestBytesNilAndEmpty(t *testing.T) {
	a := must[[]byte](t)(Bytes().Append(nil, nil))
	b := must[[]byte](t)(Bytes().Append(nil, []byte{}))
	if len(a) != 0 || len(b) != 0 {
		t.Fatalf("nil and empty encode to %x and %x, want nothing", a, b)
	}
	got := must[[]byte](t)(Bytes().Decode(nil))
	if got == nil || len(got) != 0 {
		t.Fatalf("Decode of zero bytes = %#v, want an empty non-nil slice", got)
	}
	src := []byte{1, 2, 3}
	got = must[[]byte](t)(Bytes().Decode(src))
	src[0] = 9
	if got[0] != 1 {
		t.Fatal("Decode kept a reference to its input")
	}
}

func TestTimestampPrecisionAndZone(t *testing.T) {
	zone := time.FixedZone("X", 5*3600)
	in := time.Date(2024, 3, 1, 12, 0, 0, 987_654_321, zone)
	got := must[time.Time](t)(Timestamp().Decode(must[[]byte](t)(Timestamp().Append(nil, in))))
	want := time.Date(2024, 3, 1, 7, 0, 0, 987_000_000, time.UTC)
	if !got.Equal(want) || got.Location() != time.UTC {
		t.Fatalf("got %v, want %v in UTC", got, want)
	}
	// Before the epoch, sub-millisecond parts round towards the past.
	neg := time.Unix(0, -1).UTC()
	got = must[time.Time](t)(Timestamp().Decode(must[[]byte](t)(Timestamp().Append(nil, neg))))
	if got.UnixMilli() != -1 {
		t.Fatalf("1ns before the epoch became %d ms, want -1", got.UnixMilli())
	}
	for _, out := range []time.Time{time.UnixMilli(math.MaxInt64).Add(time.Millisecond), time.UnixMilli(math.MinInt64).Add(-time.Nanosecond)} {
		if _, err := Timestamp().Append(nil, out); !errors.Is(err, ErrEncode) {
			t.Errorf("Append(%v) = %v, want ErrEncode", out, err)
		}
	}
}

func TestPrimitiveDecodeErrors(t *testing.T) {
	for _, c := range []struct {
		s   Serializer
		src string
		msg string
	}{
		{Bool(), "", "bool: want 1 bytes, got 0"},
		{Bool(), "02", "bool: byte 0x02 is neither 0x00 nor 0x01"},
		{Bool(), "0100", "bool: want 1 bytes, got 2"},
		{Int32(), "000000", "int32: want 4 bytes, got 3"},
		{Int64(), "0000000000", "int64: want 8 bytes, got 5"},
		{Int64(), "000000000000000000", "int64: want 8 bytes, got 9"},
		{Float32(), "00", "float32: want 4 bytes, got 1"},
		{Float64(), "", "float64: want 8 bytes, got 0"},
		{String(), "ff", "string: not valid UTF-8"},
		{String(), "c3", "string: not valid UTF-8"},
		{Timestamp(), "0102", "timestamp: want 8 bytes, got 2"},
		{Void(), "00", "void: want 0 bytes, got 1"},
		{Window(), "00", "window: want 16 bytes, got 1"},
	} {
		_, err := c.s.DecodeAny(unhex(t, c.src))
		if !errors.Is(err, ErrDecode) || !strings.HasSuffix(err.Error(), c.msg) {
			t.Errorf("%s: Decode(%s) = %v, want ErrDecode ending %q", c.s.Snapshot(), c.src, err, c.msg)
		}
	}
	if _, err := String().Append(nil, "bad \xff"); !errors.Is(err, ErrEncode) {
		t.Errorf("Append of invalid UTF-8 = %v, want ErrEncode", err)
	}
}

func TestAppendAnyChecksType(t *testing.T) {
	for _, c := range []struct {
		s Serializer
		v any
	}{
		{Int64(), int32(1)}, {Int32(), 1}, {String(), []byte("x")}, {Bytes(), "x"},
		{Timestamp(), int64(0)}, {List(Int64()), []int32{1}}, {Window(), VoidNamespace{}},
	} {
		dst := []byte("keep")
		out, err := c.s.AppendAny(dst, c.v)
		if !errors.Is(err, ErrEncode) || string(out) != "keep" {
			t.Errorf("%s.AppendAny(%T) = %q, %v; want dst unchanged and ErrEncode", c.s.Snapshot(), c.v, out, err)
		}
	}
	v, err := Int64().DecodeAny(unhex(t, "000000000000002a"))
	if v != any(int64(42)) || err != nil {
		t.Fatalf("DecodeAny = %#v, %v", v, err)
	}
}

func TestPrimitivesDoNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 64)
	ts := time.UnixMilli(1700000000000)
	check := func(name string, f func()) {
		t.Helper()
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s allocates %v times", name, n)
		}
	}
	check("bool", func() { _, _ = Bool().Append(buf, true); _, _ = Bool().Decode([]byte{1}) })
	check("int32", func() { b, _ := Int32().Append(buf, 7); _, _ = Int32().Decode(b) })
	check("int64", func() { b, _ := Int64().Append(buf, 7); _, _ = Int64().Decode(b) })
	check("float32", func() { b, _ := Float32().Append(buf, 7); _, _ = Float32().Decode(b) })
	check("float64", func() { b, _ := Float64().Append(buf, 7); _, _ = Float64().Decode(b) })
	check("string append", func() { _, _ = String().Append(buf, "hello") })
	check("bytes append", func() { _, _ = Bytes().Append(buf, []byte("hello")) })
	check("timestamp", func() { b, _ := Timestamp().Append(buf, ts); _, _ = Timestamp().Decode(b) })
	check("window", func() { b, _ := Window().Append(buf, TimeWindow{1, 2}); _, _ = Window().Decode(b) })
	check("void", func() { b, _ := Void().Append(buf, VoidNamespace{}); _, _ = Void().Decode(b) })
	src := []byte("hello")
	if n := testing.AllocsPerRun(100, func() { _, _ = String().Decode(src) }); n != 1 {
		t.Errorf("string decode allocates %v times, want 1 (the string)", n)
	}
}
