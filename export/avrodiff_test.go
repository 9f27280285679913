package export

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/hamba/avro/v2"

	"github.com/stateproc/stateproc/internal/avrobin"
	"github.com/stateproc/stateproc/serializers"
)

// diffSchemas are the schemas FuzzAvroDecodersAgree decodes, chosen by the
// first fuzz argument: between them every Avro type and logical type that
// export maps, each union mapping, items and map values that take no bytes,
// and nesting.
var diffSchemas = []string{
	fuzzSchema,
	`{"type":"map","values":{"type":"record","name":"V","fields":[{"name":"a","type":"null"},{"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y","Z"]}}]}}`,
	`["null","boolean","int","long","float","double","bytes","string"]`,
	`{"type":"array","items":{"type":"array","items":["null",{"type":"record","name":"N","fields":[{"name":"z","type":"null"}]}]}}`,
	`{"type":"record","name":"L","fields":[
	  {"name":"date","type":{"type":"int","logicalType":"date"}},
	  {"name":"tm","type":{"type":"int","logicalType":"time-millis"}},
	  {"name":"tu","type":{"type":"long","logicalType":"time-micros"}},
	  {"name":"tsm","type":{"type":"long","logicalType":"timestamp-millis"}},
	  {"name":"tsu","type":{"type":"long","logicalType":"timestamp-micros"}},
	  {"name":"ltm","type":{"type":"long","logicalType":"local-timestamp-millis"}},
	  {"name":"ltu","type":{"type":"long","logicalType":"local-timestamp-micros"}},
	  {"name":"id","type":{"type":"string","logicalType":"uuid"}},
	  {"name":"d38","type":{"type":"bytes","logicalType":"decimal","precision":38,"scale":2}},
	  {"name":"f16","type":{"type":"fixed","name":"F16","size":16,"logicalType":"decimal","precision":38,"scale":0}},
	  {"name":"d76","type":{"type":"bytes","logicalType":"decimal","precision":76,"scale":10}},
	  {"name":"raw","type":{"type":"fixed","name":"Raw","size":3}}
	]}`,
	`["null"]`,
	`"null"`,
	`["int"]`,
	`{"type":"map","values":{"type":"array","items":"string"}}`,
	`["null",{"type":"record","name":"A","namespace":"x","fields":[{"name":"v","type":"int"}]},{"type":"record","name":"A","namespace":"y","fields":[{"name":"v","type":"string"}]},{"type":"array","items":"long"}]`,
	`{"type":"record","name":"O","fields":[{"name":"m","type":{"type":"map","values":{"type":"map","values":["null","double"]}}},{"name":"b","type":"bytes"}]}`,
}

// FuzzAvroDecodersAgree requires export's decoder and the serializers'
// DecodeAny, which dump, verify and the engine use, to accept and refuse
// the same bytes, and to read the same value from what they accept: the
// Arrow value, written back as Avro, decodes to the serializers' value.
func FuzzAvroDecodersAgree(f *testing.F) {
	type target struct {
		schema avro.Schema
		col    column
		ser    serializers.Serializer
	}
	targets := make([]target, len(diffSchemas))
	for i, sch := range diffSchemas {
		parsed, _, err := avrobin.ParseSchema(sch)
		if err != nil {
			f.Fatal(err)
		}
		col, err := avroColumn(sch, "value")
		if err != nil {
			f.Fatal(err)
		}
		ser, err := serializers.AvroGeneric(sch)
		if err != nil {
			f.Fatal(err)
		}
		targets[i] = target{parsed, col, ser}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for i, tg := range targets {
		for range 8 {
			f.Add(uint8(i), randomAvro(rng, nil, tg.schema, 0))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		tg := targets[int(which)%len(targets)]
		v, serErr := tg.ser.DecodeAny(data)
		schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: tg.col.typ, Nullable: tg.col.nullable}}, nil)
		rb := array.NewRecordBuilder(memAlloc, schema)
		defer rb.Release()
		expErr := tg.col.bind(rb.Field(0)).decode(data)
		switch {
		case serErr != nil && expErr != nil:
			if !errors.Is(serErr, serializers.ErrDecode) || !errors.Is(expErr, serializers.ErrDecode) {
				t.Fatalf("errors that are not decode errors: %v; %v", serErr, expErr)
			}
			return
		case serErr != nil:
			t.Fatalf("%x: export accepts what DecodeAny refuses: %v", data, serErr)
		case expErr != nil:
			t.Fatalf("%x: DecodeAny accepts what export refuses: %v", data, expErr)
		}
		rec := rb.NewRecordBatch()
		defer rec.Release()
		back := arrowToAvro(t, nil, tg.schema, rec.Column(0), 0)
		v2, err := tg.ser.DecodeAny(back)
		if err != nil {
			t.Fatalf("%x: export's value written back as %x does not decode: %v", data, back, err)
		}
		want, err1 := tg.ser.AppendAny(nil, v)
		got, err2 := tg.ser.AppendAny(nil, v2)
		if err1 != nil || err2 != nil || !bytes.Equal(want, got) {
			t.Fatalf("%x: DecodeAny reads %#v (%x), export %#v (%x); %v %v", data, v, want, v2, got, err1, err2)
		}
	})
}

