package typeser

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/stateproc/stateproc/flinkfmt/internal/javaobj"
	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
)

// The Table API keeps its state as RowData. RowDataSerializer writes each
// row as a BinaryRowData behind an int32 length; its snapshot (version 3)
// is the field count, each field's LogicalType Java-serialized in its own
// object stream, and the fields' serializer snapshots. The LogicalTypes
// say how to read the binary row, so they drive decoding; the nested
// snapshots are walked and checked only for their count.
//
// BinaryRowData: a header byte (the RowKind) and the null bits, in 8-byte
// words; then one 8-byte slot per field; then a variable part. The slots
// are little-endian (Flink writes them in the machine's order, and every
// platform it runs on is little-endian). Strings and bytes of up to 7
// bytes sit in the slot with 0x80|length in its top byte; longer ones, and
// big decimals, nested rows and arrays, put offset<<32|length in the slot.
// Timestamps of precision above 3 put offset<<32|nanos-of-millisecond in
// the slot and the milliseconds at the offset.

const rowDataSnapshotVersion = 3

// rowField is one field of a binary row.
type rowField struct {
	root      string // LogicalTypeRoot constant
	precision int
	scale     int
	nested    []rowField // ROW
	names     []string   // ROW
	class     string
}

// rowKinds are RowKind's short strings by byte value.
var rowKinds = []string{"+I", "-U", "+U", "-D"}

func restoreRowData(p *parser, class string, version int) (*Type, codec) {
	if version != rowDataSnapshotVersion {
		p.unsupported(class, version, "RowData snapshots of version 3 are read")
		return nil, nil
	}
	n := p.r.Count("RowData field count", 4)
	fields := make([]rowField, 0, n)
	for i := 0; i < n && !p.failed(); i++ {
		v := p.javaObject("LogicalType")
		if p.failed() {
			return nil, nil
		}
		f, err := logicalType(v, 0)
		if err != nil {
			p.err = err
			return nil, nil
		}
		fields = append(fields, f)
	}
	nested := p.nested(class)
	if p.failed() {
		return nil, nil
	}
	if len(nested) != len(fields) {
		p.bad("%s: %d field serializers for %d fields", class, len(nested), len(fields))
		return nil, nil
	}
	names := make([]string, len(fields))
	for i := range names {
		names[i] = fmt.Sprintf("f%d", i)
	}
	row := rowField{root: "ROW", nested: fields, names: names}
	return row.typ(), rowDataCodec{row: row}
}

// logicalType reads a Java-serialized LogicalType by its type root.
func logicalType(v any, depth int) (rowField, error) {
	if depth > MaxDepth {
		return rowField{}, fmt.Errorf("%w: LogicalTypes nest deeper than %d", ErrSnapshot, MaxDepth)
	}
	o, ok := v.(*javaobj.Object)
	if !ok {
		return rowField{}, fmt.Errorf("%w: a LogicalType is %T", ErrSnapshot, v)
	}
	root, ok := fieldOf(o, "typeRoot").(*javaobj.Enum)
	if !ok {
		return rowField{}, fmt.Errorf("%w: %s has no type root", ErrSnapshot, o.Class.Name)
	}
	f := rowField{root: root.Constant, class: o.Class.Name}
	if p, ok := fieldOf(o, "precision").(int32); ok {
		f.precision = int(p)
	}
	if s, ok := fieldOf(o, "scale").(int32); ok {
		f.scale = int(s)
	}
	if f.root == "ROW" {
		for _, e := range javaList(fieldOf(o, "fields"), 0) {
			rf, ok := e.(*javaobj.Object)
			if !ok {
				return rowField{}, fmt.Errorf("%w: a row field is %T", ErrSnapshot, e)
			}
			name, _ := fieldOf(rf, "name").(string)
			sub, err := logicalType(fieldOf(rf, "type"), depth+1)
			if err != nil {
				return rowField{}, err
			}
			f.names = append(f.names, name)
			f.nested = append(f.nested, sub)
		}
	}
	return f, nil
}

