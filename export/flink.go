package export

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/stateproc/stateproc/flinkfmt/typeser"
	"github.com/stateproc/stateproc/serializers"
)

// flinkSerializer is an external serializer of Apache Flink's layout
// (package flinkfmt/flinksource): the type of its values and their
// decoding into typeser's Go values.
type flinkSerializer interface {
	FlinkType() *typeser.Type
	DecodeAny(src []byte) (any, error)
}

// Flink values are decoded straight into the builders where their shape
// is plain (directDec), and otherwise once into Go values (typeser's),
// which the column's appenders take; Timestamps that keep nanoseconds (Instant, SQL
// timestamps) map to microseconds, which cover any year a Java date takes.
var timestampMicros = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// externalColumn maps an external serializer's type to a column.
func externalColumn(s serializers.Snapshot, path string) (column, error) {
	fs, ok := s.External.(flinkSerializer)
	if !ok {
		return column{}, unmappable(path, "external serializer %s", s)
	}
	vc, err := flinkColumn(fs.FlinkType(), path, 0)
	if err != nil {
		return column{}, err
	}
	return column{typ: vc.typ, nullable: vc.nullable, bind: func(b array.Builder) decoder {
		if d := directDecoder(fs, vc, path, b); d != nil {
			return d
		}
		return flinkDec{ser: fs, app: vc.bind(b)}
	}}, nil
}

type flinkDec struct {
	ser flinkSerializer
	app valueAppender
}

func (d flinkDec) decode(src []byte) error {
	v, err := d.ser.DecodeAny(src)
	if err != nil {
		return err
	}
	return d.app(v)
}

// valueAppender appends one decoded value to its builder.
type valueAppender func(v any) error

// valueColumn is a column of decoded values.
type valueColumn struct {
	typ      arrow.DataType
	nullable bool
	bind     func(b array.Builder) valueAppender
}

