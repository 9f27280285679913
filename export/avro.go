package export

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/hamba/avro/v2"

	"github.com/stateproc/stateproc/internal/avrobin"
)

// An avroColumn is a column compiled from an Avro writer schema: the plan
// that reads the Avro binary encoding straight into Arrow builders, so that
// no generic Go value is made for a datum.
type avroCol struct {
	typ      arrow.DataType
	nullable bool
	// minSize is the fewest bytes a datum takes; array and map counts are
	// checked against it before anything is appended.
	minSize int
	bind    func(b array.Builder) avroNode
}

// avroColumn compiles schema into a column whose decoder reads one datum.
func avroColumn(schema, path string) (column, error) {
	parsed, _, err := avrobin.ParseSchema(schema)
	if err != nil {
		return column{}, fmt.Errorf("%s: Avro %w", path, err)
	}
	c := avroCompiler{onPath: map[string]bool{}}
	ac, err := c.compile(parsed, path)
	if err != nil {
		return column{}, err
	}
	return column{typ: ac.typ, nullable: ac.nullable, bind: func(b array.Builder) decoder { return &avroDatum{root: ac.bind(b)} }}, nil
}

type avroCompiler struct {
	// onPath holds the records being compiled: a record that contains
	// itself has no finite Arrow type.
	onPath map[string]bool
}

func (c *avroCompiler) compile(s avro.Schema, path string) (avroCol, error) {
	switch s := s.(type) {
	case *avro.RefSchema:
		return c.compile(s.Schema(), path)
	case *avro.RecordSchema:
		return c.record(s, path)
	case *avro.EnumSchema:
		return enumCol(s), nil
	case *avro.FixedSchema:
		return fixedCol(s, path)
	case *avro.ArraySchema:
		items, err := c.compile(s.Items(), path+"[]")
		if err != nil {
			return avroCol{}, err
		}
		return avroCol{
			typ:     arrow.ListOfField(arrow.Field{Name: "element", Type: items.typ, Nullable: items.nullable}),
			minSize: 1,
			bind: func(b array.Builder) avroNode {
				lb := b.(*array.ListBuilder)
				return &avroArray{b: lb, items: items.bind(lb.ValueBuilder()), itemMin: items.minSize}
			},
		}, nil
	case *avro.MapSchema:
		values, err := c.compile(s.Values(), path+"{}")
		if err != nil {
			return avroCol{}, err
		}
		return avroCol{
			typ:     arrow.MapOfFields(arrow.Field{Name: "key", Type: arrow.BinaryTypes.String}, arrow.Field{Name: "value", Type: values.typ, Nullable: values.nullable}),
			minSize: 1,
			bind: func(b array.Builder) avroNode {
				mb := b.(*array.MapBuilder)
				return &avroMap{b: mb, keys: mb.KeyBuilder().(*array.StringBuilder).BinaryBuilder, values: values.bind(mb.ItemBuilder()), entryMin: 1 + values.minSize}
			},
		}, nil
	case *avro.UnionSchema:
		return c.union(s, path)
	case *avro.NullSchema:
		return avroCol{typ: arrow.Null, nullable: true, bind: func(b array.Builder) avroNode { return avroNull{b.(*array.NullBuilder)} }}, nil
	case *avro.PrimitiveSchema:
		return primitiveCol(s, path)
	}
	return avroCol{}, unmappable(path, "Avro type %s", s.Type())
}

func (c *avroCompiler) record(s *avro.RecordSchema, path string) (avroCol, error) {
	name := s.FullName()
	if c.onPath[name] {
		return avroCol{}, unmappable(path, "record %s contains itself, and an Arrow type cannot", name)
	}
	if len(s.Fields()) == 0 {
		return avroCol{}, unmappable(path, "record %s has no fields, and Parquet has no empty group", name)
	}
	c.onPath[name] = true
	defer delete(c.onPath, name)
	fields := make([]arrow.Field, len(s.Fields()))
	cols := make([]avroCol, len(s.Fields()))
	minSize := 0
	for i, f := range s.Fields() {
		fc, err := c.compile(f.Type(), path+"."+f.Name())
		if err != nil {
			return avroCol{}, err
		}
		cols[i] = fc
		fields[i] = arrow.Field{Name: f.Name(), Type: fc.typ, Nullable: fc.nullable}
		minSize += fc.minSize
	}
	return avroCol{
		typ:     arrow.StructOf(fields...),
		minSize: minSize,
		bind: func(b array.Builder) avroNode {
			sb := b.(*array.StructBuilder)
			r := &avroRecord{b: sb, fields: make([]avroNode, len(cols))}
			for i, fc := range cols {
				r.fields[i] = fc.bind(sb.FieldBuilder(i))
			}
			return r
		},
	}, nil
}

