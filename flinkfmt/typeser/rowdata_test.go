package typeser

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// javaLogicalType writes one LogicalType as InstantiationUtil.serializeObject
// does: an object stream holding an object of class, a subclass of
// LogicalType (fields isNullable and typeRoot, the LogicalTypeRoot enum),
// with the given int fields of its own.
func javaLogicalType(class, root string, ints ...struct {
	name string
	v    int
}) buf {
	b := buf{0xAC, 0xED, 0, 5, 0x73}
	// The class and its int fields.
	b = b.u8(0x72).utf(class).i64(1).u8(0x02).u16(len(ints))
	for _, f := range ints {
		b = b.u8('I').utf(f.name)
	}
	b = b.u8(0x78)
	// LogicalType: isNullable, typeRoot.
	b = b.u8(0x72).utf("org.apache.flink.table.types.logical.LogicalType").i64(1).u8(0x02).u16(2).
		u8('Z').utf("isNullable").
		u8('L').utf("typeRoot").u8(0x74).utf("Lorg/apache/flink/table/types/logical/LogicalTypeRoot;").
		u8(0x78).u8(0x70)
	// Class data, superclass first: isNullable, then the enum constant.
	b = b.u8(1)
	b = b.u8(0x7E).u8(0x72).utf("org.apache.flink.table.types.logical.LogicalTypeRoot").i64(0).u8(0x12).u16(0).u8(0x78).
		u8(0x72).utf("java.lang.Enum").i64(0).u8(0x12).u16(0).u8(0x78).u8(0x70).
		u8(0x74).utf(root)
	for _, f := range ints {
		b = b.i32(f.v)
	}
	return b
}

type intField = struct {
	name string
	v    int
}

func rowDataSnapshot() buf {
	body := buf(nil).i32(3).
		raw(javaLogicalType("org.apache.flink.table.types.logical.IntType", "INTEGER")...).
		raw(javaLogicalType("org.apache.flink.table.types.logical.VarCharType", "VARCHAR", intField{"length", 100})...).
		raw(javaLogicalType("org.apache.flink.table.types.logical.DecimalType", "DECIMAL", intField{"precision", 10}, intField{"scale", 2})...).
		i32(nestedMagic).i32(1).i32(3).
		raw(intSnap...).
		raw(simpleSnap(tableRuntime + "StringDataSerializer$StringDataSerializerSnapshot")...).
		raw(versioned(tableRuntime+"DecimalDataSerializer$DecimalSerializerSnapshot", 1, buf(nil).i32(10).i32(2))...)
	return versioned(tableRuntime+"RowDataSerializer$RowDataSerializerSnapshot", 3, body)
}

func le64(v uint64) buf { return binary.LittleEndian.AppendUint64(nil, v) }

func TestRowData(t *testing.T) {
	s := restore(t, rowDataSnapshot())
	if got := s.Type.String(); got != "RowData{f0: int32, f1: string, f2: decimal}" {
		t.Errorf("type %s", got)
	}
	// +I (7, "hi", 12.34): header word, an int slot, an inline string
	// (0x80|2 in the top byte) and a compact decimal.
	row := buf(nil).raw(le64(0)...).raw(le64(7)...).raw('h', 'i', 0, 0, 0, 0, 0, 0x82).raw(le64(1234)...)
	v := decode(t, s, buf(nil).i32(len(row)).raw(row...))
	want := RecordValue{Class: "org.apache.flink.table.data.RowData", Kind: "+I", Fields: []FieldValue{{"f0", int32(7)}, {"f1", "hi"}, {"f2", "12.34"}}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("%#v", v)
	}
	// -D (7, null, 12.34) with the null bit of field 1 (bit 9) set, and a
	// string in the variable part.
	row = buf(nil).raw(3, 0x02, 0, 0, 0, 0, 0, 0).raw(le64(7)...).raw(le64(0)...).raw(le64(1234)...)
	v = decode(t, s, buf(nil).i32(len(row)).raw(row...))
	if r := v.(RecordValue); r.Kind != "-D" || r.Fields[1].Value != nil {
		t.Errorf("%#v", v)
	}
	long := "hello, world"
	row = buf(nil).raw(le64(0)...).raw(le64(7)...).raw(le64(32<<32|uint64(len(long)))...).raw(le64(1234)...).raw([]byte(long)...).raw(0, 0, 0, 0)
	if r := decode(t, s, buf(nil).i32(len(row)).raw(row...)).(RecordValue); r.Fields[1].Value != long {
		t.Errorf("%#v", r)
	}
	// A variable part past the end of the row.
	row = buf(nil).raw(le64(0)...).raw(le64(7)...).raw(le64(64<<32 | 5)...).raw(le64(1234)...)
	if _, err := s.Decode(buf(nil).i32(len(row)).raw(row...)); err == nil {
		t.Error("an offset past the row decoded")
	}
}

// A Row of (long, string) outside legacy mode: the mask's first two bits
// are the RowKind, then one bit per field, most significant first.
func TestRow(t *testing.T) {
	// The outer snapshot: version 3 and the legacy flag.
	snap := versioned("org.apache.flink.api.java.typeutils.runtime.RowSerializer$RowSerializerSnapshot", 3,
		buf(nil).i32(compositeMagic).i32(3).u8(0).i32(nestedMagic).i32(1).i32(2).raw(longSnap...).raw(stringSnap...))
	s := restore(t, snap)
	// +U (2 = bits 0 1), field 1 null: 01 0 1 -> 0101 0000.
	v := decode(t, s, buf{0x50}.i64(5))
	want := RecordValue{Class: "org.apache.flink.types.Row", Kind: "+U", Fields: []FieldValue{{"f0", int64(5)}, {"f1", nil}}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("%#v", v)
	}
	legacy := restore(t, versioned("org.apache.flink.api.java.typeutils.runtime.RowSerializer$RowSerializerSnapshot", 3,
		buf(nil).i32(compositeMagic).i32(2).i32(nestedMagic).i32(1).i32(2).raw(longSnap...).raw(stringSnap...)))
	if v := decode(t, legacy, buf{0x00}.i64(1).ascii("a")).(RecordValue); v.Kind != "" || v.Fields[1].Value != "a" {
		t.Errorf("legacy %#v", v)
	}
}