// flinkColumn maps a Flink type to Arrow:
//
//	bool, int8 … int64, float32/64  bool, int8 … int64, float32/64
//	char, string                     utf8
//	bytes                            binary
//	BigInteger, BigDecimal           utf8, the digits in their plain form
//	Date, Timestamp, Instant         timestamp[us, UTC]
//	date, time (Table API)           date32, time32[ms]
//	enum                             dictionary<int32, utf8>, the symbols in order
//	tuple, case class, POJO          struct, one field per field
//	Row, RowData                     struct with row_kind first (+I, -U, +U, -D)
//	list, array                      list
//	map                              map (keys must not be null)
//	nullable, Option                 the element, nullable
//	Either, Try                      struct<left, right>, one of them set
//	TTL value                        struct<last_access timestamp[ms, UTC], value>
//	TimeWindow                       struct<start, end timestamp[ms, UTC]>
//	VoidNamespace, GlobalWindow,     null
//	a record without fields
//	Avro                             by the writer schema, as stateproc's Avro
//	Kryo, Java serialization         struct<class utf8, bytes binary, value utf8>:
//	                                 an opaque value's class and bytes, or the JSON
//	                                 of one that decoded (String, boxed primitives)
//
// Only primitives are never null.
func flinkColumn(t *typeser.Type, path string, depth int) (valueColumn, error) {
	if depth > maxNesting {
		return valueColumn{}, unmappable(path, "types nest deeper than %d", maxNesting)
	}
	switch t.Kind {
	case typeser.KindBool:
		return prim(arrow.FixedWidthTypes.Boolean, func(b array.Builder, v any) bool {
			x, ok := v.(bool)
			b.(*array.BooleanBuilder).Append(x)
			return ok
		}), nil
	case typeser.KindInt8:
		return prim(arrow.PrimitiveTypes.Int8, func(b array.Builder, v any) bool {
			x, ok := v.(int8)
			b.(*array.Int8Builder).Append(x)
			return ok
		}), nil
	case typeser.KindInt16:
		return prim(arrow.PrimitiveTypes.Int16, func(b array.Builder, v any) bool {
			x, ok := v.(int16)
			b.(*array.Int16Builder).Append(x)
			return ok
		}), nil
	case typeser.KindInt32:
		return prim(arrow.PrimitiveTypes.Int32, func(b array.Builder, v any) bool {
			x, ok := v.(int32)
			b.(*array.Int32Builder).Append(x)
			return ok
		}), nil
	case typeser.KindInt64:
		return prim(arrow.PrimitiveTypes.Int64, func(b array.Builder, v any) bool {
			x, ok := v.(int64)
			b.(*array.Int64Builder).Append(x)
			return ok
		}), nil
	case typeser.KindFloat32:
		return prim(arrow.PrimitiveTypes.Float32, func(b array.Builder, v any) bool {
			x, ok := v.(float32)
			b.(*array.Float32Builder).Append(x)
			return ok
		}), nil
	case typeser.KindFloat64:
		return prim(arrow.PrimitiveTypes.Float64, func(b array.Builder, v any) bool {
			x, ok := v.(float64)
			b.(*array.Float64Builder).Append(x)
			return ok
		}), nil
	case typeser.KindChar:
		c := stringLike(path)
		c.nullable = false
		return c, nil
	case typeser.KindString, typeser.KindDecimal, typeser.KindBigInt:
		return stringLike(path), nil
	case typeser.KindBytes:
		return nullableOf(arrow.BinaryTypes.Binary, func(b array.Builder, v any) error {
			x, ok := v.([]byte)
			if !ok {
				return mismatch(path, "bytes", v)
			}
			b.(*array.BinaryBuilder).Append(x)
			return nil
		}), nil
	case typeser.KindTimestamp:
		return nullableOf(timestampMicros, func(b array.Builder, v any) error {
			x, ok := v.(time.Time)
			if !ok {
				return mismatch(path, "timestamp", v)
			}
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(x.UnixMicro()))
			return nil
		}), nil
	case typeser.KindDate:
		return nullableOf(arrow.FixedWidthTypes.Date32, func(b array.Builder, v any) error {
			switch x := v.(type) {
			case int32:
				b.(*array.Date32Builder).Append(arrow.Date32(x))
			case time.Time:
				b.(*array.Date32Builder).Append(arrow.Date32FromTime(x))
			default:
				return mismatch(path, "date", v)
			}
			return nil
		}), nil
	case typeser.KindTime:
		return nullableOf(arrow.FixedWidthTypes.Time32ms, func(b array.Builder, v any) error {
			switch x := v.(type) {
			case int32:
				b.(*array.Time32Builder).Append(arrow.Time32(x))
			case time.Time:
				h, m, s := x.UTC().Clock()
				b.(*array.Time32Builder).Append(arrow.Time32((h*3600+m*60+s)*1000 + x.Nanosecond()/1e6))
			default:
				return mismatch(path, "time", v)
			}
			return nil
		}), nil
	case typeser.KindEnum:
		return flinkEnum(t, path), nil
	case typeser.KindRecord:
		return flinkRecord(t, path, depth)
	case typeser.KindList, typeser.KindArray:
		return flinkList(t, path, depth)
	case typeser.KindMap:
		return flinkMap(t, path, depth)
	case typeser.KindNullable:
		elem, err := flinkColumn(t.Elem, path, depth+1)
		if err != nil {
			return valueColumn{}, err
		}
		return valueColumn{typ: elem.typ, nullable: true, bind: func(b array.Builder) valueAppender {
			app := elem.bind(b)
			return func(v any) error {
				if v == nil {
					b.AppendNull()
					return nil
				}
				return app(v)
			}
		}}, nil
	case typeser.KindEither:
		return flinkEither(t, path, depth)
	case typeser.KindTTL:
		return flinkTTL(t, path, depth)
	case typeser.KindWindow:
		typ := arrow.StructOf(arrow.Field{Name: "start", Type: timestampMillis}, arrow.Field{Name: "end", Type: timestampMillis})
		return nullableOf(typ, func(b array.Builder, v any) error {
			w, ok := v.(typeser.TimeWindow)
			if !ok {
				return mismatch(path, "window", v)
			}
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.TimestampBuilder).Append(arrow.Timestamp(w.Start))
			sb.FieldBuilder(1).(*array.TimestampBuilder).Append(arrow.Timestamp(w.End))
			return nil
		}), nil
	case typeser.KindVoid, typeser.KindGlobalWindow:
		return nullColumn(), nil
	case typeser.KindAvro:
		return flinkAvro(t, path)
	case typeser.KindOpaque:
		return flinkOpaque(path), nil
	case typeser.KindTimer:
		return valueColumn{}, unmappable(path, "a timer outside a timer service")
	}
	return valueColumn{}, unmappable(path, "Flink type %s", t)
}

