package evolve_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/hamba/avro/v2"
)

// datum appends a random Avro datum of schema s, in canonical form (one
// block per array and map, map keys distinct and sorted).
func datum(rng *rand.Rand, dst []byte, s avro.Schema) []byte {
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	switch s := s.(type) {
	case *avro.NullSchema:
		return dst
	case *avro.UnionSchema:
		i := rng.IntN(len(s.Types()))
		return datum(rng, zigzag(dst, int64(i)), s.Types()[i])
	case *avro.RecordSchema:
		for _, f := range s.Fields() {
			dst = datum(rng, dst, f.Type())
		}
		return dst
	case *avro.EnumSchema:
		return zigzag(dst, int64(rng.IntN(len(s.Symbols()))))
	case *avro.FixedSchema:
		for range s.Size() {
			dst = append(dst, byte(rng.Uint32()))
		}
		return dst
	case *avro.ArraySchema:
		n := rng.IntN(4)
		if n > 0 {
			dst = zigzag(dst, int64(n))
			for range n {
				dst = datum(rng, dst, s.Items())
			}
		}
		return append(dst, 0)
	case *avro.MapSchema:
		n := rng.IntN(4)
		if n > 0 {
			dst = zigzag(dst, int64(n))
			for i := range n {
				dst = datum(rng, text(dst, fmt.Sprintf("key-%d", i)), s.Values())
			}
		}
		return append(dst, 0)
	}
	switch s.Type() {
	case avro.Boolean:
		return append(dst, byte(rng.IntN(2)))
	case avro.Int:
		return zigzag(dst, int64(int32(rng.Uint32())>>rng.IntN(32)))
	case avro.Long:
		return zigzag(dst, int64(rng.Uint64())>>rng.IntN(64))
	case avro.Float:
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(rng.NormFloat64()*1e3)))
	case avro.Double:
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(rng.NormFloat64()*1e6))
	case avro.String, avro.Bytes:
		return text(dst, fmt.Sprintf("v-%x", rng.Uint32()))
	}
	panic(fmt.Sprintf("datum: unsupported schema %s", s.Type()))
}

func zigzag(dst []byte, v int64) []byte {
	return binary.AppendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

func text(dst []byte, s string) []byte { return append(zigzag(dst, int64(len(s))), s...) }