// javaList returns the elements of a Java-serialized ArrayList, or of an
// unmodifiable view of one.
func javaList(v any, depth int) []any {
	o, ok := v.(*javaobj.Object)
	if !ok || depth > 4 {
		return nil
	}
	switch o.Class.Name {
	case "java.util.ArrayList", "java.util.LinkedList":
		var out []any
		for _, d := range o.Data {
			for _, a := range d.Annotations {
				if _, blk := a.(javaobj.BlockData); !blk {
					out = append(out, a)
				}
			}
		}
		return out
	case "java.util.Arrays$ArrayList":
		if a, ok := fieldOf(o, "a").(*javaobj.Array); ok {
			return a.Elems
		}
	}
	for _, name := range []string{"list", "c"} {
		if inner, ok := o.Field(name); ok {
			return javaList(inner, depth+1)
		}
	}
	return nil
}

func (f rowField) typ() *Type {
	switch f.root {
	case "BOOLEAN":
		return &Type{Kind: KindBool}
	case "TINYINT":
		return &Type{Kind: KindInt8}
	case "SMALLINT":
		return &Type{Kind: KindInt16}
	case "INTEGER", "INTERVAL_YEAR_MONTH":
		return &Type{Kind: KindInt32}
	case "BIGINT", "INTERVAL_DAY_TIME":
		return &Type{Kind: KindInt64}
	case "FLOAT":
		return &Type{Kind: KindFloat32}
	case "DOUBLE":
		return &Type{Kind: KindFloat64}
	case "DATE":
		return &Type{Kind: KindDate, Class: "days since the epoch"}
	case "TIME_WITHOUT_TIME_ZONE":
		return &Type{Kind: KindTime, Class: "milliseconds of the day"}
	case "CHAR", "VARCHAR":
		return &Type{Kind: KindString}
	case "BINARY", "VARBINARY":
		return &Type{Kind: KindBytes}
	case "DECIMAL":
		return &Type{Kind: KindDecimal}
	case "TIMESTAMP_WITHOUT_TIME_ZONE", "TIMESTAMP_WITH_LOCAL_TIME_ZONE":
		return &Type{Kind: KindTimestamp}
	case "ROW":
		t := &Type{Kind: KindRecord, Class: "org.apache.flink.table.data.RowData"}
		for i, n := range f.nested {
			t.Fields = append(t.Fields, Field{Name: f.names[i], Type: n.typ(), Nullable: true})
		}
		return t
	}
	return &Type{Kind: KindOpaque, Class: f.root, Serializer: "BinaryRowData field"}
}

type rowDataCodec struct{ row rowField }

func (c rowDataCodec) read(r *wire.Buf, _ bool) any {
	b := r.Sized("binary row")
	if r.Err() != nil {
		return nil
	}
	v, err := c.row.decodeRow(b, 0)
	if err != nil {
		r.Fail("binary row", err)
		return nil
	}
	return v
}

func (rowDataCodec) size() (int, bool) { return 4, false }

func bitsetWidth(arity int) int { return ((arity + 63 + 8) / 64) * 8 }

// decodeRow decodes a binary row of f's fields.
func (f rowField) decodeRow(b []byte, depth int) (any, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("%w: rows nest deeper than %d", wire.ErrMalformed, MaxDepth)
	}
	head := bitsetWidth(len(f.nested))
	if len(b) < head+8*len(f.nested) {
		return nil, fmt.Errorf("%w: a binary row of %d fields needs %d bytes, has %d", wire.ErrShort, len(f.nested), head+8*len(f.nested), len(b))
	}
	if int(b[0]) >= len(rowKinds) {
		return nil, fmt.Errorf("%w: row kind %d", wire.ErrMalformed, b[0])
	}
	out := RecordValue{Class: "org.apache.flink.table.data.RowData", Kind: rowKinds[b[0]]}
	for i, sub := range f.nested {
		bit := i + 8
		var v any
		if b[bit/8]&(1<<(bit%8)) == 0 {
			var err error
			if v, err = sub.decodeField(b, head+8*i, depth); err != nil {
				return nil, fmt.Errorf("field %s: %w", f.names[i], err)
			}
		}
		out.Fields = append(out.Fields, FieldValue{Name: f.names[i], Value: v})
	}
	return out, nil
}

// varPart returns the bytes a slot's offset<<32|length names.
func varPart(b []byte, slot uint64) ([]byte, error) {
	off, n := slot>>32, slot&0xFFFFFFFF
	if off > uint64(len(b)) || n > uint64(len(b))-off {
		return nil, fmt.Errorf("%w: %d bytes at offset %d of a %d-byte row", wire.ErrShort, n, off, len(b))
	}
	return b[off : off+n], nil
}