// prim is a primitive column: never null; appendTo reports whether v had
// the column's Go type (it appends the zero value when not).
func prim(typ arrow.DataType, appendTo func(b array.Builder, v any) bool) valueColumn {
	return valueColumn{typ: typ, bind: func(b array.Builder) valueAppender {
		return func(v any) error {
			if !appendTo(b, v) {
				return malformed("a %s field holds %T", typ, v)
			}
			return nil
		}
	}}
}

// nullableOf is a column whose nil values are nulls.
func nullableOf(typ arrow.DataType, appendTo func(b array.Builder, v any) error) valueColumn {
	return valueColumn{typ: typ, nullable: true, bind: func(b array.Builder) valueAppender {
		return func(v any) error {
			if v == nil {
				b.AppendNull()
				return nil
			}
			return appendTo(b, v)
		}
	}}
}

func mismatch(path, what string, v any) error {
	return malformed("%s: a %s holds %T", path, what, v)
}

func nullColumn() valueColumn {
	return valueColumn{typ: arrow.Null, nullable: true, bind: func(b array.Builder) valueAppender {
		return func(any) error {
			b.AppendNull()
			return nil
		}
	}}
}

// stringLike holds strings, and the plain digits of big numbers.
func stringLike(path string) valueColumn {
	return nullableOf(arrow.BinaryTypes.String, func(b array.Builder, v any) error {
		switch x := v.(type) {
		case string:
			b.(*array.StringBuilder).Append(x)
		case *big.Int:
			b.(*array.StringBuilder).Append(x.String())
		default:
			return mismatch(path, "string", v)
		}
		return nil
	})
}

func flinkEnum(t *typeser.Type, path string) valueColumn {
	symbols := t.Symbols
	index := make(map[string]int, len(symbols))
	for i, s := range symbols {
		index[s] = i
	}
	typ := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	return valueColumn{typ: typ, nullable: true, bind: func(b array.Builder) valueAppender {
		db := b.(*array.BinaryDictionaryBuilder)
		// Inserted up front, the symbols keep their order as indices.
		dict := array.NewStringBuilder(memAlloc)
		dict.AppendValues(symbols, nil)
		arr := dict.NewStringArray()
		defer arr.Release()
		if err := db.InsertStringDictValues(arr); err != nil {
			panic(err) // the value type is string by construction
		}
		return func(v any) error {
			if v == nil {
				db.AppendNull()
				return nil
			}
			s, ok := v.(string)
			if _, known := index[s]; !ok || !known {
				return malformed("%s: %v is no symbol of %s", path, v, t)
			}
			return db.AppendString(s)
		}
	}}
}

// rowKindField leads the struct of a Table API row.
const rowKindField = "row_kind"

func isRow(t *typeser.Type) bool {
	return t.Class == "org.apache.flink.types.Row" || t.Class == "org.apache.flink.table.data.RowData"
}

func flinkRecord(t *typeser.Type, path string, depth int) (valueColumn, error) {
	row := isRow(t)
	if len(t.Fields) == 0 && !row {
		return nullColumn(), nil
	}
	var fields []arrow.Field
	var cols []valueColumn
	if row {
		fields = append(fields, arrow.Field{Name: rowKindField, Type: arrow.BinaryTypes.String})
		cols = append(cols, stringLike(path+"."+rowKindField))
	}
	names := map[string]bool{}
	for _, f := range t.Fields {
		if names[f.Name] || f.Name == rowKindField && row {
			return valueColumn{}, unmappable(path, "%s has two fields named %q", t.Class, f.Name)
		}
		names[f.Name] = true
		c, err := flinkColumn(f.Type, path+"."+f.Name, depth+1)
		if err != nil {
			return valueColumn{}, err
		}
		fields = append(fields, arrow.Field{Name: f.Name, Type: c.typ, Nullable: c.nullable || f.Nullable})
		cols = append(cols, c)
	}
	return valueColumn{typ: arrow.StructOf(fields...), nullable: true, bind: func(b array.Builder) valueAppender {
		sb := b.(*array.StructBuilder)
		apps := make([]valueAppender, len(cols))
		for i, c := range cols {
			apps[i] = c.bind(sb.FieldBuilder(i))
		}
		return func(v any) error {
			if v == nil {
				sb.AppendNull()
				return nil
			}
			r, ok := v.(typeser.RecordValue)
			if !ok || len(r.Fields) != len(t.Fields) {
				return mismatch(path, "record", v)
			}
			sb.Append(true)
			i := 0
			if row {
				if err := apps[0](r.Kind); err != nil {
					return err
				}
				i = 1
			}
			for j, f := range r.Fields {
				fv := f.Value
				if fv == nil && !cols[i+j].nullable {
					// A POJO field of a primitive type that is null: Arrow
					// holds it as a null of the field.
					sb.FieldBuilder(i + j).AppendNull()
					continue
				}
				if err := apps[i+j](fv); err != nil {
					return err
				}
			}
			return nil
		}
	}}, nil
}

