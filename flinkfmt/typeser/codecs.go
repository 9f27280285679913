package typeser

import (
	"fmt"
	"math"
	"math/big"
	"time"

	"github.com/stateproc/stateproc/flinkfmt/internal/javaobj"
	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
)

type primCodec struct{ kind Kind }

func (c primCodec) read(r *wire.Buf, _ bool) any {
	switch c.kind {
	case KindBool:
		return r.Bool()
	case KindInt8:
		return int8(r.U8())
	case KindInt16:
		return int16(r.U16())
	case KindInt32:
		return r.I32()
	case KindInt64:
		return r.I64()
	case KindFloat32:
		return r.F32()
	case KindFloat64:
		return r.F64()
	case KindChar:
		return wire.UTF16String([]uint16{r.U16()})
	}
	return nil
}

var primSizes = map[Kind]int{KindBool: 1, KindInt8: 1, KindInt16: 2, KindChar: 2, KindInt32: 4, KindFloat32: 4, KindInt64: 8, KindFloat64: 8}

func (c primCodec) size() (int, bool) { return primSizes[c.kind], true }

func (c primCodec) skip(r *wire.Buf, _ bool) {
	switch c.kind {
	case KindBool, KindInt8:
		r.Raw(1, "byte")
	case KindInt16, KindChar:
		r.Raw(2, "u16")
	case KindInt32, KindFloat32:
		r.Raw(4, "i32")
	case KindInt64, KindFloat64:
		r.Raw(8, "i64")
	}
}

type stringCodec struct{}

func (stringCodec) read(r *wire.Buf, _ bool) any {
	s, ok := r.StringValue()
	if !ok {
		return nil
	}
	return s
}

func (stringCodec) size() (int, bool) { return 1, false }

func (stringCodec) skip(r *wire.Buf, _ bool) { r.SkipStringValue() }

// fixedCodec reads a constant number of bytes that carry no information:
// VoidNamespace, GlobalWindow and Void each write one zero byte.
type fixedCodec struct {
	n     int
	value any
}

func (c fixedCodec) read(r *wire.Buf, _ bool) any {
	r.Raw(c.n, "constant")
	return c.value
}

func (c fixedCodec) size() (int, bool) { return c.n, true }

func (c fixedCodec) skip(r *wire.Buf, _ bool) { r.Raw(c.n, "constant") }

type windowCodec struct{}

func (windowCodec) read(r *wire.Buf, _ bool) any {
	start := r.I64()
	return TimeWindow{Start: start, End: r.I64()}
}

func (windowCodec) size() (int, bool) { return 16, true }

func (windowCodec) skip(r *wire.Buf, _ bool) { r.Raw(16, "time window") }

type bytesCodec struct{}

func (bytesCodec) read(r *wire.Buf, _ bool) any {
	b := r.Sized("byte array")
	if b == nil {
		return []byte{}
	}
	return append([]byte(nil), b...)
}

func (bytesCodec) size() (int, bool) { return 4, false }

func (bytesCodec) skip(r *wire.Buf, _ bool) { r.Sized("byte array") }

// primArrayCodec reads int32 length and the elements of a primitive array
// other than byte[]; strings for String[].
type primArrayCodec struct{ elem codec }

func (c primArrayCodec) read(r *wire.Buf, _ bool) any {
	min, _ := c.elem.size()
	n := r.Count("array length", max(min, 1))
	out := make([]any, 0, n)
	for i := 0; i < n && r.Err() == nil; i++ {
		out = append(out, c.elem.read(r, false))
	}
	return out
}

func (c primArrayCodec) size() (int, bool) { return 4, false }

type bigIntCodec struct{}

func (bigIntCodec) read(r *wire.Buf, _ bool) any {
	b := r.Sized("big integer")
	if r.Err() != nil || len(b) == 0 {
		return nil // a zero length is null
	}
	return twosComplement(b)
}

