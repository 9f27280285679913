package export

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/stateproc/stateproc/flinkfmt/typeser"
	"github.com/stateproc/stateproc/serializers"
)

// flinkShaper is a Flink serializer whose values a typeser.Shape
// describes; nullFlag says that each value starts with the null flag of a
// map state's value.
type flinkShaper interface {
	FlinkShape() (sh *typeser.Shape, nullFlag bool)
}

// A directFn decodes one value from c into its builders; last says that the
// value ends the bytes. Read errors stay in c.
type directFn func(c *typeser.Cursor, last bool) error

// directDec decodes the plain parts of Flink values (primitives, strings,
// nullables, TTL values, tuples) straight into the builders, without a Go
// value for each; the other parts are read whole into typeser's values,
// as flinkDec reads every value.
type directDec struct {
	cur      typeser.Cursor
	nullFlag bool
	b        array.Builder
	fn       directFn
}

// directDecoder returns the direct decoder of fs's values into b, a
// builder of vc, or nil where the shape describes nothing.
func directDecoder(fs flinkSerializer, vc valueColumn, path string, b array.Builder) decoder {
	sp, ok := fs.(flinkShaper)
	if !ok {
		return nil
	}
	sh, nullFlag := sp.FlinkShape()
	t := fs.FlinkType()
	if sh == nil || sh.Kind == typeser.ShapeOther {
		return nil
	}
	if nullFlag {
		if t.Kind != typeser.KindNullable || !vc.nullable {
			return nil
		}
		t = t.Elem
	}
	fn, err := direct(sh, t, path, 0, b, nilAppends)
	if err != nil {
		return nil
	}
	return &directDec{nullFlag: nullFlag, b: b, fn: fn}
}

func (d *directDec) decode(src []byte) error {
	if d.nullFlag {
		var null bool
		var err error
		if src, null, err = cutNullFlag(src); err != nil || null {
			if null {
				d.b.AppendNull()
			}
			return err
		}
	}
	d.cur.Reset(src)
	if err := d.fn(&d.cur, true); err != nil {
		return err
	}
	return readWhole(&d.cur)
}

// cutNullFlag reads the null flag in front of a map value that Flink's
// map serializer writes: it returns the value after it, or reports a null,
// which must be the flag alone.
func cutNullFlag(src []byte) (value []byte, null bool, err error) {
	switch {
	case len(src) == 0:
		return nil, false, fmt.Errorf("%w: a map value without its null flag", serializers.ErrDecode)
	case src[0] == 0:
		return src[1:], false, nil
	case len(src) != 1:
		return nil, false, fmt.Errorf("%w: a null map value followed by %d bytes", serializers.ErrDecode, len(src)-1)
	}
	return nil, true, nil
}

// readWhole checks that cur read a value without an error, and all of it.
func readWhole(cur *typeser.Cursor) error {
	if err := cur.Err(); err != nil {
		return fmt.Errorf("%w: %w", serializers.ErrDecode, err)
	}
	if n := cur.Len(); n != 0 {
		return fmt.Errorf("%w: %d bytes follow the value", serializers.ErrDecode, n)
	}
	return nil
}

// nilMode is what a part read whole does with a null, as the appender of
// the part around it would: give it to the part's appender (the top level),
// append a null where the part's column is not nullable (a record's
// field), or always append a null (a TTL value's or a nullable's element).
type nilMode int

const (
	nilAppends nilMode = iota
	nilIfNotNullable
	nilIsNull
)