func flinkList(t *typeser.Type, path string, depth int) (valueColumn, error) {
	elem, err := flinkColumn(t.Elem, path+"[]", depth+1)
	if err != nil {
		return valueColumn{}, err
	}
	typ := arrow.ListOfField(arrow.Field{Name: "element", Type: elem.typ, Nullable: elem.nullable})
	return valueColumn{typ: typ, nullable: true, bind: func(b array.Builder) valueAppender {
		lb := b.(*array.ListBuilder)
		app := elem.bind(lb.ValueBuilder())
		return func(v any) error {
			if v == nil {
				lb.AppendNull()
				return nil
			}
			l, ok := v.([]any)
			if !ok {
				return mismatch(path, "list", v)
			}
			lb.Append(true)
			for _, e := range l {
				if e == nil && !elem.nullable {
					lb.ValueBuilder().AppendNull()
					continue
				}
				if err := app(e); err != nil {
					return err
				}
			}
			return nil
		}
	}}, nil
}

func flinkMap(t *typeser.Type, path string, depth int) (valueColumn, error) {
	key, err := flinkColumn(t.Key, path+".key", depth+1)
	if err != nil {
		return valueColumn{}, err
	}
	val, err := flinkColumn(t.Value, path+"{}", depth+1)
	if err != nil {
		return valueColumn{}, err
	}
	typ := arrow.MapOfFields(arrow.Field{Name: "key", Type: key.typ}, arrow.Field{Name: "value", Type: val.typ, Nullable: true})
	return valueColumn{typ: typ, nullable: true, bind: func(b array.Builder) valueAppender {
		mb := b.(*array.MapBuilder)
		kapp, vapp := key.bind(mb.KeyBuilder()), val.bind(mb.ItemBuilder())
		return func(v any) error {
			if v == nil {
				mb.AppendNull()
				return nil
			}
			m, ok := v.([]typeser.MapEntry)
			if !ok {
				return mismatch(path, "map", v)
			}
			mb.Append(true)
			for _, e := range m {
				if e.Key == nil {
					return malformed("%s: a null map key, which Arrow maps cannot hold", path)
				}
				if err := kapp(e.Key); err != nil {
					return err
				}
				if e.Value == nil {
					mb.ItemBuilder().AppendNull()
					continue
				}
				if err := vapp(e.Value); err != nil {
					return err
				}
			}
			return nil
		}
	}}, nil
}

func flinkEither(t *typeser.Type, path string, depth int) (valueColumn, error) {
	left, err := flinkColumn(t.Key, path+".left", depth+1)
	if err != nil {
		return valueColumn{}, err
	}
	right, err := flinkColumn(t.Value, path+".right", depth+1)
	if err != nil {
		return valueColumn{}, err
	}
	typ := arrow.StructOf(arrow.Field{Name: "left", Type: left.typ, Nullable: true}, arrow.Field{Name: "right", Type: right.typ, Nullable: true})
	return valueColumn{typ: typ, nullable: true, bind: func(b array.Builder) valueAppender {
		sb := b.(*array.StructBuilder)
		lapp, rapp := left.bind(sb.FieldBuilder(0)), right.bind(sb.FieldBuilder(1))
		return func(v any) error {
			if v == nil {
				sb.AppendNull()
				return nil
			}
			e, ok := v.(typeser.EitherValue)
			if !ok {
				return mismatch(path, "either", v)
			}
			sb.Append(true)
			set, other, app := sb.FieldBuilder(1), sb.FieldBuilder(0), rapp
			if e.Left {
				set, other, app = sb.FieldBuilder(0), sb.FieldBuilder(1), lapp
			}
			other.AppendNull()
			if e.Value == nil {
				set.AppendNull()
				return nil
			}
			return app(e.Value)
		}
	}}, nil
}