// arrowToAvro writes value i of arr, a column export built for schema s, as
// Avro binary.
func arrowToAvro(t *testing.T, dst []byte, s avro.Schema, arr arrow.Array, i int) []byte {
	s = avrobin.Deref(s)
	switch s := s.(type) {
	case *avro.NullSchema:
		return dst
	case *avro.RecordSchema:
		st := arr.(*array.Struct)
		for j, f := range s.Fields() {
			dst = arrowToAvro(t, dst, f.Type(), st.Field(j), i)
		}
		return dst
	case *avro.EnumSchema:
		d := arr.(*array.Dictionary)
		sym := d.Dictionary().(*array.String).Value(d.GetValueIndex(i))
		return appendAvroLong(dst, int64(slices.Index(s.Symbols(), sym)))
	case *avro.ArraySchema:
		l := arr.(*array.List)
		start, end := l.ValueOffsets(i)
		if end > start {
			dst = appendAvroLong(dst, end-start)
			for j := start; j < end; j++ {
				dst = arrowToAvro(t, dst, s.Items(), l.ListValues(), int(j))
			}
		}
		return append(dst, 0)
	case *avro.MapSchema:
		m := arr.(*array.Map)
		start, end := m.ValueOffsets(i)
		if end > start {
			dst = appendAvroLong(dst, end-start)
			keys := m.Keys().(*array.String)
			for j := start; j < end; j++ {
				k := keys.Value(int(j))
				dst = append(appendAvroLong(dst, int64(len(k))), k...)
				dst = arrowToAvro(t, dst, s.Values(), m.Items(), int(j))
			}
		}
		return append(dst, 0)
	case *avro.UnionSchema:
		return unionToAvro(t, dst, s, arr, i)
	case *avro.FixedSchema:
		switch l := s.Logical(); {
		case l != nil && l.Type() == avro.Decimal:
			return append(dst, decimalUnscaled(arr, i, s.Size())...)
		case l != nil && l.Type() == avro.Duration && s.Size() == 12:
			st := arr.(*array.Struct)
			for j := range 3 {
				dst = binary.LittleEndian.AppendUint32(dst, st.Field(j).(*array.Uint32).Value(i))
			}
			return dst
		}
		return append(dst, arr.(*array.FixedSizeBinary).Value(i)...)
	}
	switch a := arr.(type) {
	case *array.Boolean:
		if a.Value(i) {
			return append(dst, 1)
		}
		return append(dst, 0)
	case *array.Int32:
		return appendAvroLong(dst, int64(a.Value(i)))
	case *array.Date32:
		return appendAvroLong(dst, int64(a.Value(i)))
	case *array.Time32:
		return appendAvroLong(dst, int64(a.Value(i)))
	case *array.Int64:
		return appendAvroLong(dst, a.Value(i))
	case *array.Time64:
		return appendAvroLong(dst, int64(a.Value(i)))
	case *array.Timestamp:
		return appendAvroLong(dst, int64(a.Value(i)))
	case *array.Float32:
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(a.Value(i)))
	case *array.Float64:
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(a.Value(i)))
	case *array.String:
		return append(appendAvroLong(dst, int64(len(a.Value(i)))), a.Value(i)...)
	case *array.Binary:
		return append(appendAvroLong(dst, int64(len(a.Value(i)))), a.Value(i)...)
	case *array.Decimal128, *array.Decimal256:
		b := decimalUnscaled(arr, i, 0)
		return append(appendAvroLong(dst, int64(len(b))), b...)
	}
	t.Fatalf("no writer for %s in %s", s.Type(), arr.DataType())
	return nil
}

