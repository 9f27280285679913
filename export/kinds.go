package export

import (
	"encoding/binary"
	"math"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/stateproc/stateproc/serializers"
)

// Timestamps are instants in epoch milliseconds wherever the savepoint
// stores them (TTL, timers, windows, the timestamp serializer), so they map
// to timestamps adjusted to UTC.
var timestampMillis = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}

// maxNesting bounds how deep serializer snapshots nest; the savepoint
// format allows 32 levels, so this is never reached by a valid savepoint.
const maxNesting = 64

// columnFor maps a serializer snapshot to a column. path names the column
// in errors. The byte forms decoded here are those of serializers/doc.go.
func columnFor(s serializers.Snapshot, path string) (column, error) {
	c, err := kindColumn(s, path, 0)
	c.flat = flatDecOf(s)
	if fs, ok := s.External.(flinkSerializer); ok && err == nil {
		c.flat, c.flatElem, c.nullFlag = flinkFlatOf(fs)
	}
	return c, err
}

func kindColumn(s serializers.Snapshot, path string, depth int) (column, error) {
	if depth > maxNesting {
		return column{}, unmappable(path, "serializers nest deeper than %d", maxNesting)
	}
	switch s.Kind {
	case serializers.KindBool:
		return column{typ: arrow.FixedWidthTypes.Boolean, bind: func(b array.Builder) decoder { return boolDec{b.(*array.BooleanBuilder)} }}, nil
	case serializers.KindInt32:
		return column{typ: arrow.PrimitiveTypes.Int32, bind: func(b array.Builder) decoder { return int32Dec{b.(*array.Int32Builder)} }}, nil
	case serializers.KindInt64:
		return column{typ: arrow.PrimitiveTypes.Int64, bind: func(b array.Builder) decoder { return int64Dec{b.(*array.Int64Builder)} }}, nil
	case serializers.KindFloat32:
		return column{typ: arrow.PrimitiveTypes.Float32, bind: func(b array.Builder) decoder { return float32Dec{b.(*array.Float32Builder)} }}, nil
	case serializers.KindFloat64:
		return column{typ: arrow.PrimitiveTypes.Float64, bind: func(b array.Builder) decoder { return float64Dec{b.(*array.Float64Builder)} }}, nil
	case serializers.KindString:
		return column{typ: arrow.BinaryTypes.String, bind: func(b array.Builder) decoder { return stringDec{b.(*array.StringBuilder).BinaryBuilder} }}, nil
	case serializers.KindBytes:
		return column{typ: arrow.BinaryTypes.Binary, bind: func(b array.Builder) decoder { return bytesDec{b.(*array.BinaryBuilder)} }}, nil
	case serializers.KindTimestamp:
		return column{typ: timestampMillis, bind: func(b array.Builder) decoder { return timestampDec{b.(*array.TimestampBuilder)} }}, nil
	case serializers.KindVoid:
		return column{typ: arrow.Null, nullable: true, bind: func(b array.Builder) decoder { return voidDec{b.(*array.NullBuilder)} }}, nil
	case serializers.KindWindow:
		return column{
			typ:  arrow.StructOf(arrow.Field{Name: "start", Type: timestampMillis}, arrow.Field{Name: "end", Type: timestampMillis}),
			bind: func(b array.Builder) decoder { return newWindowStruct(b.(*array.StructBuilder)) },
		}, nil
	case serializers.KindAvro:
		return avroColumn(s.Schema, path)
	case serializers.KindExternal:
		return externalColumn(s, path)
	case serializers.KindNullable:
		if len(s.Args) != 1 {
			break
		}
		elem, err := kindColumn(s.Args[0], path, depth+1)
		if err != nil {
			return column{}, err
		}
		// A null inside a nullable is still null: Arrow has one null.
		return column{typ: elem.typ, nullable: true, bind: func(b array.Builder) decoder { return nullableDec{b, elem.bind(b)} }}, nil
	case serializers.KindList:
		if len(s.Args) != 1 {
			break
		}
		elem, err := kindColumn(s.Args[0], path+"[]", depth+1)
		if err != nil {
			return column{}, err
		}
		return column{
			typ: arrow.ListOfField(arrow.Field{Name: "element", Type: elem.typ, Nullable: elem.nullable}),
			bind: func(b array.Builder) decoder {
				lb := b.(*array.ListBuilder)
				return listDec{lb, elem.bind(lb.ValueBuilder())}
			},
		}, nil
	case serializers.KindMap:
		if len(s.Args) != 2 {
			break
		}
		key, err := kindColumn(s.Args[0], path+".key", depth+1)
		if err != nil {
			return column{}, err
		}
		if key.nullable {
			return column{}, unmappable(path, "map key %s can be null, and Arrow map keys cannot", s.Args[0])
		}
		val, err := kindColumn(s.Args[1], path+"{}", depth+1)
		if err != nil {
			return column{}, err
		}
		return column{
			typ: arrow.MapOfFields(arrow.Field{Name: "key", Type: key.typ}, arrow.Field{Name: "value", Type: val.typ, Nullable: val.nullable}),
			bind: func(b array.Builder) decoder {
				mb := b.(*array.MapBuilder)
				return mapDec{mb, key.bind(mb.KeyBuilder()), val.bind(mb.ItemBuilder())}
			},
		}, nil
	case serializers.KindTTL:
		// Keyed states strip the TTL wrapper into ttl_last_modified; one
		// nested deeper keeps its timestamp beside its value.
		if len(s.Args) != 1 {
			break
		}
		elem, err := kindColumn(s.Args[0], path+".value", depth+1)
		if err != nil {
			return column{}, err
		}
		return column{
			typ: arrow.StructOf(arrow.Field{Name: "last_modified", Type: timestampMillis}, arrow.Field{Name: "value", Type: elem.typ, Nullable: elem.nullable}),
			bind: func(b array.Builder) decoder {
				sb := b.(*array.StructBuilder)
				return ttlStructDec{sb, sb.FieldBuilder(0).(*array.TimestampBuilder), elem.bind(sb.FieldBuilder(1))}
			},
		}, nil
	case serializers.KindTimer:
		return column{}, unmappable(path, "a timer serializer outside a timer service")
	}
	return column{}, unmappable(path, "serializer %s", s)
}

