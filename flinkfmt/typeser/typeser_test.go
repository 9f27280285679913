package typeser

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
)

func restore(t *testing.T, snap buf) *Serializer {
	t.Helper()
	r := wire.New(snap, 0)
	s, err := ReadVersioned(r)
	if err != nil {
		t.Fatal(err)
	}
	if r.Len() != 0 {
		t.Fatalf("%d bytes of the snapshot left", r.Len())
	}
	return s
}

func decode(t *testing.T, s *Serializer, b buf) any {
	t.Helper()
	v, err := s.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestStringValue(t *testing.T) {
	s := restore(t, stringSnap)
	long := strings.Repeat("x", 200)
	for _, c := range []struct {
		in   buf
		want any
	}{
		{buf{0}, nil},
		{buf(nil).ascii(""), ""},
		{buf(nil).ascii("hello"), "hello"},
		{buf(nil).ascii(long), long},
		{buf(nil).str('h', 0xE9, 'l'), "hél"},
		// A supplementary character is two UTF-16 units, each its own varint.
		{buf(nil).str(0xD83D, 0xDE00), "\U0001F600"},
	} {
		if got := decode(t, s, c.in); got != c.want {
			t.Errorf("% x: %q, want %q", c.in, got, c.want)
		}
	}
	if _, err := s.Decode(buf{0x10, 'a'}); !errors.Is(err, ErrValue) {
		t.Errorf("a length past the end: %v", err)
	}
}

func TestTupleOfPrimitives(t *testing.T) {
	s := restore(t, composite("org.apache.flink.api.java.typeutils.runtime.TupleSerializerSnapshot", buf(nil).utf("org.apache.flink.api.java.tuple.Tuple2"), longSnap, stringSnap))
	if got := s.Type.String(); got != "Tuple2{f0: int64, f1: string}" {
		t.Errorf("type %s", got)
	}
	v := decode(t, s, buf(nil).i64(-7).ascii("k"))
	want := RecordValue{Class: "org.apache.flink.api.java.tuple.Tuple2", Fields: []FieldValue{{"f0", int64(-7)}, {"f1", "k"}}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("%#v", v)
	}
	if s.FixedLen() != -1 || restore(t, longSnap).FixedLen() != 8 {
		t.Error("fixed lengths")
	}
}

func TestTTLListAndMap(t *testing.T) {
	ttl := composite("org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot", nil, longSnap, stringSnap)
	list := restore(t, composite(base+"ListSerializerSnapshot", nil, ttl))
	v := decode(t, list, buf(nil).i32(2).i64(1000).ascii("a").i64(2000).ascii("b"))
	want := []any{TTLValue{1000, "a"}, TTLValue{2000, "b"}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("list %#v", v)
	}
	m := restore(t, composite(base+"MapSerializerSnapshot", nil, stringSnap, longSnap))
	v = decode(t, m, buf(nil).i32(2).ascii("x").u8(0).i64(5).ascii("y").u8(1))
	if !reflect.DeepEqual(v, []MapEntry{{"x", int64(5)}, {"y", nil}}) {
		t.Errorf("map %#v", v)
	}
	if _, err := m.Decode(buf(nil).i32(1 << 30)); !errors.Is(err, ErrValue) {
		t.Errorf("a hostile map size: %v", err)
	}
}

func TestNullableAndEnum(t *testing.T) {
	n := restore(t, composite("org.apache.flink.api.java.typeutils.runtime.NullableSerializer$NullableSerializerSnapshot", buf(nil).i32(8), longSnap))
	if v := decode(t, n, buf{1, 0, 0, 0, 0, 0, 0, 0, 0}); v != nil {
		t.Errorf("null %v", v)
	}
	if v := decode(t, n, buf(nil).u8(0).i64(9)); v != int64(9) {
		t.Errorf("9: %v", v)
	}
	if n.FixedLen() != 9 {
		t.Errorf("padded nullable length %d", n.FixedLen())
	}
	e := restore(t, versioned(base+"EnumSerializer$EnumSerializerSnapshot", 2, buf(nil).utf("com.example.Color").i32(2).utf("RED").utf("GREEN")))
	if v := decode(t, e, buf(nil).i32(1)); v != "GREEN" {
		t.Errorf("enum %v", v)
	}
	if _, err := e.Decode(buf(nil).i32(2)); !errors.Is(err, ErrValue) {
		t.Errorf("enum ordinal out of range: %v", err)
	}
}

// optionalMap writes LinkedOptionalMapSerializer's form with framed keys
// and values.
func optionalMap(entries ...[3]buf) buf {
	b := buf(nil).i64(optionalMapHdr).i32(len(entries))
	for _, e := range entries {
		b = b.utf(string(e[0])).u8(1).i32(len(e[1])).raw(e[1]...).u8(1).i32(len(e[2])).raw(e[2]...)
	}
	return b
}

func TestPojo(t *testing.T) {
	field := func(name string) buf { return buf(nil).utf(name).utf("com.example.Person") }
	body := buf(nil).utf("com.example.Person").
		raw(optionalMap([3]buf{buf("name"), field("name"), stringSnap}, [3]buf{buf("age"), field("age"), intSnap})...).
		raw(optionalMap()...).raw(optionalMap()...)
	s := restore(t, versioned("org.apache.flink.api.java.typeutils.runtime.PojoSerializerSnapshot", 2, body))
	if got := s.Type.String(); got != "Person{name: string, age: int32}" {
		t.Errorf("type %s", got)
	}
	v := decode(t, s, buf(nil).u8(pojoNoSubclass).u8(0).ascii("Ada").u8(0).i32(36))
	want := RecordValue{Class: "com.example.Person", Fields: []FieldValue{{"name", "Ada"}, {"age", int32(36)}}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("%#v", v)
	}
	v = decode(t, s, buf(nil).u8(pojoNoSubclass).u8(1).u8(0).i32(1))
	if r := v.(RecordValue); r.Fields[0].Value != nil {
		t.Errorf("a null field: %#v", v)
	}
	if v := decode(t, s, buf{pojoNull}); v != nil {
		t.Errorf("a null POJO: %#v", v)
	}
	if _, err := s.Decode(buf{0x40}); !errors.Is(err, ErrValue) {
		t.Errorf("unknown flags: %v", err)
	}
	// A subclass without a snapshot cannot be walked in a stream.
	if _, err := s.Read(wire.New(buf(nil).u8(pojoSubclass).utf("com.example.Student").u8(7), 0)); !errors.Is(err, ErrUnframed) {
		t.Errorf("an unknown subclass: %v", err)
	}
}

func TestKryoDefaultRegistrations(t *testing.T) {
	s := restore(t, versioned("org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", 2,
		buf(nil).utf("java.lang.Object").raw(optionalMap()...).raw(optionalMap()...).raw(optionalMap()...)))
	for _, c := range []struct {
		in   buf
		want any
	}{
		{buf{0}, nil},
		{buf{kryoLong, 6}, int64(3)},
		{buf{kryoLong, 1}, int64(-1)},
		{buf{kryoInt, 0xAC, 0x02}, int32(150)},
		{buf{kryoString, kryoNotNull, 'a', 'b' | 0x80}, "ab"},
		{buf{kryoString, kryoNotNull, 0x81}, ""},
		{buf{kryoString, kryoNotNull, 0x83, 'h', 0xC3, 0xA9}, "h\u00e9"},
		{buf{kryoBoolean, 1}, true},
	} {
		if got := decode(t, s, c.in); got != c.want {
			t.Errorf("% x: %#v, want %#v", c.in, got, c.want)
		}
	}
	// A class the job registered: opaque at the end of a frame, no length
	// in a stream.
	v := decode(t, s, buf{12, 1, 2, 3})
	if o, ok := v.(OpaqueValue); !ok || len(o.Bytes) != 4 || o.Class != "java.lang.Object" {
		t.Errorf("a registered class: %#v", v)
	}
	if _, err := s.Read(wire.New(buf{12, 1, 2, 3}, 0)); !errors.Is(err, ErrUnframed) {
		t.Errorf("in a stream: %v", err)
	}
}

func TestJavaSerializedValues(t *testing.T) {
	s := restore(t, simpleSnap("org.apache.flink.runtime.state.JavaSerializer$JavaSerializerSnapshot"))
	str := buf{0xAC, 0xED, 0, 5, 0x74, 0, 2, 'h', 'i'}
	if v := decode(t, s, str); v != "hi" {
		t.Errorf("a Java string: %#v", v)
	}
	// A stream that ends early is a malformed value, not a panic.
	if _, err := s.Decode(str[:7]); !errors.Is(err, ErrValue) {
		t.Errorf("truncated: %v", err)
	}
}

func TestFlinkAvroEncoding(t *testing.T) {
	schema := `{"type":"record","name":"R","fields":[{"name":"n","type":"int"},{"name":"s","type":"string"},` +
		`{"name":"xs","type":{"type":"array","items":"long"}},{"name":"o","type":["null","string"]},` +
		`{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}}]}`
	s := restore(t, versioned("org.apache.flink.formats.avro.typeutils.AvroSerializerSnapshot", 2, buf(nil).utf("com.example.R").utf(schema)))
	// DataOutputEncoder: int32 555, string with an int32 length, an array
	// as a varint count, items and a zero count, the union branch and the
	// enum symbol as int32s.
	in := buf(nil).i32(555).i32(2).raw('h', 'i').u8(2).i64(7).i64(-1).u8(0).i32(1).i32(1).raw('z').i32(1)
	v := decode(t, s, in)
	want := map[string]any{"n": 555, "s": "hi", "xs": []any{int64(7), int64(-1)}, "o": "z", "e": "B"}
	if fmt.Sprint(v) != fmt.Sprint(want) {
		t.Errorf("%v\nwant %v", v, want)
	}
	got, err := s.Read(wire.New(append(in, 0xFF), 0))
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("in a stream: %v, %v", got, err)
	}
}