// direct compiles the decoder of shape sh, of type t, into b, a builder of
// flinkColumn(t).
func direct(sh *typeser.Shape, t *typeser.Type, path string, depth int, b array.Builder, nils nilMode) (directFn, error) {
	switch {
	case sh.Kind == typeser.ShapeBool && t.Kind == typeser.KindBool:
		bb := b.(*array.BooleanBuilder)
		return func(c *typeser.Cursor, _ bool) error { bb.Append(c.Bool()); return nil }, nil
	case sh.Kind == typeser.ShapeInt8 && t.Kind == typeser.KindInt8:
		ib := b.(*array.Int8Builder)
		return func(c *typeser.Cursor, _ bool) error { ib.Append(c.Int8()); return nil }, nil
	case sh.Kind == typeser.ShapeInt16 && t.Kind == typeser.KindInt16:
		ib := b.(*array.Int16Builder)
		return func(c *typeser.Cursor, _ bool) error { ib.Append(c.Int16()); return nil }, nil
	case sh.Kind == typeser.ShapeInt32 && t.Kind == typeser.KindInt32:
		ib := b.(*array.Int32Builder)
		return func(c *typeser.Cursor, _ bool) error { ib.Append(c.Int32()); return nil }, nil
	case sh.Kind == typeser.ShapeInt64 && t.Kind == typeser.KindInt64:
		ib := b.(*array.Int64Builder)
		return func(c *typeser.Cursor, _ bool) error { ib.Append(c.Int64()); return nil }, nil
	case sh.Kind == typeser.ShapeFloat32 && t.Kind == typeser.KindFloat32:
		fb := b.(*array.Float32Builder)
		return func(c *typeser.Cursor, _ bool) error { fb.Append(c.Float32()); return nil }, nil
	case sh.Kind == typeser.ShapeFloat64 && t.Kind == typeser.KindFloat64:
		fb := b.(*array.Float64Builder)
		return func(c *typeser.Cursor, _ bool) error { fb.Append(c.Float64()); return nil }, nil
	case sh.Kind == typeser.ShapeString && t.Kind == typeser.KindString:
		sb := b.(*array.StringBuilder)
		var buf []byte
		return func(c *typeser.Cursor, _ bool) error {
			var ok bool
			if buf, ok = c.AppendString(buf[:0]); ok {
				sb.BinaryBuilder.Append(buf)
			} else {
				sb.AppendNull()
			}
			return nil
		}, nil
	case sh.Kind == typeser.ShapeConstant && (t.Kind == typeser.KindVoid || t.Kind == typeser.KindGlobalWindow):
		return func(c *typeser.Cursor, _ bool) error { c.Skip(sh.Len); b.AppendNull(); return nil }, nil
	case sh.Kind == typeser.ShapeNullable && t.Kind == typeser.KindNullable:
		elem, err := direct(sh.Elems[0], t.Elem, path, depth+1, b, nilIsNull)
		if err != nil {
			return nil, err
		}
		return func(c *typeser.Cursor, last bool) error {
			if c.Bool() {
				c.Skip(sh.Padding)
				b.AppendNull()
				return nil
			}
			return elem(c, last)
		}, nil
	case sh.Kind == typeser.ShapeTTL && t.Kind == typeser.KindTTL:
		sb := b.(*array.StructBuilder)
		ts := sb.FieldBuilder(0).(*array.TimestampBuilder)
		elem, err := direct(sh.Elems[0], t.Elem, path+".value", depth+1, sb.FieldBuilder(1), nilIsNull)
		if err != nil {
			return nil, err
		}
		return func(c *typeser.Cursor, last bool) error {
			lm := c.Int64()
			sb.Append(true)
			ts.Append(arrow.Timestamp(lm))
			return elem(c, last)
		}, nil
	case sh.Kind == typeser.ShapeRecord && t.Kind == typeser.KindRecord && !isRow(t) && len(t.Fields) > 0 && len(t.Fields) == len(sh.Elems):
		sb := b.(*array.StructBuilder)
		fields := make([]directFn, len(t.Fields))
		for i, f := range t.Fields {
			fn, err := direct(sh.Elems[i], f.Type, path+"."+f.Name, depth+1, sb.FieldBuilder(i), nilIfNotNullable)
			if err != nil {
				return nil, err
			}
			fields[i] = fn
		}
		return func(c *typeser.Cursor, last bool) error {
			sb.Append(true)
			for i, f := range fields {
				if err := f(c, last && i == len(fields)-1); err != nil {
					return err
				}
			}
			return nil
		}, nil
	}
	col, err := flinkColumn(t, path, depth)
	if err != nil {
		return nil, err
	}
	app := col.bind(b)
	return func(c *typeser.Cursor, last bool) error {
		v := sh.Read(c, last)
		if c.Err() != nil {
			return nil // decode reports it
		}
		if v == nil && (nils == nilIsNull || nils == nilIfNotNullable && !col.nullable) {
			b.AppendNull()
			return nil
		}
		return app(v)
	}, nil
}
