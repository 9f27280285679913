package typeser

import (
	"fmt"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
)

// ShapeKind is the kind of a Shape.
type ShapeKind int

// Shape kinds. ShapeOther stands for every codec that is not described
// (POJOs, rows, Avro, Kryo, collections, ...): its values are read whole
// with Shape.Read.
const (
	ShapeOther ShapeKind = iota
	ShapeBool
	ShapeInt8
	ShapeInt16
	ShapeInt32
	ShapeInt64
	ShapeFloat32
	ShapeFloat64
	// ShapeString is Flink's StringValue encoding.
	ShapeString
	// ShapeConstant is Len bytes that carry no information.
	ShapeConstant
	// ShapeNullable is a null flag, then Padding bytes after a null or the
	// element, Elems[0].
	ShapeNullable
	// ShapeTTL is the 8-byte last-access time, then the value, Elems[0].
	ShapeTTL
	// ShapeRecord is its fields, Elems, back to back (tuples, case
	// classes).
	ShapeRecord
)

// Shape is how a serializer lays out its values, for a caller that decodes
// them into storage of its own (columns) without building a Go value for
// each: the plain codecs are described, and any part can be read whole.
type Shape struct {
	Kind ShapeKind
	// Elems are a record's fields, or the element of a nullable or TTL
	// value.
	Elems []*Shape
	// Len is a constant's length; Padding what follows a null of a
	// nullable.
	Len, Padding int
	c            codec
}

// Shape describes the serializer's values.
func (s *Serializer) Shape() *Shape { return shapeOf(s.c, 0) }

var primShapes = map[Kind]ShapeKind{
	KindBool: ShapeBool, KindInt8: ShapeInt8, KindInt16: ShapeInt16, KindInt32: ShapeInt32,
	KindInt64: ShapeInt64, KindFloat32: ShapeFloat32, KindFloat64: ShapeFloat64,
}

func shapeOf(c codec, depth int) *Shape {
	sh := &Shape{c: c}
	if depth > MaxDepth {
		return sh
	}
	switch x := c.(type) {
	case primCodec:
		sh.Kind = primShapes[x.kind] // a char is read whole
	case stringCodec:
		sh.Kind = ShapeString
	case fixedCodec:
		sh.Kind, sh.Len = ShapeConstant, x.n
	case nullableCodec:
		sh.Kind, sh.Padding, sh.Elems = ShapeNullable, x.padding, []*Shape{shapeOf(x.elem, depth+1)}
	case ttlCodec:
		sh.Kind, sh.Elems = ShapeTTL, []*Shape{shapeOf(x.elem, depth+1)}
	case recordCodec:
		sh.Kind = ShapeRecord
		for _, f := range x.fields {
			sh.Elems = append(sh.Elems, shapeOf(f, depth+1))
		}
	}
	return sh
}

// Read decodes one value of the shape whole, as the serializer's Read
// does; last says that the value ends the bytes, so that a value without a
// length of its own may take the rest.
func (sh *Shape) Read(c *Cursor, last bool) any { return sh.c.read(&c.r, last) }

// Cursor reads the parts of values that a Shape describes, with the checks
// of the serializers' own reads; errors are sticky.
type Cursor struct{ r wire.Buf }

// Reset makes the cursor read b.
func (c *Cursor) Reset(b []byte) { c.r.Reset(b, 0) }

// Err returns the first error, which wraps ErrValue.
func (c *Cursor) Err() error {
	if err := c.r.Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrValue, err)
	}
	return nil
}

// Len is the number of unread bytes.
func (c *Cursor) Len() int { return c.r.Len() }

// Bool reads a boolean byte.
func (c *Cursor) Bool() bool { return c.r.Bool() }

// Int8 reads a byte.
func (c *Cursor) Int8() int8 { return int8(c.r.U8()) }

// Int16 reads a big-endian int16.
func (c *Cursor) Int16() int16 { return int16(c.r.U16()) }

// Int32 reads a big-endian int32.
func (c *Cursor) Int32() int32 { return c.r.I32() }

// Int64 reads a big-endian int64.
func (c *Cursor) Int64() int64 { return c.r.I64() }

// Float32 reads an IEEE-754 float32.
func (c *Cursor) Float32() float32 { return c.r.F32() }

// Float64 reads an IEEE-754 float64.
func (c *Cursor) Float64() float64 { return c.r.F64() }

// Skip steps over n bytes.
func (c *Cursor) Skip(n int) { c.r.Raw(n, "constant") }

// AppendString appends the UTF-8 of a ShapeString value to dst; ok is
// false for null.
func (c *Cursor) AppendString(dst []byte) (out []byte, ok bool) { return c.r.AppendStringValue(dst) }