func TestSnapshotBounds(t *testing.T) {
	snap := longSnap
	for i := 0; i <= MaxDepth; i++ {
		snap = composite(base+"ListSerializerSnapshot", nil, snap)
	}
	if _, err := ReadVersioned(wire.New(snap, 0)); !errors.Is(err, ErrSnapshot) {
		t.Errorf("nesting deeper than MaxDepth: %v", err)
	}
	if _, err := ReadVersioned(wire.New(versioned("com.example.MySnapshot", 1, nil), 0)); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "com.example.MySnapshot") {
		t.Errorf("an unknown class: %v", err)
	}
	bad := composite(base+"ListSerializerSnapshot", nil, longSnap)
	bad[len(bad)-len(longSnap)-1] = 9 // the nested count
	if _, err := ReadVersioned(wire.New(bad, 0)); !errors.Is(err, ErrSnapshot) {
		t.Errorf("a nested count past the end: %v", err)
	}
}

func TestWindowsAndNamespaces(t *testing.T) {
	w := restore(t, simpleSnap("org.apache.flink.streaming.api.windowing.windows.TimeWindow$Serializer$TimeWindowSerializerSnapshot"))
	if v := decode(t, w, buf(nil).i64(10).i64(20)); v != (TimeWindow{10, 20}) {
		t.Errorf("window %v", v)
	}
	ns := restore(t, simpleSnap("org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot"))
	if v := decode(t, ns, buf{0}); v != (VoidNamespace{}) || ns.FixedLen() != 1 {
		t.Errorf("void namespace %v", v)
	}
	timer := restore(t, composite("org.apache.flink.streaming.api.operators.TimerSerializerSnapshot", nil, longSnap, simpleSnap("org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot")))
	v := decode(t, timer, buf(nil).i64(5^-1<<63).i64(3).u8(0))
	if v != (TimerValue{Timestamp: 5, Key: int64(3), Namespace: VoidNamespace{}}) {
		t.Errorf("timer %v", v)
	}
}

