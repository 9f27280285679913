package encode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stateproc/stateproc/serializers"
)

func snap(k serializers.Kind, args ...serializers.Snapshot) serializers.Snapshot {
	return serializers.Snapshot{Kind: k, Args: args}
}

func avroSnap(schema string) serializers.Snapshot {
	return serializers.Snapshot{Kind: serializers.KindAvro, Schema: schema}
}

func compile(t *testing.T, s serializers.Snapshot) *Column {
	t.Helper()
	c, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// want encodes v with the serializer of s: what the column must write.
func want(t *testing.T, s serializers.Snapshot, v any) []byte {
	t.Helper()
	ser, err := serializers.Restore(s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ser.AppendAny(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// arrowCells encodes every row of arr with the column of s.
func arrowCells(t *testing.T, s serializers.Snapshot, arr arrow.Array) ([][]byte, []error) {
	t.Helper()
	b, err := compile(t, s).Arrow(arr.DataType())
	if err != nil {
		t.Fatalf("%s from %s: %v", s.Kind, arr.DataType(), err)
	}
	b.Bind(arr)
	out, errs := make([][]byte, arr.Len()), make([]error, arr.Len())
	for i := range arr.Len() {
		out[i], errs[i] = b.Append(nil, i)
	}
	return out, errs
}

func fromJSON(t *testing.T, dt arrow.DataType, js string) arrow.Array {
	t.Helper()
	arr, _, err := array.FromJSON(memory.DefaultAllocator, dt, strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(arr.Release)
	return arr
}

// Decimals are written as hamba/avro writes them, whose bytes for a
// negative value are not the shortest: checked against the serializers
// over values at every byte boundary and random ones.
func TestDecimalBytesAsHamba(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	var values []*big.Int
	for _, v := range []int64{0, 1, -1, 127, 128, -128, -129, 255, 256, -255, -256, -257, 32767, -32768, -32769, math.MaxInt64, math.MinInt64} {
		values = append(values, big.NewInt(v))
	}
	for range 300 {
		v := new(big.Int).SetUint64(rng.Uint64())
		v.Mul(v, big.NewInt(rng.Int64N(1<<40)+1))
		if rng.IntN(2) == 0 {
			v.Neg(v)
		}
		values = append(values, v)
	}
	for _, schema := range []string{
		`{"type":"bytes","logicalType":"decimal","precision":38,"scale":3}`,
		`{"type":"fixed","name":"D","size":16,"logicalType":"decimal","precision":38,"scale":3}`,
	} {
		col := compile(t, avroSnap(schema))
		for _, v := range values {
			w := want(t, avroSnap(schema), new(big.Rat).SetFrac(v, pow10(3)))
			got, err := col.AppendJSON(nil, new(big.Rat).SetFrac(v, pow10(3)).FloatString(3))
			if err != nil || !bytes.Equal(got, w) {
				t.Fatalf("%s of %v: % x, %v; the serializers write % x", schema, v, got, err, w)
			}
		}
	}
}

func TestDecimalConversions(t *testing.T) {
	s := avroSnap(`{"type":"bytes","logicalType":"decimal","precision":5,"scale":2}`)
	dt := &arrow.Decimal128Type{Precision: 10, Scale: 3}
	arr := func() arrow.Array {
		b := array.NewDecimal128Builder(memory.DefaultAllocator, dt)
		defer b.Release()
		for _, v := range []int64{1230, 1234, 999990, 1000000} {
			b.Append(decimal128.FromI64(v))
		}
		return b.NewArray()
	}()
	defer arr.Release()
	got, errs := arrowCells(t, s, arr)
	if errs[0] != nil || !bytes.Equal(got[0], want(t, s, big.NewRat(123, 100))) {
		t.Errorf("1.230 at scale 2: % x, %v", got[0], errs[0])
	}
	for i, msg := range map[int]string{1: "more than the 2 fractional digits", 3: "more than the 5 digits"} {
		if errs[i] == nil || !strings.Contains(errs[i].Error(), msg) {
			t.Errorf("row %d: %v, want %q", i, errs[i], msg)
		}
	}
	if errs[2] != nil {
		t.Errorf("999.99: %v", errs[2])
	}
	col := compile(t, s)
	for _, bad := range []string{`"1/3"`, `"x"`, `"1.001"`} {
		if _, err := col.AppendJSON(nil, jsonValue(t, bad)); err == nil {
			t.Errorf("decimal %s accepted", bad)
		}
	}
	if got, err := col.AppendJSON(nil, jsonValue(t, `-1.5`)); err != nil || !bytes.Equal(got, want(t, s, big.NewRat(-3, 2))) {
		t.Errorf("-1.5 as a number: % x, %v", got, err)
	}
}

func jsonValue(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// Integers of any width take an integer serializer within its range.
func TestIntegers(t *testing.T) {
	int32s, long := snap(serializers.KindInt32), avroSnap(`"long"`)
	for _, dt := range []arrow.DataType{arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint64} {
		got, errs := arrowCells(t, int32s, fromJSON(t, dt, `[1, 100]`))
		if errs[0] != nil || !bytes.Equal(got[1], want(t, int32s, int32(100))) {
			t.Errorf("%s into int32: % x, %v", dt, got, errs)
		}
	}
	_, errs := arrowCells(t, int32s, fromJSON(t, arrow.PrimitiveTypes.Int64, `[2147483648, -2147483649, null]`))
	for i, msg := range []string{"out of the range of int32", "out of the range of int32", "null, and int32 cannot be null"} {
		if errs[i] == nil || !strings.Contains(errs[i].Error(), msg) {
			t.Errorf("row %d: %v, want %q", i, errs[i], msg)
		}
	}
	_, errs = arrowCells(t, long, fromJSON(t, arrow.PrimitiveTypes.Uint64, `[18446744073709551615]`))
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "18446744073709551615 is out of the range of long") {
		t.Errorf("uint64 max into long: %v", errs[0])
	}
	if _, err := compile(t, int32s).Arrow(arrow.PrimitiveTypes.Float64); err == nil || !strings.Contains(err.Error(), "a column of float64 cannot hold int32 values") {
		t.Errorf("float64 into int32: %v", err)
	}
	for js, ok := range map[string]bool{`7`: true, `-7`: true, `7.0`: false, `1e3`: false, `"7"`: false, `true`: false} {
		got, err := compile(t, long).AppendJSON(nil, jsonValue(t, js))
		if (err == nil) != ok {
			t.Errorf("long from %s: % x, %v", js, got, err)
		}
	}
}

// Timestamps, dates and times of any unit convert to the serializer's
// when they do exactly.
func TestTemporal(t *testing.T) {
	ts, micros := snap(serializers.KindTimestamp), avroSnap(`{"type":"long","logicalType":"timestamp-micros"}`)
	date, tm := avroSnap(`{"type":"int","logicalType":"date"}`), avroSnap(`{"type":"int","logicalType":"time-millis"}`)
	at := time.UnixMilli(1_700_000_000_123).UTC()
	for _, c := range []struct {
		s    serializers.Snapshot
		dt   arrow.DataType
		js   string
		want []any // per row: the Go value, or the error's words
	}{
		{ts, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, `["2023-11-14T22:13:20.123Z", "2023-11-14T22:13:20.1234Z"]`,
			[]any{at, "not a whole number of milliseconds"}},
		{ts, &arrow.TimestampType{Unit: arrow.Second}, `["2023-11-14T22:13:20"]`, []any{at.Truncate(time.Second)}},
		{ts, arrow.FixedWidthTypes.Date32, `["2023-11-14"]`, []any{time.Date(2023, 11, 14, 0, 0, 0, 0, time.UTC)}},
		{ts, arrow.PrimitiveTypes.Int64, `[1700000000123]`, []any{at}},
		{micros, &arrow.TimestampType{Unit: arrow.Nanosecond}, `["2023-11-14T22:13:20.123456789", "2023-11-14T22:13:20.123456"]`,
			[]any{"not a whole number of microseconds", at.Add(456 * time.Microsecond)}},
		{date, arrow.FixedWidthTypes.Date64, `["1969-07-20"]`, []any{time.Date(1969, 7, 20, 0, 0, 0, 0, time.UTC)}},
		{tm, arrow.FixedWidthTypes.Time64ns, `["01:30:00.005", "01:30:00.000001"]`, []any{90*time.Minute + 5*time.Millisecond, "not a whole number of milliseconds"}},
		{tm, arrow.FixedWidthTypes.Time32s, `["23:59:59"]`, []any{24*time.Hour - time.Second}},
	} {
		got, errs := arrowCells(t, c.s, fromJSON(t, c.dt, c.js))
		for i, w := range c.want {
			if msg, ok := w.(string); ok {
				if errs[i] == nil || !strings.Contains(errs[i].Error(), msg) {
					t.Errorf("%s from %s, row %d: %v, want %q", c.s, c.dt, i, errs[i], msg)
				}
				continue
			}
			if errs[i] != nil || !bytes.Equal(got[i], want(t, c.s, w)) {
				t.Errorf("%s from %s, row %d: % x, %v; want % x", c.s, c.dt, i, got[i], errs[i], want(t, c.s, w))
			}
		}
	}
	// JSON: RFC 3339 in any zone, or the number in the serializer's unit.
	for js, w := range map[string]any{
		`"2023-11-14T23:13:20.123+01:00"`: at, `1700000000123`: at, `"1969-12-31T23:59:59.999Z"`: time.UnixMilli(-1).UTC(),
	} {
		if got, err := compile(t, ts).AppendJSON(nil, jsonValue(t, js)); err != nil || !bytes.Equal(got, want(t, ts, w)) {
			t.Errorf("timestamp from %s: % x, %v", js, got, err)
		}
	}
	for _, js := range []string{`"2023-11-14 22:13:20"`, `"yesterday"`, `1.5`} {
		if _, err := compile(t, ts).AppendJSON(nil, jsonValue(t, js)); err == nil {
			t.Errorf("timestamp from %s accepted", js)
		}
	}
}

func TestFloats(t *testing.T) {
	f32, f64 := snap(serializers.KindFloat32), avroSnap(`"double"`)
	got, errs := arrowCells(t, f32, fromJSON(t, arrow.PrimitiveTypes.Float64, `[0.5, 0.1, "NaN"]`))
	if errs[0] != nil || !bytes.Equal(got[0], want(t, f32, float32(0.5))) || errs[2] != nil {
		t.Errorf("float64 into float32: %v", errs)
	}
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "does not fit a float32 exactly") {
		t.Errorf("0.1 into float32: %v", errs[1])
	}
	got, errs = arrowCells(t, f64, fromJSON(t, arrow.PrimitiveTypes.Float32, `[0.1]`))
	if errs[0] != nil || !bytes.Equal(got[0], want(t, f64, float64(float32(0.1)))) {
		t.Errorf("float32 into double: % x, %v", got[0], errs[0])
	}
	for js, w := range map[string]float64{`"+Inf"`: math.Inf(1), `"-Inf"`: math.Inf(-1), `1e308`: 1e308} {
		if got, err := compile(t, f64).AppendJSON(nil, jsonValue(t, js)); err != nil || !bytes.Equal(got, want(t, f64, w)) {
			t.Errorf("double from %s: % x, %v", js, got, err)
		}
	}
	// JSON writes a float32 in the fewest digits that read back as it.
	if got, err := compile(t, f32).AppendJSON(nil, jsonValue(t, `0.1`)); err != nil || !bytes.Equal(got, want(t, f32, float32(0.1))) {
		t.Errorf("float32 from 0.1: % x, %v", got, err)
	}
}

// Strings come from any textual column, checked for UTF-8; enums from
// dictionaries and strings, by symbol.
func TestText(t *testing.T) {
	s, enum := snap(serializers.KindString), avroSnap(`{"type":"enum","name":"E","symbols":["A","B"]}`)
	for dt, js := range map[arrow.DataType]string{
		arrow.BinaryTypes.LargeString: `["héllo"]`, arrow.BinaryTypes.StringView: `["héllo"]`,
		// Arrow's JSON holds binary in base64.
		arrow.BinaryTypes.Binary: `["aMOpbGxv"]`,
	} {
		got, errs := arrowCells(t, s, fromJSON(t, dt, js))
		if errs[0] != nil || string(got[0]) != "héllo" {
			t.Errorf("string from %s: %q, %v", dt, got[0], errs[0])
		}
	}
	_, errs := arrowCells(t, s, fromJSON(t, arrow.BinaryTypes.Binary, `["/w=="]`))
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "not valid UTF-8") {
		t.Errorf("ff as a string: %v", errs[0])
	}
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	got, errs := arrowCells(t, enum, fromJSON(t, dict, `["B", "A", "C"]`))
	if errs[0] != nil || !bytes.Equal(got[0], want(t, enum, "B")) || errs[1] != nil {
		t.Errorf("enum from a dictionary: %q %v", got, errs)
	}
	if errs[2] == nil || !strings.Contains(errs[2].Error(), `"C" is not a symbol of enum E`) {
		t.Errorf("enum C: %v", errs[2])
	}
	fixed := avroSnap(`{"type":"fixed","name":"F","size":2}`)
	if _, err := compile(t, fixed).Arrow(&arrow.FixedSizeBinaryType{ByteWidth: 3}); err == nil {
		t.Error("fixed of 2 from fixed_size_binary(3)")
	}
	if _, errs := arrowCells(t, fixed, fromJSON(t, arrow.BinaryTypes.Binary, `["AAAA"]`)); errs[0] == nil || !strings.Contains(errs[0].Error(), "3 bytes, and fixed F holds 2") {
		t.Errorf("fixed of 2 from 3 bytes: %v", errs[0])
	}
	if got, err := compile(t, snap(serializers.KindBytes)).AppendJSON(nil, "00ff"); err != nil || !bytes.Equal(got, []byte{0, 0xff}) {
		t.Errorf("bytes from hex: % x, %v", got, err)
	}
}

// Records match fields by name; unions take one branch; maps refuse a key
// given twice; each error names its place.
func TestComposites(t *testing.T) {
	rec := avroSnap(`{"type":"record","name":"R","fields":[{"name":"a","type":"int"},
		{"name":"u","type":["null","string","long"]},{"name":"m","type":{"type":"map","values":"long"}},
		{"name":"l","type":{"type":"array","items":"int"}}]}`)
	dt := arrow.StructOf(
		arrow.Field{Name: "l", Type: arrow.LargeListOf(arrow.PrimitiveTypes.Int64)},
		arrow.Field{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32)},
		arrow.Field{Name: "u", Type: arrow.StructOf(arrow.Field{Name: "string", Type: arrow.BinaryTypes.String, Nullable: true}, arrow.Field{Name: "long", Type: arrow.PrimitiveTypes.Int64, Nullable: true})},
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int16},
	)
	got, errs := arrowCells(t, rec, fromJSON(t, dt, `[
		{"a": 1, "u": {"string": "s", "long": null}, "m": [{"key": "y", "value": 2}, {"key": "x", "value": 1}], "l": [1, 2]},
		{"a": 2, "u": null, "m": [], "l": []},
		{"a": 3, "u": {"string": "s", "long": 4}, "m": [], "l": []},
		{"a": 4, "u": null, "m": [{"key": "x", "value": 1}, {"key": "x", "value": 2}], "l": []},
		{"a": 5, "u": null, "m": [], "l": [1, 3000000000]}]`))
	w := want(t, rec, map[string]any{"a": int32(1), "u": "s", "m": map[string]any{"x": int64(1), "y": int64(2)}, "l": []any{int32(1), int32(2)}})
	if errs[0] != nil || !bytes.Equal(got[0], w) {
		t.Errorf("row 0: % x, %v; want % x", got[0], errs[0], w)
	}
	if errs[1] != nil || !bytes.Equal(got[1], want(t, rec, map[string]any{"a": int32(2), "u": nil, "m": map[string]any{}, "l": []any{}})) {
		t.Errorf("row 1: % x, %v", got[1], errs[1])
	}
	for i, w := range map[int]string{2: "u: branches string and long are both set", 3: `m: map key "x" appears twice`, 4: "l[1]: 3000000000 is out of the range of int"} {
		if errs[i] == nil || errs[i].Error() != w {
			t.Errorf("row %d: %v, want %q", i, errs[i], w)
		}
	}
	var e *Error
	if !errors.As(errs[4], &e) || e.Path != ".l[1]" {
		t.Errorf("path of row 4: %+v", e)
	}
	for _, c := range []struct {
		dt  arrow.DataType
		msg string
	}{
		{arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32}), "the struct has no field u"},
		{arrow.StructOf(dt.Fields()[0], dt.Fields()[1], dt.Fields()[2], dt.Fields()[3], arrow.Field{Name: "z", Type: arrow.PrimitiveTypes.Int32}), "a field z that record R does not"},
		{arrow.StructOf(dt.Fields()[0], dt.Fields()[1], arrow.Field{Name: "u", Type: arrow.StructOf(arrow.Field{Name: "bool", Type: arrow.FixedWidthTypes.Boolean})}, dt.Fields()[3]), "u: the struct has a field bool that is no branch"},
	} {
		if _, err := compile(t, rec).Arrow(c.dt); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %q", c.dt, err, c.msg)
		}
	}
	// JSON: an Avro map as an object or a list of entries; a union as its
	// branch by name.
	col := compile(t, rec)
	for js, ok := range map[string]bool{
		`{"a": 1, "u": {"string": "s"}, "m": {"y": 2, "x": 1}, "l": [1, 2]}`:                                     true,
		`{"a": 1, "u": {"string": "s"}, "m": [{"key": "y", "value": 2}, {"key": "x", "value": 1}], "l": [1, 2]}`: true,
		`{"a": 1, "u": {"bool": true}, "m": {}, "l": []}`:                                                        false,
		`{"a": 1, "u": {"string": "s", "long": 1}, "m": {}, "l": []}`:                                            false,
	} {
		got, err := col.AppendJSON(nil, jsonValue(t, js))
		if ok && (err != nil || !bytes.Equal(got, w)) || !ok && err == nil {
			t.Errorf("%s: % x, %v", js, got, err)
		}
	}
}