type boolDec struct{ b *array.BooleanBuilder }

func (d boolDec) decode(src []byte) error {
	if len(src) != 1 || src[0] > 1 {
		return malformed("bool: want one byte 00 or 01, got % x", src)
	}
	d.b.Append(src[0] == 1)
	return nil
}

type int32Dec struct{ b *array.Int32Builder }

func (d int32Dec) decode(src []byte) error {
	if len(src) != 4 {
		return wantBytes("int32", 4, len(src))
	}
	d.b.Append(int32(binary.BigEndian.Uint32(src)))
	return nil
}

type int64Dec struct{ b *array.Int64Builder }

func (d int64Dec) decode(src []byte) error {
	if len(src) != 8 {
		return wantBytes("int64", 8, len(src))
	}
	d.b.Append(int64(binary.BigEndian.Uint64(src)))
	return nil
}

type float32Dec struct{ b *array.Float32Builder }

func (d float32Dec) decode(src []byte) error {
	if len(src) != 4 {
		return wantBytes("float32", 4, len(src))
	}
	d.b.Append(math.Float32frombits(binary.BigEndian.Uint32(src)))
	return nil
}

type float64Dec struct{ b *array.Float64Builder }

func (d float64Dec) decode(src []byte) error {
	if len(src) != 8 {
		return wantBytes("float64", 8, len(src))
	}
	d.b.Append(math.Float64frombits(binary.BigEndian.Uint64(src)))
	return nil
}

// stringDec appends through the binary builder underneath, which takes
// the bytes without a conversion to string.
type stringDec struct{ b *array.BinaryBuilder }

func (d stringDec) decode(src []byte) error {
	if !utf8.Valid(src) {
		return malformed("string: not valid UTF-8")
	}
	d.b.Append(src)
	return nil
}

type bytesDec struct{ b *array.BinaryBuilder }

func (d bytesDec) decode(src []byte) error {
	d.b.Append(src)
	return nil
}

type timestampDec struct{ b *array.TimestampBuilder }

func (d timestampDec) decode(src []byte) error {
	if len(src) != 8 {
		return wantBytes("timestamp", 8, len(src))
	}
	d.b.Append(arrow.Timestamp(binary.BigEndian.Uint64(src)))
	return nil
}

type voidDec struct{ b *array.NullBuilder }

func (d voidDec) decode(src []byte) error {
	if len(src) != 0 {
		return wantBytes("void", 0, len(src))
	}
	d.b.AppendNull()
	return nil
}

