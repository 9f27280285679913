package serializers

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

type restoreCase struct {
	name    string
	typed   Serializer
	value   any // the typed value
	untyped any // what the restored serializer decodes it to
}

func restoreCases(t testing.TB) []restoreCase {
	seven := int64(7)
	var null *int64
	req := must[Of[OpenRequest]](t)(Avro[OpenRequest](openRequestSchema))
	ts := time.UnixMilli(1700000000123).UTC()
	return []restoreCase{
		{"bool", Bool(), true, true},
		{"int32", Int32(), int32(-7), int32(-7)},
		{"int64", Int64(), int64(math.MinInt64), int64(math.MinInt64)},
		{"float32", Float32(), float32(1.5), float32(1.5)},
		{"float64", Float64(), -0.25, -0.25},
		{"string", String(), "héllo", "héllo"},
		{"bytes", Bytes(), []byte{1, 2}, []byte{1, 2}},
		{"timestamp", Timestamp(), ts, ts},
		{"void", Void(), VoidNamespace{}, VoidNamespace{}},
		{"window", Window(), TimeWindow{1, 2}, TimeWindow{1, 2}},
		{"avro typed", req, sampleRequest, map[string]any{
			"request_id": "r-1093", "tenant_id": "tenant-acme", "model": "gpt",
			"started_ts": int64(1700000000000), "prompt_tokens": 321,
		}},
		{"list", List(String()), []string{"b", "a"}, []any{"b", "a"}},
		{"empty list", List(String()), []string{}, []any{}},
		{"map", Map(String(), Int64()), map[string]int64{"b": 1, "a": 2},
			[]MapEntry{{"a", int64(2)}, {"b", int64(1)}}},
		{"empty map", Map(String(), Int64()), map[string]int64{}, []MapEntry{}},
		{"map of avro", Map(Int32(), req), map[int32]OpenRequest{2: {}, 1: sampleRequest}, nil},
		{"nullable null", Nullable(Int64()), (*int64)(nil), nil},
		{"nullable", Nullable(Int64()), &seven, int64(7)},
		{"nullable of null", Nullable(Nullable(Int64())), &null, Present{Value: nil}},
		{"nullable of present", Nullable(Nullable(Nullable(Int64()))), func() ***int64 { p := &null; return &p }(),
			Present{Value: Present{Value: nil}}},
		{"ttl", TTL(List(Int32())), TTLValue[[]int32]{LastModified: 99, Value: []int32{5}},
			TTLValue[any]{LastModified: 99, Value: []any{int32(5)}}},
		{"ttl avro", TTL(req), TTLValue[OpenRequest]{LastModified: -1, Value: sampleRequest}, nil},
		{"timer", Timer(String(), Window()), TimerValue[string, TimeWindow]{Timestamp: -3, Key: "k", Namespace: TimeWindow{0, 9}},
			TimerValue[any, any]{Timestamp: -3, Key: "k", Namespace: TimeWindow{0, 9}}},
		{"timer void", Timer(Int64(), Void()), TimerValue[int64, VoidNamespace]{Timestamp: 3, Key: 4},
			TimerValue[any, any]{Timestamp: 3, Key: int64(4), Namespace: VoidNamespace{}}},
	}
}

