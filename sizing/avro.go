package sizing

import (
	"fmt"
	"math"

	"github.com/hamba/avro/v2"

	"github.com/stateproc/stateproc/internal/avrobin"
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

// parseAvro parses schema with the bounds every reader of the toolkit
// applies.
func parseAvro(schema string) (avro.Schema, error) {
	s, _, err := avrobin.ParseSchema(schema)
	if err != nil {
		return nil, fmt.Errorf("avro %w", err)
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

func layoutOf(s avro.Schema, depth int) avroLayout { return layouts{}.of(s, depth) }

// layouts holds the layouts of the records met, by depth: a record used
// many times (each of a record's fields a record of the same type) is laid
// out once, not once per path to it.
type layouts map[layoutKey]avroLayout

type layoutKey struct {
	s     *avro.RecordSchema
	depth int
}

func (m layouts) of(s avro.Schema, depth int) avroLayout {
	if depth > maxAvroDepth {
		return avroLayout{size: ptrSize, align: ptrSize, pointers: true, fixedEnc: 1, vars: 1}
	}
	word := func(size int, pointers bool, enc, vars int) avroLayout {
		return avroLayout{size: size, align: ptrSize, pointers: pointers, fixedEnc: enc, vars: vars}
	}
	switch s := s.(type) {
	case *avro.RefSchema:
		return m.of(s.Schema(), depth+1)
	case *avro.RecordSchema:
		key := layoutKey{s, depth}
		if l, ok := m[key]; ok {
			return l
		}
		out := avroLayout{align: 1}
		for _, f := range s.Fields() {
			l := m.of(f.Type(), depth+1)
			out.size = alignUp(out.size, l.align) + l.size
			out.align = max(out.align, l.align)
			out.pointers = out.pointers || l.pointers
			out.fixedEnc += l.fixedEnc
			out.vars += l.vars
		}
		out.size = alignUp(out.size, out.align)
		m[key] = out
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
	w := &heapWalk{minSizes: map[avro.Schema]int{}, layouts: layouts{}}
	return func(v []byte) float64 {
		w.Reset(v)
		out, ok := w.outOfLine(s, 0)
		if !ok || w.End() != nil {
			return l.box(len(v))
		}
		return alloc(l.size, l.pointers) + out
	}, nil
}

// heapWalk reads one datum and adds up the heap bytes its Go value holds
// outside its own inline layout. A boxer's walk is used by one goroutine.
type heapWalk struct {
	avrobin.Cursor
	// minSizes holds avrobin.MinSize of the array items and map values met.
	minSizes map[avro.Schema]int
	layouts  layouts
}

func (w *heapWalk) minSize(s avro.Schema) int {
	n, ok := w.minSizes[s]
	if !ok {
		n = avrobin.MinSize(s)
		w.minSizes[s] = n
	}
	return n
}

// outOfLine decodes one datum of schema s and returns the heap bytes its Go
// value holds outside its own inline layout. ok is false for an encoding
// that does not follow the schema.
func (w *heapWalk) outOfLine(s avro.Schema, depth int) (heap float64, ok bool) {
	if avrobin.CheckDepth(depth) != nil {
		return 0, false
	}
	switch s := avrobin.Deref(s).(type) {
	case *avro.RecordSchema:
		for _, f := range s.Fields() {
			h, ok := w.outOfLine(f.Type(), depth+1)
			if !ok {
				return 0, false
			}
			heap += h
		}
		return heap, true
	case *avro.UnionSchema:
		types := s.Types()
		i, err := w.Index(len(types), "union index")
		if err != nil {
			return 0, false
		}
		branch := types[i]
		if branch.Type() == avro.Null {
			return 0, true
		}
		// A pointer (or an interface) to a value of the branch.
		l := w.layouts.of(branch, depth+1)
		h, ok := w.outOfLine(branch, depth+1)
		return alloc(l.size, l.pointers) + h, ok
	case *avro.FixedSchema:
		_, err := w.Take(s.Size(), "fixed")
		return 0, err == nil
	case *avro.ArraySchema:
		elem := w.layouts.of(s.Items(), depth+1)
		n, h, ok := w.blocks(w.minSize(s.Items()), func() (float64, bool) { return w.outOfLine(s.Items(), depth+1) })
		return h + alloc(n*elem.size, elem.pointers), ok
	case *avro.MapSchema:
		val := w.layouts.of(s.Values(), depth+1)
		n, h, ok := w.blocks(1+w.minSize(s.Values()), func() (float64, bool) {
			k, err := w.String("map key")
			if err != nil {
				return 0, false
			}
			vh, ok := w.outOfLine(s.Values(), depth+1)
			return alloc(len(k), false) + vh, ok
		})
		return h + mapBytes(float64(n), 16+val.size), ok
	case *avro.EnumSchema:
		_, err := w.Int("enum index")
		return 0, err == nil
	}
	var err error
	switch s.Type() {
	case avro.Null:
	case avro.Boolean:
		_, err = w.Bool()
	case avro.Int:
		_, err = w.Int("int")
	case avro.Long:
		_, err = w.Long("long")
	case avro.Float:
		_, err = w.Take(4, "float")
	case avro.Double:
		_, err = w.Take(8, "double")
	case avro.String, avro.Bytes:
		var b []byte
		if b, err = w.Bytes("bytes"); err == nil {
			return alloc(len(b), false), true
		}
	default:
		return 0, false
	}
	return 0, err == nil
}

// blocks reads the blocks of an array or map, each item by item, and
// returns the number of items and their heap bytes.
func (w *heapWalk) blocks(itemMin int, item func() (float64, bool)) (n int, heap float64, ok bool) {
	for {
		c, size, err := w.Block(itemMin)
		if err != nil {
			return 0, 0, false
		}
		if c == 0 {
			return n, heap, true
		}
		start := w.Pos()
		for range c {
			h, ok := item()
			if !ok {
				return 0, 0, false
			}
			heap += h
		}
		if w.EndBlock(size, start) != nil {
			return 0, 0, false
		}
		n += c
	}
}