// unionToAvro writes the branch that export's mapping of a union holds.
func unionToAvro(t *testing.T, dst []byte, s *avro.UnionSchema, arr arrow.Array, i int) []byte {
	types := s.Types()
	null := slices.IndexFunc(types, func(b avro.Schema) bool { return b.Type() == avro.Null })
	var values []int
	for j, b := range types {
		if b.Type() != avro.Null {
			values = append(values, j)
		}
	}
	if _, ok := arr.(*array.Null); ok || arr.IsNull(i) {
		if null < 0 {
			t.Fatalf("a null for union %s", s)
		}
		return appendAvroLong(dst, int64(null))
	}
	if len(values) == 1 {
		return arrowToAvro(t, appendAvroLong(dst, int64(values[0])), types[values[0]], arr, i)
	}
	st := arr.(*array.Struct)
	for f, j := range values {
		if !st.Field(f).IsNull(i) {
			return arrowToAvro(t, appendAvroLong(dst, int64(j)), types[j], st.Field(f), i)
		}
	}
	t.Fatalf("union %s: no branch set", s)
	return nil
}

// decimalUnscaled is a decimal's unscaled value in big-endian two's
// complement: size bytes, or as few as hold it when size is 0.
func decimalUnscaled(arr arrow.Array, i, size int) []byte {
	var v *big.Int
	switch a := arr.(type) {
	case *array.Decimal128:
		v = a.Value(i).BigInt()
	case *array.Decimal256:
		v = a.Value(i).BigInt()
	}
	n := size
	if n == 0 {
		n = v.BitLen()/8 + 1
	}
	u := new(big.Int).Set(v)
	if v.Sign() < 0 {
		u.Add(u, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	}
	return u.FillBytes(make([]byte, n))
}

func appendAvroLong(dst []byte, v int64) []byte {
	return binary.AppendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

// randomAvro writes a random datum of s, valid or nearly so (decimals may
// have more digits than their precision), as a seed.
func randomAvro(rng *rand.Rand, dst []byte, s avro.Schema, depth int) []byte {
	s = avrobin.Deref(s)
	switch s := s.(type) {
	case *avro.NullSchema:
		return dst
	case *avro.UnionSchema:
		j := rng.IntN(len(s.Types()))
		return randomAvro(rng, appendAvroLong(dst, int64(j)), s.Types()[j], depth+1)
	case *avro.RecordSchema:
		for _, f := range s.Fields() {
			dst = randomAvro(rng, dst, f.Type(), depth+1)
		}
		return dst
	case *avro.EnumSchema:
		return appendAvroLong(dst, int64(rng.IntN(len(s.Symbols()))))
	case *avro.FixedSchema:
		b := make([]byte, s.Size())
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		if s.Logical() != nil && s.Logical().Type() == avro.Decimal {
			b[0] &= 0x0f
		}
		return append(dst, b...)
	case *avro.ArraySchema, *avro.MapSchema:
		n := rng.IntN(4)
		if n > 0 {
			// Half the time in the negative-count form, with a byte size.
			var body []byte
			for j := range n {
				if m, ok := s.(*avro.MapSchema); ok {
					body = append(appendAvroLong(body, 2), byte('a'+j), byte('a'+rng.IntN(26)))
					body = randomAvro(rng, body, m.Values(), depth+1)
				} else {
					body = randomAvro(rng, body, s.(*avro.ArraySchema).Items(), depth+1)
				}
			}
			if rng.IntN(2) == 0 {
				dst = appendAvroLong(appendAvroLong(dst, int64(-n)), int64(len(body)))
			} else {
				dst = appendAvroLong(dst, int64(n))
			}
			dst = append(dst, body...)
		}
		return append(dst, 0)
	}
	switch s.Type() {
	case avro.Boolean:
		return append(dst, byte(rng.IntN(2)))
	case avro.Int:
		return appendAvroLong(dst, int64(int32(rng.Uint32())>>rng.IntN(32)))
	case avro.Long:
		return appendAvroLong(dst, int64(rng.Uint64())>>rng.IntN(64))
	case avro.Float:
		return binary.LittleEndian.AppendUint32(dst, rng.Uint32())
	case avro.Double:
		return binary.LittleEndian.AppendUint64(dst, rng.Uint64())
	case avro.String:
		str := []string{"", "a", "é✓", "tenant-acme", "\x00"}[rng.IntN(5)]
		return append(appendAvroLong(dst, int64(len(str))), str...)
	case avro.Bytes:
		b := []byte{byte(rng.IntN(0x80)), 0xff, 0}[:1+rng.IntN(3)]
		return append(appendAvroLong(dst, int64(len(b))), b...)
	}
	return dst
}
