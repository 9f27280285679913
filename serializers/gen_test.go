package serializers

import (
	"math/rand/v2"

	"github.com/hamba/avro/v2"

	"github.com/stateproc/stateproc/internal/avrobin"
)

// randomDatum writes a random valid datum of the schema in canonical form,
// as test input that does not come from hamba.
func randomDatum(rng *rand.Rand, dst []byte, s avro.Schema, depth int) []byte {
	s = avrobin.Deref(s)
	switch s := s.(type) {
	case *avro.NullSchema:
		return dst
	case *avro.UnionSchema:
		types := s.Types()
		i := rng.IntN(len(types))
		if depth > 4 {
			i = 0 // stop recursive schemas: they put null first
		}
		return randomDatum(rng, appendLong(dst, int64(i)), types[i], depth+1)
	case *avro.RecordSchema:
		for _, f := range s.Fields() {
			dst = randomDatum(rng, dst, f.Type(), depth+1)
		}
		return dst
	case *avro.EnumSchema:
		return appendLong(dst, int64(rng.IntN(len(s.Symbols()))))
	case *avro.FixedSchema:
		for range s.Size() {
			dst = append(dst, byte(rng.Uint32()))
		}
		return dst
	case *avro.ArraySchema:
		n := rng.IntN(4)
		if n > 0 {
			dst = appendLong(dst, int64(n))
			for range n {
				dst = randomDatum(rng, dst, s.Items(), depth+1)
			}
		}
		return append(dst, 0)
	case *avro.MapSchema:
		n := rng.IntN(4)
		if n > 0 {
			dst = appendLong(dst, int64(n))
			for i := range n {
				// Distinct keys in sorted order.
				dst = appendString(dst, string(rune('a'+i))+randomString(rng))
				dst = randomDatum(rng, dst, s.Values(), depth+1)
			}
		}
		return append(dst, 0)
	}
	switch s.Type() {
	case avro.Boolean:
		return append(dst, byte(rng.IntN(2)))
	case avro.Int:
		return appendLong(dst, int64(int32(rng.Uint32())>>rng.IntN(32)))
	case avro.Long:
		return appendLong(dst, int64(rng.Uint64())>>rng.IntN(64))
	case avro.Float:
		return append(dst, byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.IntN(0x7f)))
	case avro.Double:
		for range 7 {
			dst = append(dst, byte(rng.Uint32()))
		}
		return append(dst, byte(rng.IntN(0x7f)))
	case avro.String:
		return appendString(dst, randomString(rng))
	case avro.Bytes:
		if logical(s) != "" { // a decimal: its shortest two's complement form
			return appendString(dst, string([]byte{byte(rng.IntN(0x80))}))
		}
		return appendString(dst, randomString(rng)+"\x00\xff")
	}
	panic("randomDatum: " + string(s.Type()))
}

func randomString(rng *rand.Rand) string {
	const letters = "abcdefghijklmnopqrstuvwxyzé✓"
	r := []rune(letters)
	b := make([]rune, rng.IntN(6))
	for i := range b {
		b[i] = r[rng.IntN(len(r))]
	}
	return string(b)
}