func twosComplement(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

func (bigIntCodec) size() (int, bool) { return 4, false }

type bigDecCodec struct{}

func (bigDecCodec) read(r *wire.Buf, _ bool) any {
	b := r.Sized("big decimal")
	if r.Err() != nil || len(b) == 0 {
		return nil
	}
	unscaled := twosComplement(b)
	scale := r.I32()
	return formatDecimal(unscaled, scale)
}

// formatDecimal writes unscaled × 10^-scale in plain notation.
func formatDecimal(unscaled *big.Int, scale int32) string {
	if scale <= 0 {
		if scale < -4096 {
			return fmt.Sprintf("%sE%d", unscaled, -scale)
		}
		return new(big.Int).Mul(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-scale)), nil)).String()
	}
	s := new(big.Int).Abs(unscaled).String()
	sign := ""
	if unscaled.Sign() < 0 {
		sign = "-"
	}
	if scale > 4096 {
		return fmt.Sprintf("%s%sE-%d", sign, s, scale)
	}
	for len(s) <= int(scale) {
		s = "0" + s
	}
	return sign + s[:len(s)-int(scale)] + "." + s[len(s)-int(scale):]
}

func (bigDecCodec) size() (int, bool) { return 4, false }

// dateCodec reads java.util.Date and java.sql.Date/Time: epoch
// milliseconds, Long.MIN_VALUE for null; with nanos the java.sql.Timestamp
// form that adds an int of nanoseconds.
type dateCodec struct{ nanos bool }