// union maps a union with null and one other branch to that branch, made
// nullable, a union of nulls only to a null column, and any other union to a
// struct with one nullable field per branch, of which at most one is set.
func (c *avroCompiler) union(s *avro.UnionSchema, path string) (avroCol, error) {
	types := s.Types()
	var values []int
	hasNull := false
	for i, t := range types {
		if t.Type() == avro.Null {
			hasNull = true
		} else {
			values = append(values, i)
		}
	}
	switch {
	case len(values) == 0:
		return avroCol{typ: arrow.Null, nullable: true, minSize: 1, bind: func(b array.Builder) avroNode {
			return &avroOptional{b: b, branches: len(types), value: -1}
		}}, nil
	case len(values) == 1:
		inner, err := c.compile(types[values[0]], path)
		if err != nil {
			return avroCol{}, err
		}
		return avroCol{typ: inner.typ, nullable: inner.nullable || hasNull, minSize: 1, bind: func(b array.Builder) avroNode {
			return &avroOptional{b: b, branches: len(types), value: values[0], inner: inner.bind(b)}
		}}, nil
	}
	names := branchNames(types)
	var fields []arrow.Field
	var cols []avroCol
	field := make([]int, len(types)) // the struct field of each branch, -1 for null
	for i, t := range types {
		field[i] = -1
		if t.Type() == avro.Null {
			continue
		}
		bc, err := c.compile(t, path+"."+names[i])
		if err != nil {
			return avroCol{}, err
		}
		field[i] = len(fields)
		fields = append(fields, arrow.Field{Name: names[i], Type: bc.typ, Nullable: true})
		cols = append(cols, bc)
	}
	return avroCol{
		typ:      arrow.StructOf(fields...),
		nullable: hasNull,
		minSize:  1,
		bind: func(b array.Builder) avroNode {
			sb := b.(*array.StructBuilder)
			u := &avroUnion{b: sb, branches: make([]avroNode, len(types)), fields: make([]array.Builder, len(types))}
			for i, f := range field {
				if f >= 0 {
					u.fields[i] = sb.FieldBuilder(f)
					u.branches[i] = cols[f].bind(u.fields[i])
				}
			}
			return u
		},
	}, nil
}

// branchNames names the fields of a union's struct: a named type by its
// name (its full name if two share a name), any other by its type, as the
// Avro JSON encoding of unions does.
func branchNames(types []avro.Schema) []string {
	short := make([]string, len(types))
	count := map[string]int{}
	for i, t := range types {
		if n, ok := avrobin.Deref(t).(avro.NamedSchema); ok {
			short[i] = n.Name()
		} else {
			short[i] = string(t.Type())
		}
		count[short[i]]++
	}
	for i, t := range types {
		if n, ok := avrobin.Deref(t).(avro.NamedSchema); ok && count[short[i]] > 1 {
			short[i] = n.FullName()
		}
	}
	return short
}

func enumCol(s *avro.EnumSchema) avroCol {
	symbols := s.Symbols()
	return avroCol{
		typ:     &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String},
		minSize: 1,
		bind: func(b array.Builder) avroNode {
			db := b.(*array.BinaryDictionaryBuilder)
			// Inserted up front, the symbols keep their order as indices and
			// every batch carries the whole dictionary.
			dict := array.NewStringBuilder(memAlloc)
			dict.AppendValues(symbols, nil)
			arr := dict.NewStringArray()
			defer arr.Release()
			if err := db.InsertStringDictValues(arr); err != nil {
				panic(err) // the value type is string by construction
			}
			e := &avroEnum{b: db, symbols: make([][]byte, len(symbols))}
			for i, sym := range symbols {
				e.symbols[i] = []byte(sym)
			}
			return e
		},
	}
}

func fixedCol(s *avro.FixedSchema, path string) (avroCol, error) {
	size := s.Size()
	if l := s.Logical(); l != nil {
		switch l.Type() {
		case avro.Decimal:
			return decimalCol(l.(*avro.DecimalLogicalSchema), size, path)
		case avro.Duration:
			if size == 12 {
				return durationCol(), nil
			}
		}
	}
	if size < 1 {
		return avroCol{}, unmappable(path, "fixed %s of size 0, and Parquet has no empty fixed-length type", s.FullName())
	}
	return avroCol{
		typ:     &arrow.FixedSizeBinaryType{ByteWidth: size},
		minSize: size,
		bind: func(b array.Builder) avroNode {
			return &avroFixed{b: b.(*array.FixedSizeBinaryBuilder), size: size}
		},
	}, nil
}

