package encode

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// floatNode is float32 and float64, big-endian as the serializers write
// them or little-endian as Avro does.
type floatNode struct {
	single, avro bool
}

func (n floatNode) what() string {
	switch {
	case n.avro && n.single:
		return "float"
	case n.avro:
		return "double"
	case n.single:
		return "float32"
	}
	return "float64"
}

func (n floatNode) put(dst []byte, v float64) ([]byte, error) {
	if n.single {
		f := float32(v)
		if float64(f) != v && !math.IsNaN(v) {
			return dst, errorf("%v does not fit a %s exactly", v, n.what())
		}
		if n.avro {
			return binary.LittleEndian.AppendUint32(dst, math.Float32bits(f)), nil
		}
		return binary.BigEndian.AppendUint32(dst, math.Float32bits(f)), nil
	}
	if n.avro {
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v)), nil
	}
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(v)), nil
}

func (n floatNode) forArrow(dt arrow.DataType) (arrowEnc, error) {
	switch dt.ID() {
	case arrow.FLOAT32, arrow.FLOAT64:
		return &floatEnc{n: n}, nil
	}
	return nil, errorf("a column of %s cannot hold %s values", dt, n.what())
}

type floatEnc struct {
	n   floatNode
	arr arrow.Array
	f32 []float32
	f64 []float64
}

func (e *floatEnc) bind(arr arrow.Array) {
	e.arr, e.f32, e.f64 = arr, nil, nil
	switch a := arr.(type) {
	case *array.Float32:
		e.f32 = a.Float32Values()
	case *array.Float64:
		e.f64 = a.Float64Values()
	}
}

func (e *floatEnc) append(dst []byte, i int) ([]byte, error) {
	if isNull(e.arr, i) {
		return dst, errNull(e.n)
	}
	switch {
	case e.f32 != nil:
		// A float32 widened and narrowed again keeps its NaN payload.
		f := e.f32[i]
		if e.n.single {
			if e.n.avro {
				return binary.LittleEndian.AppendUint32(dst, math.Float32bits(f)), nil
			}
			return binary.BigEndian.AppendUint32(dst, math.Float32bits(f)), nil
		}
		return e.n.put(dst, float64(f))
	case e.f64 != nil:
		return e.n.put(dst, e.f64[i])
	}
	return dst, errType(e.arr, e.n)
}

func (n floatNode) appendJSON(dst []byte, v any) ([]byte, error) {
	bits := 64
	if n.single {
		bits = 32
	}
	switch x := v.(type) {
	case json.Number:
		// The nearest value: JSON writes a float32 in the fewest digits
		// that read back as it.
		f, err := strconv.ParseFloat(string(x), bits)
		if err != nil {
			return dst, errorf("%s does not fit a %s", x, n.what())
		}
		return n.put(dst, f)
	case string:
		// NaN and the infinities, as the JSON conventions write them.
		switch x {
		case "NaN":
			return n.put(dst, math.NaN())
		case "+Inf", "Inf":
			return n.put(dst, math.Inf(1))
		case "-Inf":
			return n.put(dst, math.Inf(-1))
		}
	case nil:
		return dst, errNull(n)
	}
	return dst, errorf("want a number, got %s", jsonKind(v))
}

// boolNode is bool, and Avro's boolean: one byte either way.
type boolNode struct{}

func (boolNode) what() string { return "bool" }

func putBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, 1)
	}
	return append(dst, 0)
}

func (n boolNode) forArrow(dt arrow.DataType) (arrowEnc, error) {
	if dt.ID() != arrow.BOOL {
		return nil, errorf("a column of %s cannot hold bool values", dt)
	}
	return &boolEnc{}, nil
}

type boolEnc struct{ a *array.Boolean }

func (e *boolEnc) bind(arr arrow.Array) { e.a, _ = arr.(*array.Boolean) }

func (e *boolEnc) append(dst []byte, i int) ([]byte, error) {
	switch {
	case e.a == nil:
		return dst, errorf("a batch of another type than bool")
	case e.a.IsNull(i):
		return dst, errNull(boolNode{})
	}
	return putBool(dst, e.a.Value(i)), nil
}

func (n boolNode) appendJSON(dst []byte, v any) ([]byte, error) {
	b, ok := v.(bool)
	if !ok {
		return dst, errorf("want true or false, got %s", jsonKind(v))
	}
	return putBool(dst, b), nil
}

// textual reports whether an Arrow type holds strings or byte strings, as
// itself or as a dictionary's values.
func textual(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW, arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW, arrow.FIXED_SIZE_BINARY:
		return true
	case arrow.DICTIONARY:
		return textual(dt.(*arrow.DictionaryType).ValueType)
	}
	return false
}

// strValues reads the values of a textual array without copying them; nil
// for an array of another type.
func strValues(arr arrow.Array) func(i int) string {
	switch a := arr.(type) {
	case *array.String:
		return a.Value
	case *array.LargeString:
		return a.Value
	case *array.StringView:
		return a.Value
	case *array.Binary:
		return a.ValueString
	case *array.LargeBinary:
		return a.ValueString
	case *array.BinaryView:
		return a.ValueString
	case *array.FixedSizeBinary:
		return func(i int) string { return string(a.Value(i)) }
	case *array.Dictionary:
		dict := strValues(a.Dictionary())
		if dict == nil {
			return nil
		}
		return func(i int) string { return dict(a.GetValueIndex(i)) }
	}
	return nil
}

