package sizing

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/hamba/avro/v2"
)

// avroLayout is what an Avro value costs as a Go value on the heap backend.
// Jobs hold Avro state as structs (serializers.Avro[T]), and the toolkit
// does not have T, so the model assumes the struct a code generator writes
// for the schema, as the example jobs declare theirs: int → int32, long →
// int64 (timestamps too, as epoch milliseconds), float → float32, double →
// float64, boolean → bool, string and enum → string, bytes → []byte, fixed
// → [N]byte, array → slice, map → map, a record → a nested struct, a union
// with null → a pointer, any other union → interface.
type avroLayout struct {
	// size and align are those of the Go value; pointers says whether it
	// holds any.
	size, align int
	pointers    bool
	// fixedEnc is the fewest bytes the encoding of the fixed-width part
	// takes (varints at one byte); vars counts the parts stored out of line
	// (string and bytes contents, array and map backing, optional values).
	fixedEnc, vars int
}

// parseAvro parses schema with a cache of its own, so that one savepoint's
// named types never leak into another's.
func parseAvro(schema string) (avro.Schema, error) {
	s, err := avro.ParseWithCache(schema, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("avro schema: %w", err)
	}
	return s, nil
}

func parseAvroLayout(schema string) (avroLayout, error) {
	s, err := parseAvro(schema)
	if err != nil {
		return avroLayout{}, err
	}
	return layoutOf(s, 0), nil
}

// maxAvroDepth stops the walk at recursive schemas (a linked list of
// records), whose deeper levels are out-of-line pointers anyway.
const maxAvroDepth = 32

func layoutOf(s avro.Schema, depth int) avroLayout {
	if depth > maxAvroDepth {
		return avroLayout{size: ptrSize, align: ptrSize, pointers: true, fixedEnc: 1, vars: 1}
	}
	word := func(size int, pointers bool, enc, vars int) avroLayout {
		return avroLayout{size: size, align: ptrSize, pointers: pointers, fixedEnc: enc, vars: vars}
	}
	switch s := s.(type) {
	case *avro.RefSchema:
		return layoutOf(s.Schema(), depth+1)
	case *avro.RecordSchema:
		out := avroLayout{align: 1}
		for _, f := range s.Fields() {
			l := layoutOf(f.Type(), depth+1)
			out.size = alignUp(out.size, l.align) + l.size
			out.align = max(out.align, l.align)
			out.pointers = out.pointers || l.pointers
			out.fixedEnc += l.fixedEnc
			out.vars += l.vars
		}
		out.size = alignUp(out.size, out.align)
		return out
	case *avro.UnionSchema:
		if s.Nullable() && len(s.Types()) == 2 {
			return word(ptrSize, true, 1, 1)
		}
		return word(16, true, 1, 1)
	case *avro.FixedSchema:
		return avroLayout{size: s.Size(), align: 1, fixedEnc: s.Size()}
	case *avro.ArraySchema, *avro.MapSchema:
		return word(24, true, 1, 1)
	case *avro.EnumSchema:
		return word(16, true, 1, 0) // the symbol's string is the schema's own
	}
	switch s.Type() {
	case avro.Null:
		return avroLayout{align: 1}
	case avro.Boolean:
		return avroLayout{size: 1, align: 1, fixedEnc: 1}
	case avro.Int:
		return avroLayout{size: 4, align: 4, fixedEnc: 1}
	case avro.Float:
		return avroLayout{size: 4, align: 4, fixedEnc: 4}
	case avro.Long:
		return word(8, false, 1, 0)
	case avro.Double:
		return word(8, false, 8, 0)
	case avro.String:
		return word(16, true, 1, 1)
	case avro.Bytes:
		return word(24, true, 1, 1)
	}
	return word(16, true, 1, 1)
}

func alignUp(n, a int) int {
	if a <= 1 {
		return n
	}
	return (n + a - 1) / a * a
}

// box estimates the heap cost of one value from the size of its encoding
// alone, as a plan must: the struct in an interface, plus the bytes the
// encoding holds beyond its fixed part, spread over the out-of-line parts.
func (l avroLayout) box(n int) float64 {
	b := alloc(l.size, l.pointers)
	if l.vars > 0 {
		extra := max(0, n-l.fixedEnc)
		b += float64(l.vars) * alloc(int(math.Ceil(float64(extra)/float64(l.vars))), false)
	}
	return b
}

// typicalEncoding guesses the encoded size of a value when a plan gives the
// schema but no size: every out-of-line part about 16 bytes.
func (l avroLayout) typicalEncoding() int { return l.fixedEnc + 15*l.vars }