// durationCol maps Avro's duration, three little-endian unsigned 32-bit
// counts of months, days and milliseconds, to a struct of them: Arrow's
// interval types have other units, and Parquet writers do not take them.
func durationCol() avroCol {
	u32 := arrow.PrimitiveTypes.Uint32
	return avroCol{
		typ:     arrow.StructOf(arrow.Field{Name: "months", Type: u32}, arrow.Field{Name: "days", Type: u32}, arrow.Field{Name: "milliseconds", Type: u32}),
		minSize: 12,
		bind: func(b array.Builder) avroNode {
			sb := b.(*array.StructBuilder)
			d := &avroDuration{b: sb}
			for i := range d.parts {
				d.parts[i] = sb.FieldBuilder(i).(*array.Uint32Builder)
			}
			return d
		},
	}
}

// decimalCol maps a decimal to Arrow's decimal of the same precision and
// scale: 128 bits up to 38 digits, 256 bits up to 76. size is the fixed
// size, or 0 for bytes.
func decimalCol(d *avro.DecimalLogicalSchema, size int, path string) (avroCol, error) {
	p, s := int32(d.Precision()), int32(d.Scale())
	minSize := max(size, 1)
	switch {
	case p >= 1 && p <= 38:
		return avroCol{typ: &arrow.Decimal128Type{Precision: p, Scale: s}, minSize: minSize, bind: func(b array.Builder) avroNode {
			return &avroDecimal128{b: b.(*array.Decimal128Builder), size: size, precision: p}
		}}, nil
	case p > 38 && p <= 76:
		return avroCol{typ: &arrow.Decimal256Type{Precision: p, Scale: s}, minSize: minSize, bind: func(b array.Builder) avroNode {
			return &avroDecimal256{b: b.(*array.Decimal256Builder), size: size, precision: p}
		}}, nil
	}
	return avroCol{}, unmappable(path, "decimal(%d,%d): Arrow decimals hold 1 to 76 digits", p, s)
}

func primitiveCol(s *avro.PrimitiveSchema, path string) (avroCol, error) {
	var logical avro.LogicalType
	if l := s.Logical(); l != nil {
		logical = l.Type()
	}
	switch s.Type() {
	case avro.Boolean:
		return avroCol{typ: arrow.FixedWidthTypes.Boolean, minSize: 1, bind: func(b array.Builder) avroNode { return avroBool{b.(*array.BooleanBuilder)} }}, nil
	case avro.Int:
		switch logical {
		case avro.Date:
			return intCol[arrow.Date32](arrow.FixedWidthTypes.Date32), nil
		case avro.TimeMillis:
			return intCol[arrow.Time32](arrow.FixedWidthTypes.Time32ms), nil
		}
		return intCol[int32](arrow.PrimitiveTypes.Int32), nil
	case avro.Long:
		switch logical {
		case avro.TimeMicros:
			return longCol[arrow.Time64](arrow.FixedWidthTypes.Time64us), nil
		case avro.TimestampMillis:
			return longCol[arrow.Timestamp](timestampMillis), nil
		case avro.TimestampMicros:
			return longCol[arrow.Timestamp](&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}), nil
		case avro.LocalTimestampMillis:
			return longCol[arrow.Timestamp](&arrow.TimestampType{Unit: arrow.Millisecond}), nil
		case avro.LocalTimestampMicros:
			return longCol[arrow.Timestamp](&arrow.TimestampType{Unit: arrow.Microsecond}), nil
		}
		return longCol[int64](arrow.PrimitiveTypes.Int64), nil
	case avro.Float:
		return avroCol{typ: arrow.PrimitiveTypes.Float32, minSize: 4, bind: func(b array.Builder) avroNode { return avroFloat{b.(*array.Float32Builder)} }}, nil
	case avro.Double:
		return avroCol{typ: arrow.PrimitiveTypes.Float64, minSize: 8, bind: func(b array.Builder) avroNode { return avroDouble{b.(*array.Float64Builder)} }}, nil
	case avro.Bytes:
		if logical == avro.Decimal {
			return decimalCol(s.Logical().(*avro.DecimalLogicalSchema), 0, path)
		}
		return avroCol{typ: arrow.BinaryTypes.Binary, minSize: 1, bind: func(b array.Builder) avroNode { return avroBytes{b.(*array.BinaryBuilder)} }}, nil
	case avro.String:
		return avroCol{typ: arrow.BinaryTypes.String, minSize: 1, bind: func(b array.Builder) avroNode {
			return avroString{b.(*array.StringBuilder).BinaryBuilder}
		}}, nil
	}
	return avroCol{}, unmappable(path, "Avro type %s", s.Type())
}

func intCol[T ~int32](typ arrow.DataType) avroCol {
	return avroCol{typ: typ, minSize: 1, bind: func(b array.Builder) avroNode { return avroInt[T]{b.(appender[T])} }}
}

func longCol[T ~int64](typ arrow.DataType) avroCol {
	return avroCol{typ: typ, minSize: 1, bind: func(b array.Builder) avroNode { return avroLong[T]{b.(appender[T])} }}
}