// The serializers' own composites: lists and maps framed, nullable, nested
// TTL values and windows.
func TestKindComposites(t *testing.T) {
	list, m := snap(serializers.KindList, snap(serializers.KindInt64)), snap(serializers.KindMap, snap(serializers.KindString), snap(serializers.KindInt32))
	got, errs := arrowCells(t, list, fromJSON(t, arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int32), `[[3, 1]]`))
	if errs[0] != nil || !bytes.Equal(got[0], want(t, list, []any{int64(3), int64(1)})) {
		t.Errorf("list from a fixed-size list: % x, %v", got[0], errs[0])
	}
	got, errs = arrowCells(t, m, fromJSON(t, arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), `[[{"key": "y", "value": 2}, {"key": "x", "value": 1}], [{"key": "x", "value": 1}, {"key": "x", "value": 1}]]`))
	if errs[0] != nil || !bytes.Equal(got[0], want(t, m, []serializers.MapEntry{{Key: "x", Value: int32(1)}, {Key: "y", Value: int32(2)}})) {
		t.Errorf("map: % x, %v", got[0], errs[0])
	}
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "appears twice") {
		t.Errorf("map with a key twice: %v", errs[1])
	}
	stamped := snap(serializers.KindTTL, snap(serializers.KindString))
	js := `{"last_modified": "2023-11-14T22:13:20Z", "value": "v"}`
	if got, err := compile(t, stamped).AppendJSON(nil, jsonValue(t, js)); err != nil || !bytes.Equal(got, want(t, stamped, serializers.TTLValue[any]{LastModified: 1_700_000_000_000, Value: "v"})) {
		t.Errorf("ttl from %s: % x, %v", js, got, err)
	}
	nullable := snap(serializers.KindNullable, snap(serializers.KindInt32))
	got, errs = arrowCells(t, nullable, fromJSON(t, arrow.PrimitiveTypes.Int32, `[null, 7]`))
	if errs[0] != nil || !bytes.Equal(got[0], []byte{0}) || !bytes.Equal(got[1], want(t, nullable, int32(7))) {
		t.Errorf("nullable: % x %v", got, errs)
	}
	if _, err := Compile(snap(serializers.KindTimer, snap(serializers.KindString), snap(serializers.KindVoid))); err == nil {
		t.Error("a timer serializer compiled")
	}
	if _, err := Compile(avroSnap(`{"type":"record","name":"N","fields":[{"name":"next","type":["null","N"]}]}`)); err == nil || !strings.Contains(err.Error(), "contains itself") {
		t.Errorf("a recursive record: %v", err)
	}
}