// avroBoxer is box(v) for Avro values of a savepoint: it walks the encoding
// along the schema and adds up what the generated struct allocates out of
// line (string and byte contents, slices, maps, optional values), exactly.
func avroBoxer(schema string) (boxer, error) {
	s, err := parseAvro(schema)
	if err != nil {
		return nil, err
	}
	l := layoutOf(s, 0)
	return func(v []byte) float64 {
		rest, out, ok := outOfLine(s, v, 0)
		if !ok || len(rest) != 0 {
			return l.box(len(v))
		}
		return alloc(l.size, l.pointers) + out
	}, nil
}

// outOfLine decodes one datum of schema s at the start of b and returns the
// rest of b and the heap bytes its Go value holds outside its own inline
// layout. ok is false for an encoding that does not follow the schema.
func outOfLine(s avro.Schema, b []byte, depth int) (rest []byte, heap float64, ok bool) {
	if depth > maxAvroDepth {
		return nil, 0, false
	}
	switch s := s.(type) {
	case *avro.RefSchema:
		return outOfLine(s.Schema(), b, depth+1)
	case *avro.RecordSchema:
		for _, f := range s.Fields() {
			var h float64
			if b, h, ok = outOfLine(f.Type(), b, depth+1); !ok {
				return nil, 0, false
			}
			heap += h
		}
		return b, heap, true
	case *avro.UnionSchema:
		i, b, ok := avroLong(b)
		types := s.Types()
		if !ok || i < 0 || int(i) >= len(types) {
			return nil, 0, false
		}
		branch := types[i]
		if branch.Type() == avro.Null {
			return b, 0, true
		}
		// A pointer (or an interface) to a value of the branch.
		l := layoutOf(branch, depth+1)
		b, h, ok := outOfLine(branch, b, depth+1)
		return b, alloc(l.size, l.pointers) + h, ok
	case *avro.FixedSchema:
		if len(b) < s.Size() {
			return nil, 0, false
		}
		return b[s.Size():], 0, true
	case *avro.ArraySchema:
		elem := layoutOf(s.Items(), depth+1)
		n, b, h, ok := avroBlocks(b, func(b []byte) ([]byte, float64, bool) { return outOfLine(s.Items(), b, depth+1) })
		return b, h + alloc(int(n)*elem.size, elem.pointers), ok
	case *avro.MapSchema:
		val := layoutOf(s.Values(), depth+1)
		n, b, h, ok := avroBlocks(b, func(b []byte) ([]byte, float64, bool) {
			b, kh, ok := avroBytes(b)
			if !ok {
				return nil, 0, false
			}
			b, vh, ok := outOfLine(s.Values(), b, depth+1)
			return b, kh + vh, ok
		})
		return b, h + mapBytes(float64(n), 16+val.size), ok
	case *avro.EnumSchema:
		_, b, ok := avroLong(b)
		return b, 0, ok
	}
	switch s.Type() {
	case avro.Null:
		return b, 0, true
	case avro.Boolean:
		if len(b) < 1 {
			return nil, 0, false
		}
		return b[1:], 0, true
	case avro.Int, avro.Long:
		_, b, ok := avroLong(b)
		return b, 0, ok
	case avro.Float:
		return avroSkip(b, 4)
	case avro.Double:
		return avroSkip(b, 8)
	case avro.String, avro.Bytes:
		return avroBytes(b)
	}
	return nil, 0, false
}

// avroLong reads a zig-zag varint, which is what encoding/binary's Varint
// reads too.
func avroLong(b []byte) (int64, []byte, bool) {
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, nil, false
	}
	return v, b[n:], true
}

func avroSkip(b []byte, n int) ([]byte, float64, bool) {
	if len(b) < n {
		return nil, 0, false
	}
	return b[n:], 0, true
}

// avroBytes reads a string or bytes and returns its contents' allocation.
func avroBytes(b []byte) ([]byte, float64, bool) {
	n, b, ok := avroLong(b)
	if !ok || n < 0 || n > int64(len(b)) {
		return nil, 0, false
	}
	return b[n:], alloc(int(n), false), true
}

// avroBlocks reads the blocks of an array or map, each a count (negative
// when a byte size follows) and that many items, up to a zero count.
func avroBlocks(b []byte, item func([]byte) ([]byte, float64, bool)) (n int64, rest []byte, heap float64, ok bool) {
	for {
		var c int64
		if c, b, ok = avroLong(b); !ok {
			return 0, nil, 0, false
		}
		if c == 0 {
			return n, b, heap, true
		}
		if c < 0 {
			c = -c
			if _, b, ok = avroLong(b); !ok {
				return 0, nil, 0, false
			}
		}
		if c > int64(len(b)) && c > 1<<16 {
			return 0, nil, 0, false
		}
		for ; c > 0; c-- {
			var h float64
			if b, h, ok = item(b); !ok {
				return 0, nil, 0, false
			}
			heap += h
			n++
		}
	}
}
