package export

import (
	"encoding/json"
	"errors"
	"math/big"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/hamba/avro/v2"

	"github.com/stateproc/stateproc/serializers"
)

// fuzzSchema nests every kind of Avro node the decoder has.
const fuzzSchema = `{"type":"record","name":"F","fields":[
 {"name":"s","type":"string"},
 {"name":"n","type":["null","long"]},
 {"name":"u","type":["null","string",{"type":"enum","name":"E","symbols":["A","B"]},{"type":"record","name":"P","fields":[{"name":"x","type":"double"}]}]},
 {"name":"a","type":{"type":"array","items":{"type":"map","values":["null","int"]}}},
 {"name":"z","type":{"type":"array","items":"null"}},
 {"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":5,"scale":1}},
 {"name":"w","type":{"type":"fixed","name":"W","size":20,"logicalType":"decimal","precision":45,"scale":0}},
 {"name":"t","type":{"type":"fixed","name":"T","size":12,"logicalType":"duration"}},
 {"name":"b","type":"boolean"},
 {"name":"f","type":"float"}
]}`

// FuzzAvroDatum feeds bytes to the compiled decoder of fuzzSchema: it
// never panics, every error is a decode error, and what it accepts builds
// a well-formed Arrow array.
func FuzzAvroDatum(f *testing.F) {
	col, err := avroColumn(fuzzSchema, "value")
	if err != nil {
		f.Fatal(err)
	}
	ser, err := serializers.AvroGeneric(fuzzSchema)
	if err != nil {
		f.Fatal(err)
	}
	for _, v := range []map[string]any{
		{"s": "x", "n": nil, "u": nil, "a": []any{}, "z": []any{}, "d": ratOf(1), "w": ratOf(-5), "t": durationOf(1, 2, 3), "b": true, "f": float32(1)},
		{"s": "", "n": int64(-3), "u": "text", "a": []any{map[string]any{"k": nil, "j": int32(7)}}, "z": []any{nil, nil}, "d": ratOf(-9999), "w": ratOf(0), "t": durationOf(0, 0, 0), "b": false, "f": float32(0)},
		{"s": "é", "n": int64(1) << 60, "u": map[string]any{"P": map[string]any{"x": 2.5}}, "a": []any{}, "z": []any{}, "d": ratOf(0), "w": ratOf(1), "t": durationOf(1, 1, 1), "b": true, "f": float32(-1)},
		{"s": "y", "n": nil, "u": map[string]any{"E": "B"}, "a": []any{}, "z": []any{}, "d": ratOf(0), "w": ratOf(1), "t": durationOf(1, 1, 1), "b": true, "f": float32(-1)},
	} {
		b, err := ser.AppendAny(nil, v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x02, 'x', 0x00, 0x00, 0x01, 0x02, 0x00})
	f.Add([]byte{0x02, 'x', 0x00, 0x00, 0x01, 0x00, 0x03, 0x10})
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: col.typ, Nullable: col.nullable}}, nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		rb := array.NewRecordBuilder(memAlloc, schema)
		defer rb.Release()
		err := col.bind(rb.Field(0)).decode(b)
		if err != nil {
			if !errors.Is(err, serializers.ErrDecode) {
				t.Fatalf("error %v is not a decode error", err)
			}
			return
		}
		rec := rb.NewRecordBatch()
		defer rec.Release()
		if rec.NumRows() != 1 {
			t.Fatalf("%d rows", rec.NumRows())
		}
		if _, err := json.Marshal(rec.Column(0).GetOneForMarshal(0)); err != nil {
			t.Fatal(err)
		}
	})
}

func ratOf(n int64) *big.Rat { return big.NewRat(n, 10) }

func durationOf(months, days, millis uint32) avro.LogicalDuration {
	return avro.LogicalDuration{Months: months, Days: days, Milliseconds: millis}
}

// BenchmarkAvroDecode decodes the records of fuzzSchema's shape, with
// strings, a map per array item and decimals, straight into Arrow
// builders, as export does for every value of an Avro state.
func BenchmarkAvroDecode(b *testing.B) {
	col, err := avroColumn(fuzzSchema, "value")
	if err != nil {
		b.Fatal(err)
	}
	ser, err := serializers.AvroGeneric(fuzzSchema)
	if err != nil {
		b.Fatal(err)
	}
	items := make([]any, 8)
	for i := range items {
		items[i] = map[string]any{"alpha": int32(i), "beta": nil, "gamma": int32(-i)}
	}
	src, err := ser.AppendAny(nil, map[string]any{
		"s": "session-0001234", "n": int64(1) << 40, "u": "text value", "a": items, "z": []any{nil, nil},
		"d": ratOf(-9999), "w": ratOf(123456789), "t": durationOf(1, 2, 3), "b": true, "f": float32(1.5),
	})
	if err != nil {
		b.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: col.typ, Nullable: col.nullable}}, nil)
	rb := array.NewRecordBuilder(memAlloc, schema)
	defer rb.Release()
	dec := col.bind(rb.Field(0))
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for i := range b.N {
		if err := dec.decode(src); err != nil {
			b.Fatal(err)
		}
		if i%1024 == 1023 {
			rb.NewRecordBatch().Release()
		}
	}
}

// A batch makes room up front for no more rows than rowGroupBytes of
// fixed-width values hold: the index's row count and a fixed's size are
// input.
func TestReserveRowsIsBoundedByWidth(t *testing.T) {
	for _, c := range []struct {
		schema       string
		maxRows, out int
	}{
		{`"long"`, 128 << 10, 128 << 10},
		{`"string"`, 128 << 10, 128 << 10},
		{`{"type":"fixed","name":"F","size":1048576}`, 128 << 10, 64},
		{`{"type":"fixed","name":"F","size":1048576}`, 3, 3},
		{`{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"fixed","name":"F","size":524288}},{"name":"b","type":"F"}]}`, 1 << 20, 64},
		{`{"type":"array","items":{"type":"fixed","name":"F","size":1048576}}`, 128 << 10, 128 << 10},
	} {
		col, err := avroColumn(c.schema, "value")
		if err != nil {
			t.Fatal(err)
		}
		schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: col.typ, Nullable: col.nullable}}, nil)
		if got := reserveRows(schema, c.maxRows); got != c.out {
			t.Errorf("%s, %d rows: reserves %d, want %d", c.schema, c.maxRows, got, c.out)
		}
	}
}