// PrefixFree's promise for strings: Skip over bytes that start with a
// string's encoding steps over exactly that string, whatever follows, so a
// string's encoding is never a prefix of another's; the int serializer
// makes no such promise.
func TestStringsArePrefixFree(t *testing.T) {
	s := restore(t, stringSnap)
	if !s.PrefixFree() || restore(t, intSnap).PrefixFree() {
		t.Fatalf("PrefixFree: string %v, int %v; want true, false", s.PrefixFree(), restore(t, intSnap).PrefixFree())
	}
	vals := []buf{
		buf{0}, buf(nil).ascii(""), buf(nil).ascii("a"), buf(nil).ascii("ab"), buf(nil).ascii(strings.Repeat("a", 130)),
		buf(nil).str('a', 0xE9), buf(nil).str('a', 0xE9, 'b'), buf(nil).str(0xD83D, 0xDE00),
	}
	tails := []buf{nil, {0}, {1, 'x'}, {0x80, 0x80}, buf(nil).ascii("zz")}
	for i, a := range vals {
		for j, b := range vals {
			for _, tail := range tails {
				in := append(append(buf(nil), b...), tail...)
				r := wire.New(in, 0)
				if err := s.Skip(r); err != nil {
					t.Fatalf("% x: %v", in, err)
				}
				if r.Pos() != len(b) {
					t.Fatalf("% x: Skip stepped over %d bytes, the string is %d", in, r.Pos(), len(b))
				}
				if i != j && strings.HasPrefix(string(in), string(a)) {
					t.Errorf("% x starts with % x, the encoding of another string", in, a)
				}
			}
		}
	}
}