func (c dateCodec) read(r *wire.Buf, _ bool) any {
	ms := r.I64()
	var ns int32
	if c.nanos {
		ns = r.I32()
	}
	if ms == math.MinInt64 {
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	if c.nanos {
		t = t.Add(time.Duration(ns%1_000_000) * time.Nanosecond)
	}
	return t
}

func (c dateCodec) size() (int, bool) {
	if c.nanos {
		return 12, true
	}
	return 8, true
}

type instantCodec struct{}

func (instantCodec) read(r *wire.Buf, _ bool) any {
	sec := r.I64()
	ns := r.I32()
	if sec == math.MinInt64 {
		return nil
	}
	return time.Unix(sec, int64(ns)).UTC()
}

func (instantCodec) size() (int, bool) { return 12, true }

type enumCodec struct {
	class   string
	symbols []string
}

func (c enumCodec) read(r *wire.Buf, _ bool) any {
	i := r.I32()
	if r.Err() != nil {
		return nil
	}
	if i < 0 || int(i) >= len(c.symbols) {
		r.Failf(wire.ErrMalformed, "enum %s has no constant %d (it has %d)", c.class, i, len(c.symbols))
		return nil
	}
	return c.symbols[i]
}

func (enumCodec) size() (int, bool) { return 4, true }

func (c enumCodec) skip(r *wire.Buf, _ bool) {
	if i := r.I32(); r.Err() == nil && (i < 0 || int(i) >= len(c.symbols)) {
		r.Failf(wire.ErrMalformed, "enum %s has no constant %d (it has %d)", c.class, i, len(c.symbols))
	}
}

// scalaEnumCodec maps a Scala Enumeration value's id to its name.
type scalaEnumCodec struct {
	class string
	names map[int32]string
}

func (c scalaEnumCodec) read(r *wire.Buf, _ bool) any {
	id := r.I32()
	if r.Err() != nil {
		return nil
	}
	s, ok := c.names[id]
	if !ok {
		r.Failf(wire.ErrMalformed, "enumeration %s has no value with id %d", c.class, id)
		return nil
	}
	return s
}

func (scalaEnumCodec) size() (int, bool) { return 4, true }

// recordCodec reads fields back to back, without null flags: tuples, case
// classes, TTL values.
type recordCodec struct {
	class  string
	names  []string
	fields []codec
}

func (c recordCodec) read(r *wire.Buf, last bool) any {
	out := RecordValue{Class: c.class, Fields: make([]FieldValue, 0, len(c.fields))}
	for i, f := range c.fields {
		v := f.read(r, last && i == len(c.fields)-1)
		if r.Err() != nil {
			return nil
		}
		out.Fields = append(out.Fields, FieldValue{Name: c.names[i], Value: v})
	}
	return out
}

func (c recordCodec) size() (int, bool) {
	total, all := 0, true
	for _, f := range c.fields {
		n, fixed := f.size()
		total += n
		all = all && fixed
	}
	return total, all
}

func (c recordCodec) skip(r *wire.Buf, last bool) {
	for i, f := range c.fields {
		if skipWith(f, r, last && i == len(c.fields)-1); r.Err() != nil {
			return
		}
	}
}

type ttlCodec struct{ elem codec }

func (c ttlCodec) read(r *wire.Buf, last bool) any {
	ts := r.I64()
	v := c.elem.read(r, last)
	return TTLValue{LastAccess: ts, Value: v}
}

func (c ttlCodec) size() (int, bool) {
	n, fixed := c.elem.size()
	return 8 + n, fixed
}

func (c ttlCodec) skip(r *wire.Buf, last bool) {
	r.I64()
	skipWith(c.elem, r, last)
}

type timerCodec struct{ key, ns codec }

func (c timerCodec) read(r *wire.Buf, last bool) any {
	ts := r.I64() ^ math.MinInt64
	k := c.key.read(r, false)
	return TimerValue{Timestamp: ts, Key: k, Namespace: c.ns.read(r, last)}
}

func (c timerCodec) size() (int, bool) {
	a, fa := c.key.size()
	b, fb := c.ns.size()
	return 8 + a + b, fa && fb
}

func (c timerCodec) skip(r *wire.Buf, last bool) {
	r.I64()
	skipWith(c.key, r, false)
	skipWith(c.ns, r, last)
}

// listCodec reads int32 count and the elements: ListSerializer,
// ArrayListSerializer and Scala's TraversableSerializer.
type listCodec struct{ elem codec }

func (c listCodec) read(r *wire.Buf, _ bool) any {
	n := countFor(r, c.elem, "list size")
	out := make([]any, 0, n)
	for i := 0; i < n && r.Err() == nil; i++ {
		out = append(out, c.elem.read(r, false))
	}
	return out
}

func (c listCodec) size() (int, bool) { return 4, false }

// countFor reads an int32 count of values of elem, refusing one that the
// remaining bytes cannot hold. Values that take no bytes are capped, so
// that a hostile count cannot make an endless loop.
func countFor(r *wire.Buf, elem codec, what string) int {
	min, _ := elem.size()
	if min > 0 {
		return r.Count(what, min)
	}
	n := r.Count(what, 0)
	if n > maxEmptyElems {
		r.Failf(wire.ErrMalformed, "%s %d of values that take no bytes", what, n)
		return 0
	}
	return n
}

const maxEmptyElems = 1 << 16

type mapCodec struct{ key, value codec }

func (c mapCodec) read(r *wire.Buf, _ bool) any {
	kmin, _ := c.key.size()
	n := r.Count("map size", kmin+1)
	out := make([]MapEntry, 0, n)
	for i := 0; i < n && r.Err() == nil; i++ {
		k := c.key.read(r, false)
		var v any
		if !r.Bool() {
			v = c.value.read(r, false)
		}
		out = append(out, MapEntry{Key: k, Value: v})
	}
	return out
}

func (c mapCodec) size() (int, bool) { return 4, false }

// nullableCodec reads NullableSerializer: a null flag (true for null),
// padding after a null when the element has a fixed length, or the value.
type nullableCodec struct {
	elem    codec
	padding int
}

func (c nullableCodec) read(r *wire.Buf, last bool) any {
	if r.Bool() {
		r.Raw(c.padding, "null padding")
		return nil
	}
	return c.elem.read(r, last)
}

func (c nullableCodec) size() (int, bool) {
	n, fixed := c.elem.size()
	if c.padding > 0 && fixed && c.padding == n {
		return 1 + n, true
	}
	return 1, false
}

func (c nullableCodec) skip(r *wire.Buf, last bool) {
	if r.Bool() {
		r.Raw(c.padding, "null padding")
		return
	}
	skipWith(c.elem, r, last)
}

// optionCodec reads Scala's Option: true and the value, or false.
type optionCodec struct{ elem codec }

func (c optionCodec) read(r *wire.Buf, last bool) any {
	if !r.Bool() {
		return nil
	}
	return c.elem.read(r, last)
}

func (c optionCodec) size() (int, bool) { return 1, false }

// eitherCodec reads a flag and the left or right value. For Either the
// flag is true for left; for Try it is true for a failure, which is
// reported as the left value.
type eitherCodec struct{ left, right codec }

func (c eitherCodec) read(r *wire.Buf, last bool) any {
	if r.Bool() {
		return EitherValue{Left: true, Value: c.left.read(r, last)}
	}
	return EitherValue{Value: c.right.read(r, last)}
}

func (c eitherCodec) size() (int, bool) { return 1, false }

// opaqueCodec stands for a serializer whose bytes cannot be walked without
// the job's classes (Kryo): it takes the rest of its frame.
type opaqueCodec struct{ class, serializer string }

func (c opaqueCodec) read(r *wire.Buf, last bool) any {
	if !last {
		r.Fail("value", &UnframedError{Class: c.class, Serializer: c.serializer})
		return nil
	}
	b := r.Raw(r.Len(), "opaque value")
	return OpaqueValue{Class: c.class, Serializer: c.serializer, Bytes: append([]byte(nil), b...)}
}

func (opaqueCodec) size() (int, bool) { return 1, false }

// javaCodec reads a Java-serialized object: opaque, but its end is found
// by walking the object-stream grammar.
type javaCodec struct{ serializer string }

func (c javaCodec) read(r *wire.Buf, _ bool) any {
	v, n, err := javaobj.Parse(r.Rest(), javaobj.Limits{})
	if err != nil {
		r.Fail("Java-serialized value", err)
		return nil
	}
	b := r.Raw(n, "Java-serialized value")
	if jv, ok := jdkValue(v); ok {
		return jv
	}
	return OpaqueValue{Class: javaClassOf(v), Serializer: c.serializer, Bytes: append([]byte(nil), b...)}
}

// jdkBoxes are the JDK classes whose serialized form is one field "value"
// of the primitive they box.
var jdkBoxes = map[string]bool{
	"java.lang.Integer": true, "java.lang.Long": true, "java.lang.Short": true, "java.lang.Byte": true,
	"java.lang.Boolean": true, "java.lang.Double": true, "java.lang.Float": true,
}

// jdkValue decodes the JDK values whose serialized form is defined by the
// Java serialization specification and the JDK's fields: strings and boxed
// primitives. Other classes stay opaque.
func jdkValue(v any) (any, bool) {
	switch o := v.(type) {
	case string:
		return o, true
	case nil:
		return nil, true
	case *javaobj.Object:
		if jdkBoxes[o.Class.Name] {
			return o.Field("value")
		}
		if o.Class.Name == "java.lang.Character" {
			if c, ok := o.Field("value"); ok {
				if u, ok := c.(uint16); ok {
					return wire.UTF16String([]uint16{u}), true
				}
			}
		}
	}
	return nil, false
}

func javaClassOf(v any) string {
	switch o := v.(type) {
	case *javaobj.Object:
		return o.Class.Name
	case *javaobj.Array:
		return o.Class.Name
	case *javaobj.Enum:
		return o.Class.Name
	case string:
		return "java.lang.String"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func (javaCodec) size() (int, bool) { return 5, false }

func bigFromInt64(v int64) *big.Int { return big.NewInt(v) }