func flinkTTL(t *typeser.Type, path string, depth int) (valueColumn, error) {
	elem, err := flinkColumn(t.Elem, path+".value", depth+1)
	if err != nil {
		return valueColumn{}, err
	}
	typ := arrow.StructOf(arrow.Field{Name: "last_access", Type: timestampMillis}, arrow.Field{Name: "value", Type: elem.typ, Nullable: true})
	return valueColumn{typ: typ, nullable: true, bind: func(b array.Builder) valueAppender {
		sb := b.(*array.StructBuilder)
		app := elem.bind(sb.FieldBuilder(1))
		return func(v any) error {
			if v == nil {
				sb.AppendNull()
				return nil
			}
			tv, ok := v.(typeser.TTLValue)
			if !ok {
				return mismatch(path, "TTL value", v)
			}
			sb.Append(true)
			sb.FieldBuilder(0).(*array.TimestampBuilder).Append(arrow.Timestamp(tv.LastAccess))
			if tv.Value == nil {
				sb.FieldBuilder(1).AppendNull()
				return nil
			}
			return app(tv.Value)
		}
	}}, nil
}

// flinkAvro writes an Avro value through stateproc's Avro columns: the
// value typeser decoded is encoded again in Avro's binary form, which they
// read.
func flinkAvro(t *typeser.Type, path string) (valueColumn, error) {
	ser, err := serializers.AvroGeneric(t.Schema)
	if err != nil {
		return valueColumn{}, fmt.Errorf("%s: Avro schema: %w", path, err)
	}
	col, err := avroColumn(t.Schema, path)
	if err != nil {
		return valueColumn{}, err
	}
	return valueColumn{typ: col.typ, nullable: true, bind: func(b array.Builder) valueAppender {
		dec := col.bind(b)
		var buf []byte
		return func(v any) error {
			if v == nil && !col.nullable {
				b.AppendNull()
				return nil
			}
			var err error
			if buf, err = ser.AppendAny(buf[:0], v); err != nil {
				return malformed("%s: Avro value: %v", path, err)
			}
			return dec.decode(buf)
		}
	}}, nil
}

// flinkOpaque holds a value only the job's classes decode: its class and
// bytes; or, for one that decoded after all (a String or a boxed
// primitive written by Kryo or Java serialization), its JSON.
func flinkOpaque(path string) valueColumn {
	typ := arrow.StructOf(
		arrow.Field{Name: "class", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "bytes", Type: arrow.BinaryTypes.Binary, Nullable: true},
		arrow.Field{Name: "value", Type: arrow.BinaryTypes.String, Nullable: true},
	)
	return valueColumn{typ: typ, nullable: true, bind: func(b array.Builder) valueAppender {
		sb := b.(*array.StructBuilder)
		class, bytes, value := sb.FieldBuilder(0).(*array.StringBuilder), sb.FieldBuilder(1).(*array.BinaryBuilder), sb.FieldBuilder(2).(*array.StringBuilder)
		return func(v any) error {
			if v == nil {
				sb.AppendNull()
				return nil
			}
			sb.Append(true)
			if o, ok := v.(typeser.OpaqueValue); ok {
				class.Append(o.Class)
				bytes.Append(o.Bytes)
				value.AppendNull()
				return nil
			}
			class.AppendNull()
			bytes.AppendNull()
			js, err := json.Marshal(plainJSON(v))
			if err != nil {
				return malformed("%s: %v", path, err)
			}
			value.Append(string(js))
			return nil
		}
	}}
}

// plainJSON makes the few values Kryo and Java serialization decode (JDK
// strings, boxed primitives, byte strings) into JSON values.
func plainJSON(v any) any {
	if b, ok := v.([]byte); ok {
		return hex.EncodeToString(b)
	}
	return v
}