// windowDec writes a time window into two timestamp builders: the
// window_start and window_end columns of a windowed state, or the fields of
// a window struct.
type windowDec struct{ start, end *array.TimestampBuilder }

func (d windowDec) decode(src []byte) error {
	if len(src) != 16 {
		return wantBytes("window", 16, len(src))
	}
	d.start.Append(arrow.Timestamp(binary.BigEndian.Uint64(src)))
	d.end.Append(arrow.Timestamp(binary.BigEndian.Uint64(src[8:])))
	return nil
}

type windowStruct struct {
	b *array.StructBuilder
	windowDec
}

func newWindowStruct(b *array.StructBuilder) windowStruct {
	return windowStruct{b, windowDec{b.FieldBuilder(0).(*array.TimestampBuilder), b.FieldBuilder(1).(*array.TimestampBuilder)}}
}

func (d windowStruct) decode(src []byte) error {
	d.b.Append(true)
	return d.windowDec.decode(src)
}

type nullableDec struct {
	b    array.Builder
	elem decoder
}

func (d nullableDec) decode(src []byte) error {
	switch {
	case len(src) == 1 && src[0] == 0:
		d.b.AppendNull()
		return nil
	case len(src) >= 1 && src[0] == 1:
		return d.elem.decode(src[1:])
	}
	return malformed("nullable: want 00, or 01 and a value")
}

type listDec struct {
	b    *array.ListBuilder
	elem decoder
}

func (d listDec) decode(src []byte) error {
	f := frames{src: src, what: "list"}
	n := f.count()
	d.b.Append(true)
	for range n {
		if f.err != nil {
			break
		}
		if err := d.elem.decode(f.frame()); err != nil {
			return err
		}
	}
	return f.end()
}

type mapDec struct {
	b          *array.MapBuilder
	key, value decoder
}

func (d mapDec) decode(src []byte) error {
	f := frames{src: src, what: "map"}
	n := f.count()
	d.b.Append(true)
	for range n {
		k := f.frame()
		v := f.frame()
		if f.err != nil {
			break
		}
		if err := d.key.decode(k); err != nil {
			return err
		}
		if err := d.value.decode(v); err != nil {
			return err
		}
	}
	return f.end()
}

type ttlStructDec struct {
	b     *array.StructBuilder
	ts    *array.TimestampBuilder
	value decoder
}

func (d ttlStructDec) decode(src []byte) error {
	if len(src) < 8 {
		return malformed("ttl: want at least 8 bytes, got %d", len(src))
	}
	d.b.Append(true)
	d.ts.Append(arrow.Timestamp(binary.BigEndian.Uint64(src)))
	return d.value.decode(src[8:])
}

func wantBytes(kind string, want, got int) error {
	return malformed("%s: want %d bytes, got %d", kind, want, got)
}

// frames reads the uvarint counts and length-prefixed parts of the list
// and map encodings, checking each against the bytes that remain. Its
// first error sticks, and later reads return nothing.
type frames struct {
	src  []byte
	what string
	err  error
}

func (f *frames) uvarint(field string) uint64 {
	if f.err != nil {
		return 0
	}
	v, n := binary.Uvarint(f.src)
	if n <= 0 || n > 1 && f.src[n-1] == 0 {
		f.fail(malformed("%s: bad %s", f.what, field))
		return 0
	}
	f.src = f.src[n:]
	return v
}

// count reads a number of items, each of which takes at least a byte.
func (f *frames) count() int {
	n := f.uvarint("count")
	if n > uint64(len(f.src)) {
		f.fail(malformed("%s: count %d does not fit in the %d bytes that remain", f.what, n, len(f.src)))
		return 0
	}
	return int(n)
}

func (f *frames) frame() []byte {
	n := f.uvarint("length")
	if n > uint64(len(f.src)) {
		f.fail(malformed("%s: length %d exceeds the %d bytes that remain", f.what, n, len(f.src)))
		return nil
	}
	b := f.src[:n:n]
	f.src = f.src[n:]
	return b
}

func (f *frames) fail(err error) {
	if f.err == nil {
		f.err = err
		f.src = nil
	}
}

func (f *frames) end() error {
	if f.err == nil && len(f.src) != 0 {
		return malformed("%s: %d trailing bytes", f.what, len(f.src))
	}
	return f.err
}