// A batch of another type than the file's, which a damaged file could
// give, is an error, not a panic.
func TestBatchOfAnotherType(t *testing.T) {
	for _, s := range []serializers.Snapshot{
		snap(serializers.KindInt64), snap(serializers.KindString), snap(serializers.KindFloat64), snap(serializers.KindBool),
		snap(serializers.KindList, snap(serializers.KindInt64)), avroSnap(`{"type":"bytes","logicalType":"decimal","precision":4,"scale":0}`),
	} {
		var dt arrow.DataType
		switch s.Kind {
		case serializers.KindString:
			dt = arrow.BinaryTypes.String
		case serializers.KindFloat64:
			dt = arrow.PrimitiveTypes.Float64
		case serializers.KindBool:
			dt = arrow.FixedWidthTypes.Boolean
		case serializers.KindList:
			dt = arrow.ListOf(arrow.PrimitiveTypes.Int64)
		default:
			dt = arrow.PrimitiveTypes.Int64
		}
		b, err := compile(t, s).Arrow(dt)
		if err != nil {
			t.Fatal(err)
		}
		b.Bind(fromJSON(t, arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int8}), `[{"x": 1}]`))
		if _, err := b.Append(nil, 0); err == nil {
			t.Errorf("%s: a struct batch encoded", s.Kind)
		}
	}
}

func Example() {
	col, _ := Compile(serializers.Snapshot{Kind: serializers.KindAvro, Schema: `{"type":"record","name":"P","fields":[{"name":"n","type":"string"},{"name":"t","type":{"type":"long","logicalType":"timestamp-millis"}}]}`})
	b, err := col.AppendJSON(nil, map[string]any{"n": "a", "t": "1970-01-01T00:00:00.001Z"})
	fmt.Printf("% x %v\n", b, err)
	// Output: 02 61 02 <nil>
}