func (f rowField) decodeField(b []byte, at int, depth int) (any, error) {
	slot := b[at : at+8]
	u := binary.LittleEndian.Uint64(slot)
	switch f.root {
	case "BOOLEAN":
		return slot[0] != 0, nil
	case "TINYINT":
		return int8(slot[0]), nil
	case "SMALLINT":
		return int16(binary.LittleEndian.Uint16(slot)), nil
	case "INTEGER", "INTERVAL_YEAR_MONTH", "DATE", "TIME_WITHOUT_TIME_ZONE":
		return int32(binary.LittleEndian.Uint32(slot)), nil
	case "BIGINT", "INTERVAL_DAY_TIME":
		return int64(u), nil
	case "FLOAT":
		return math.Float32frombits(binary.LittleEndian.Uint32(slot)), nil
	case "DOUBLE":
		return math.Float64frombits(u), nil
	case "CHAR", "VARCHAR", "BINARY", "VARBINARY":
		var p []byte
		if slot[7]&0x80 != 0 {
			n := int(slot[7] & 0x7F)
			if n > 7 {
				return nil, fmt.Errorf("%w: inline length %d", wire.ErrMalformed, n)
			}
			p = slot[:n]
		} else {
			var err error
			if p, err = varPart(b, u); err != nil {
				return nil, err
			}
		}
		if f.root == "CHAR" || f.root == "VARCHAR" {
			return string(p), nil
		}
		return append([]byte(nil), p...), nil
	case "DECIMAL":
		if f.precision <= 18 {
			return formatDecimal(bigFromInt64(int64(u)), int32(f.scale)), nil
		}
		p, err := varPart(b, u)
		if err != nil {
			return nil, err
		}
		if len(p) == 0 {
			return nil, fmt.Errorf("%w: empty decimal", wire.ErrMalformed)
		}
		return formatDecimal(twosComplement(p), int32(f.scale)), nil
	case "TIMESTAMP_WITHOUT_TIME_ZONE", "TIMESTAMP_WITH_LOCAL_TIME_ZONE":
		if f.precision <= 3 {
			return time.UnixMilli(int64(u)).UTC(), nil
		}
		p, err := varPart(b, u&^0xFFFFFFFF|8)
		if err != nil {
			return nil, err
		}
		nanos := int64(u & 0xFFFFFFFF)
		if nanos >= 1_000_000 {
			return nil, fmt.Errorf("%w: %d nanoseconds of a millisecond", wire.ErrMalformed, nanos)
		}
		return time.UnixMilli(int64(binary.LittleEndian.Uint64(p))).UTC().Add(time.Duration(nanos)), nil
	case "ROW":
		p, err := varPart(b, u)
		if err != nil {
			return nil, err
		}
		return f.decodeRow(p, depth+1)
	}
	// Arrays, maps and the rest keep their bytes: the variable part for
	// the kinds that have one, else the slot.
	p := slot
	switch f.root {
	case "ARRAY", "MAP", "MULTISET", "RAW", "STRUCTURED_TYPE":
		var err error
		if p, err = varPart(b, u); err != nil {
			return nil, err
		}
	}
	return OpaqueValue{Class: f.root, Serializer: "BinaryRowData field", Bytes: append([]byte(nil), p...)}, nil
}

// stringDataCodec reads StringDataSerializer's form: an int32 byte length
// and UTF-8.
type stringDataCodec struct{}

func (stringDataCodec) read(r *wire.Buf, _ bool) any {
	b := r.Sized("string data")
	if r.Err() != nil {
		return nil
	}
	return string(b)
}

func (stringDataCodec) size() (int, bool) { return 4, false }

// restoreTableParams reads the snapshots of DecimalDataSerializer
// (precision, scale) and TimestampDataSerializer (precision): n ints. They
// stand inside RowData snapshots, whose LogicalTypes decode the fields, so
// on their own their values stay opaque.
func restoreTableParams(n int) restoreFunc {
	return func(p *parser, class string, version int) (*Type, codec) {
		for i := 0; i < n; i++ {
			p.r.I32()
		}
		return &Type{Kind: KindOpaque, Class: class}, opaqueCodec{class: class, serializer: class}
	}
}
