package typeser

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/hamba/avro/v2"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
	"github.com/stateproc/stateproc/serializers"
)

// Flink's AvroSerializer does not write Avro's binary encoding: its
// DataOutputEncoder writes ints, longs, enum symbols and union branches
// as fixed-width big-endian integers, floats and doubles big-endian,
// strings and bytes after an int32 length, and arrays and maps as blocks
// whose counts are unsigned varints (low 7 bits first) ended by a zero
// count. avroCodec walks that encoding with the writer schema, which gives
// the value's length, transcodes it to Avro's binary encoding and decodes
// that with package serializers.
type avroCodec struct {
	schema avro.Schema
	ser    serializers.Serializer
}

func avroType(runtime, schema string) (*Type, codec, error) {
	ser, err := serializers.AvroGeneric(schema)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: Avro schema: %v", ErrSnapshot, err)
	}
	parsed, err := avro.ParseWithCache(schema, "", &avro.SchemaCache{})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: Avro schema: %v", ErrSnapshot, err)
	}
	return &Type{Kind: KindAvro, Class: runtime, Schema: schema}, avroCodec{schema: parsed, ser: ser}, nil
}

// maxAvroItems bounds the items of all arrays and maps of one value that
// take no bytes of their own (nulls, empty records).
const maxAvroItems = 1 << 16

func (c avroCodec) read(r *wire.Buf, _ bool) any {
	t := &avroTranscoder{r: r}
	t.value(c.schema, 0)
	if r.Err() != nil {
		return nil
	}
	v, err := c.ser.DecodeAny(t.out)
	if err != nil {
		r.Fail("Avro value", err)
		return nil
	}
	return v
}

func (avroCodec) size() (int, bool) { return 0, false }

type avroTranscoder struct {
	r     *wire.Buf
	out   []byte
	empty int
}

func (t *avroTranscoder) long(v int64) { t.out = binary.AppendVarint(t.out, v) }

func (t *avroTranscoder) value(s avro.Schema, depth int) {
	r := t.r
	if r.Err() != nil {
		return
	}
	if depth > MaxDepth {
		r.Failf(wire.ErrMalformed, "Avro value nests deeper than %d", MaxDepth)
		return
	}
	switch s := s.(type) {
	case *avro.RefSchema:
		t.value(s.Schema(), depth+1)
	case *avro.PrimitiveSchema:
		switch s.Type() {
		case avro.Null:
		case avro.Boolean:
			t.out = append(t.out, r.U8())
		case avro.Int:
			t.long(int64(r.I32()))
		case avro.Long:
			t.long(r.I64())
		case avro.Float:
			t.out = binary.LittleEndian.AppendUint32(t.out, math.Float32bits(r.F32()))
		case avro.Double:
			t.out = binary.LittleEndian.AppendUint64(t.out, math.Float64bits(r.F64()))
		case avro.String, avro.Bytes:
			b := r.Sized("Avro bytes")
			t.long(int64(len(b)))
			t.out = append(t.out, b...)
		}
	case *avro.RecordSchema:
		for _, f := range s.Fields() {
			t.value(f.Type(), depth+1)
		}
	case *avro.EnumSchema:
		i := r.I32()
		if r.Err() == nil && (i < 0 || int(i) >= len(s.Symbols())) {
			r.Failf(wire.ErrMalformed, "Avro enum %s has no symbol %d", s.FullName(), i)
			return
		}
		t.long(int64(i))
	case *avro.FixedSchema:
		t.out = append(t.out, r.Raw(s.Size(), "Avro fixed")...)
	case *avro.UnionSchema:
		i := r.I32()
		if r.Err() == nil && (i < 0 || int(i) >= len(s.Types())) {
			r.Failf(wire.ErrMalformed, "Avro union has no branch %d", i)
			return
		}
		if r.Err() == nil {
			t.long(int64(i))
			t.value(s.Types()[i], depth+1)
		}
	case *avro.ArraySchema:
		t.blocks(depth, func() { t.value(s.Items(), depth+1) })
	case *avro.MapSchema:
		t.blocks(depth, func() {
			t.value(avro.NewPrimitiveSchema(avro.String, nil), depth+1)
			t.value(s.Values(), depth+1)
		})
	default:
		r.Failf(wire.ErrMalformed, "Avro schema type %s", s.Type())
	}
}

// blocks reads varint-counted blocks of items up to a zero count and
// writes one block per block read.
func (t *avroTranscoder) blocks(depth int, item func()) {
	r := t.r
	for r.Err() == nil {
		n, ok := uvarint(r)
		if !ok {
			r.Failf(wire.ErrMalformed, "Avro block count")
			return
		}
		t.long(int64(n))
		if n == 0 {
			return
		}
		for i := uint64(0); i < n && r.Err() == nil; i++ {
			before := r.Pos()
			item()
			if r.Pos() == before {
				if t.empty++; t.empty > maxAvroItems {
					r.Failf(wire.ErrMalformed, "more than %d Avro items that take no bytes", maxAvroItems)
					return
				}
			}
		}
	}
}

// uvarint reads DataOutputEncoder's writeVarLongCount: 7-bit groups, low
// first, of a count that is at most the bytes that remain (or, for items
// that take no bytes, the cap on those).
func uvarint(r *wire.Buf) (uint64, bool) {
	var v uint64
	for shift := 0; shift < 63; shift += 7 {
		c := r.U8()
		if r.Err() != nil {
			return 0, false
		}
		v |= uint64(c&0x7F) << shift
		if c < 0x80 {
			return v, v <= uint64(r.Len())+maxAvroItems
		}
	}
	return 0, false
}