// QuickSkip steps over what Skip steps over, for the serializers it
// compiles, and declines everything Skip would fail on: every value below
// and every truncation of it, with bytes after it. The serializers with
// branches or counts are declined outright.
func TestQuickSkipIsSkip(t *testing.T) {
	void := simpleSnap("org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot")
	window := simpleSnap("org.apache.flink.streaming.api.windowing.windows.TimeWindow$Serializer$TimeWindowSerializerSnapshot")
	bytesSnap := simpleSnap("org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer$BytePrimitiveArraySerializerSnapshot")
	tuple := composite("org.apache.flink.api.java.typeutils.runtime.TupleSerializerSnapshot", buf(nil).utf("org.apache.flink.api.java.tuple.Tuple3"), stringSnap, longSnap, bytesSnap)
	ttl := composite("org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot", nil, longSnap, stringSnap)
	timer := composite("org.apache.flink.streaming.api.operators.TimerSerializerSnapshot", nil, stringSnap, window)
	widths := map[string]int{"long": 8, "void": 1, "window": 16}
	for _, c := range []struct {
		name   string
		snap   buf
		values []buf
	}{
		{"long", longSnap, []buf{buf(nil).i64(-1)}},
		{"void", void, []buf{{0}}},
		{"window", window, []buf{buf(nil).i64(1).i64(2)}},
		{"string", stringSnap, []buf{{0}, buf(nil).ascii(""), buf(nil).ascii("user-42"), buf(nil).str('a', 0xE9, 0xD83D, 0xDE00)}},
		{"bytes", bytesSnap, []buf{buf(nil).i32(0), buf(nil).i32(3).raw(1, 2, 3)}},
		{"tuple", tuple, []buf{buf(nil).ascii("k").i64(7).i32(1).raw(9), buf(nil).str(0xE9).i64(0).i32(0)}},
		{"ttl", ttl, []buf{buf(nil).i64(1000).ascii("v")}},
		{"timer", timer, []buf{buf(nil).i64(5).ascii("k").i64(1).i64(2)}},
	} {
		s := restore(t, c.snap)
		want := -1
		if w, ok := widths[c.name]; ok {
			want = w
		}
		if s.QuickWidth() != want {
			t.Errorf("%s: QuickWidth %d, want %d", c.name, s.QuickWidth(), want)
		}
		for _, v := range c.values {
			if n, ok := s.QuickSkip(append(v, 0x80, 0xFF)); !ok || n != len(v) {
				t.Errorf("%s % x: QuickSkip gives %d, %v; want %d, true", c.name, v, n, ok, len(v))
			}
			for cut := range v {
				in := append(append(buf(nil), v[:cut]...), 0xFF, 0xFF, 0xFF, 0xFF, 0xFF)[:cut+cut%3]
				r := wire.New(in, 0)
				err := s.Skip(r)
				if n, ok := s.QuickSkip(in); ok && (err != nil || n != r.Pos()) {
					t.Errorf("%s % x: QuickSkip gives %d, Skip stops at %d (%v)", c.name, in, n, r.Pos(), err)
				}
			}
		}
	}
	for _, snap := range []buf{
		composite("org.apache.flink.api.java.typeutils.runtime.NullableSerializer$NullableSerializerSnapshot", buf(nil).i32(8), longSnap),
		composite(base+"ListSerializerSnapshot", nil, longSnap),
		composite(base+"MapSerializerSnapshot", nil, stringSnap, longSnap),
	} {
		s := restore(t, snap)
		if _, ok := s.QuickSkip(make(buf, 64)); ok || s.QuickWidth() >= 0 {
			t.Errorf("%s: QuickSkip steps over a value with a flag or a count", s.Type)
		}
	}
}