func TestRestoreWritesTheSameBytes(t *testing.T) {
	for _, c := range restoreCases(t) {
		t.Run(c.name, func(t *testing.T) {
			want := must[[]byte](t)(c.typed.AppendAny(nil, c.value))
			r := must[Serializer](t)(Restore(c.typed.Snapshot()))
			if !r.Snapshot().Equal(c.typed.Snapshot()) {
				t.Fatalf("restored snapshot %v, want %v", r.Snapshot(), c.typed.Snapshot())
			}
			u := must[any](t)(r.DecodeAny(want))
			if c.untyped != nil && !reflect.DeepEqual(u, c.untyped) {
				t.Fatalf("restored decodes %#v, want %#v", u, c.untyped)
			}
			if got := must[[]byte](t)(r.AppendAny(nil, u)); !bytes.Equal(got, want) {
				t.Fatalf("restored re-encodes %x, typed wrote %x", got, want)
			}
			if c.untyped != nil {
				if got := must[[]byte](t)(r.AppendAny(nil, c.untyped)); !bytes.Equal(got, want) {
					t.Fatalf("restored encodes %#v as %x, typed wrote %x", c.untyped, got, want)
				}
			}
			if back := must[any](t)(c.typed.DecodeAny(want)); !reflect.DeepEqual(back, c.value) {
				t.Fatalf("typed decodes %#v, want %#v", back, c.value)
			}
		})
	}
}

func TestRestoredMapSortsEntries(t *testing.T) {
	r := must[Serializer](t)(Restore(Map(String(), Int64()).Snapshot()))
	a := must[[]byte](t)(r.AppendAny(nil, []MapEntry{{"b", int64(1)}, {"a", int64(2)}}))
	b := must[[]byte](t)(r.AppendAny(nil, []MapEntry{{"a", int64(2)}, {"b", int64(1)}}))
	if !bytes.Equal(a, b) {
		t.Fatalf("entry order changed the bytes: %x vs %x", a, b)
	}
	if _, err := r.AppendAny(nil, []MapEntry{{"a", int64(2)}, {"a", int64(1)}}); !errors.Is(err, ErrEncode) {
		t.Fatalf("duplicate keys: %v", err)
	}
	// Keys need not be comparable Go values.
	rb := must[Serializer](t)(Restore(Snapshot{Kind: KindMap, Args: []Snapshot{{Kind: KindBytes}, {Kind: KindBool}}}))
	if _, err := rb.AppendAny(nil, []MapEntry{{[]byte("k"), true}}); err != nil {
		t.Fatal(err)
	}
}

func TestRestoreRejectsMalformedSnapshots(t *testing.T) {
	deep := Snapshot{Kind: KindInt64}
	for range 31 {
		deep = Snapshot{Kind: KindList, Args: []Snapshot{deep}}
	}
	if _, err := Restore(deep); err != nil {
		t.Fatalf("32 levels: %v", err)
	}
	tooDeep := Snapshot{Kind: KindNullable, Args: []Snapshot{deep}}
	for _, c := range []struct {
		s   Snapshot
		msg string
	}{
		{Snapshot{}, `unknown kind ""`},
		{Snapshot{Kind: "int16"}, `unknown kind "int16"`},
		{Snapshot{Kind: KindList}, "list takes 1 nested serializers, has 0"},
		{Snapshot{Kind: KindMap, Args: []Snapshot{{Kind: KindString}}}, "map takes 2 nested serializers, has 1"},
		{Snapshot{Kind: KindInt64, Args: []Snapshot{{Kind: KindString}}}, "int64 takes 0 nested serializers, has 1"},
		{Snapshot{Kind: KindString, Schema: `"string"`}, "string has a schema; only avro does"},
		{Snapshot{Kind: KindAvro, Schema: `{"type":"record","name":"R","fields":[{"name":"a"}]}`}, "avro: schema does not parse"},
		{Snapshot{Kind: KindAvro, Schema: `{"type":`}, "avro: schema does not parse: not JSON"},
		{Snapshot{Kind: KindAvro}, "avro: schema does not parse: not JSON"},
		{Snapshot{Kind: KindTTL, Args: []Snapshot{{Kind: KindTimer, Args: []Snapshot{{Kind: "x"}, {Kind: KindVoid}}}}}, `unknown kind "x"`},
		{tooDeep, "nests deeper than 32"},
	} {
		_, err := Restore(c.s)
		if !errors.Is(err, ErrSnapshot) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Restore(%v) = %v, want ErrSnapshot containing %q", c.s, err, c.msg)
		}
	}
}