// textEnc reads a textual column for a node that takes strings.
type textEnc struct {
	n   node
	arr arrow.Array
	get func(i int) string
	put func(dst []byte, s string) ([]byte, error)
}

func (e *textEnc) bind(arr arrow.Array) { e.arr, e.get = arr, strValues(arr) }

func (e *textEnc) append(dst []byte, i int) ([]byte, error) {
	if isNull(e.arr, i) {
		return dst, errNull(e.n)
	}
	if e.get == nil {
		return dst, errType(e.arr, e.n)
	}
	return e.put(dst, e.get(i))
}

func textColumn(dt arrow.DataType, n node, put func(dst []byte, s string) ([]byte, error)) (arrowEnc, error) {
	if !textual(dt) {
		return nil, errorf("a column of %s cannot hold %s values", dt, n.what())
	}
	return &textEnc{n: n, put: put}, nil
}

// stringNode is string, its UTF-8 bytes, and Avro's string, which a length
// precedes.
type stringNode struct{ avro bool }

func (n stringNode) what() string { return "string" }

func (n stringNode) put(dst []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return dst, errorf("%q is not valid UTF-8", truncate(s))
	}
	if n.avro {
		dst = putVarint(dst, int64(len(s)))
	}
	return append(dst, s...), nil
}

func (n stringNode) forArrow(dt arrow.DataType) (arrowEnc, error) { return textColumn(dt, n, n.put) }

func (n stringNode) appendJSON(dst []byte, v any) ([]byte, error) {
	s, ok := v.(string)
	if !ok {
		return dst, errorf("want a string, got %s", jsonKind(v))
	}
	return n.put(dst, s)
}

// bytesNode is bytes and Avro's bytes, which a length precedes. JSON holds
// them in hex.
type bytesNode struct{ avro bool }

func (n bytesNode) what() string { return "bytes" }

func (n bytesNode) put(dst []byte, s string) ([]byte, error) {
	if n.avro {
		dst = putVarint(dst, int64(len(s)))
	}
	return append(dst, s...), nil
}

func (n bytesNode) forArrow(dt arrow.DataType) (arrowEnc, error) { return textColumn(dt, n, n.put) }

func (n bytesNode) appendJSON(dst []byte, v any) ([]byte, error) {
	b, err := hexBytes(v)
	if err != nil {
		return dst, err
	}
	return n.put(dst, string(b))
}

func hexBytes(v any) ([]byte, error) {
	s, ok := v.(string)
	if !ok {
		return nil, errorf("want bytes in hex, got %s", jsonKind(v))
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, errorf("%q is not bytes in hex", truncate(s))
	}
	return b, nil
}

// fixedNode is an Avro fixed: exactly size bytes.
type fixedNode struct {
	name string
	size int
}

func (n fixedNode) what() string { return "fixed " + n.name }

func (n fixedNode) put(dst []byte, s string) ([]byte, error) {
	if len(s) != n.size {
		return dst, errorf("%d bytes, and %s holds %d", len(s), n.what(), n.size)
	}
	return append(dst, s...), nil
}

func (n fixedNode) forArrow(dt arrow.DataType) (arrowEnc, error) {
	if f, ok := dt.(*arrow.FixedSizeBinaryType); ok && f.ByteWidth != n.size {
		return nil, errorf("a column of %s cannot hold %s, of %d bytes", dt, n.what(), n.size)
	}
	return textColumn(dt, n, n.put)
}

func (n fixedNode) appendJSON(dst []byte, v any) ([]byte, error) {
	b, err := hexBytes(v)
	if err != nil {
		return dst, err
	}
	return n.put(dst, string(b))
}

// enumNode is an Avro enum, by its symbols.
type enumNode struct {
	name    string
	symbols map[string]int
}

func (n enumNode) what() string { return "enum " + n.name }

func (n enumNode) put(dst []byte, s string) ([]byte, error) {
	i, ok := n.symbols[s]
	if !ok {
		return dst, errorf("%q is not a symbol of %s", truncate(s), n.what())
	}
	return putVarint(dst, int64(i)), nil
}

func (n enumNode) forArrow(dt arrow.DataType) (arrowEnc, error) { return textColumn(dt, n, n.put) }

func (n enumNode) appendJSON(dst []byte, v any) ([]byte, error) {
	s, ok := v.(string)
	if !ok {
		return dst, errorf("want a symbol of %s, got %s", n.what(), jsonKind(v))
	}
	return n.put(dst, s)
}

// nullNode is void and Avro's null: nothing, and only null.
type nullNode struct{ name string }

func (n nullNode) what() string { return n.name }

func (n nullNode) forArrow(arrow.DataType) (arrowEnc, error) { return &nullEnc{n: n}, nil }

type nullEnc struct {
	n   nullNode
	arr arrow.Array
}

func (e *nullEnc) bind(arr arrow.Array) { e.arr = arr }

func (e *nullEnc) append(dst []byte, i int) ([]byte, error) {
	if !isNull(e.arr, i) {
		return dst, errorf("a value, and %s holds only null", e.n.name)
	}
	return dst, nil
}

func (n nullNode) appendJSON(dst []byte, v any) ([]byte, error) {
	if v != nil {
		return dst, errorf("want null for %s, got %s", n.name, jsonKind(v))
	}
	return dst, nil
}

// truncate shortens a value quoted in a message.
func truncate(s string) string {
	const limit = 64
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "..."
}
