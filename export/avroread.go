package export

import (
	"encoding/binary"
	"math"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"

	"github.com/stateproc/stateproc/internal/avrobin"
)

// An avroNode reads one Avro value of its schema and appends it to its
// builder. The cursor checks every length and count against the bytes that
// remain before anything is appended for it. Nodes do not count depth: a
// column's schema does not recur (see avroCompiler.record), and
// avrobin.ParseSchema bounds how deep it nests.
type avroNode interface {
	read(r *avrobin.Cursor) error
}

// avroDatum is the decoder of a whole Avro-serialized value. It belongs to
// one file's builders, so to one goroutine, and keeps its cursor.
type avroDatum struct {
	root avroNode
	cur  avrobin.Cursor
}

func (d *avroDatum) decode(src []byte) error {
	d.cur.Reset(src)
	err := d.root.read(&d.cur)
	if err == nil {
		err = d.cur.End()
	}
	d.cur.Reset(nil)
	if e, ok := err.(*avrobin.Error); ok {
		return malformed("avro: %s", e.Msg)
	}
	return err
}

type avroNull struct{ b *array.NullBuilder }

func (n avroNull) read(*avrobin.Cursor) error {
	n.b.AppendNull()
	return nil
}

type avroBool struct{ b *array.BooleanBuilder }

func (n avroBool) read(r *avrobin.Cursor) error {
	b, err := r.Bool()
	if err != nil {
		return err
	}
	n.b.Append(b)
	return nil
}

// appender is a builder of fixed-width values of type T: ints, dates and
// times for Avro ints; longs, timestamps and times for Avro longs.
type appender[T any] interface {
	Append(T)
}

type avroInt[T ~int32] struct{ b appender[T] }

func (n avroInt[T]) read(r *avrobin.Cursor) error {
	v, err := r.Int("int")
	if err != nil {
		return err
	}
	n.b.Append(T(v))
	return nil
}

type avroLong[T ~int64] struct{ b appender[T] }

func (n avroLong[T]) read(r *avrobin.Cursor) error {
	v, err := r.Long("long")
	if err != nil {
		return err
	}
	n.b.Append(T(v))
	return nil
}

type avroFloat struct{ b *array.Float32Builder }

func (n avroFloat) read(r *avrobin.Cursor) error {
	b, err := r.Take(4, "float")
	if err != nil {
		return err
	}
	n.b.Append(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	return nil
}

type avroDouble struct{ b *array.Float64Builder }

func (n avroDouble) read(r *avrobin.Cursor) error {
	b, err := r.Take(8, "double")
	if err != nil {
		return err
	}
	n.b.Append(math.Float64frombits(binary.LittleEndian.Uint64(b)))
	return nil
}

type avroBytes struct{ b *array.BinaryBuilder }

func (n avroBytes) read(r *avrobin.Cursor) error {
	b, err := r.Bytes("bytes")
	if err != nil {
		return err
	}
	n.b.Append(b)
	return nil
}

// avroString relies on the cursor's UTF-8 check: Parquet strings must be
// UTF-8, and readers refuse files whose strings are not.
type avroString struct{ b *array.BinaryBuilder }

func (n avroString) read(r *avrobin.Cursor) error {
	b, err := r.String("string")
	if err != nil {
		return err
	}
	n.b.Append(b)
	return nil
}

type avroFixed struct {
	b    *array.FixedSizeBinaryBuilder
	size int
}

func (n *avroFixed) read(r *avrobin.Cursor) error {
	b, err := r.Take(n.size, "fixed")
	if err != nil {
		return err
	}
	n.b.Append(b)
	return nil
}

type avroEnum struct {
	b       *array.BinaryDictionaryBuilder
	symbols [][]byte
}

func (n *avroEnum) read(r *avrobin.Cursor) error {
	i, err := r.Index(len(n.symbols), "enum index")
	if err != nil {
		return err
	}
	return n.b.Append(n.symbols[i])
}

type avroDuration struct {
	b     *array.StructBuilder
	parts [3]*array.Uint32Builder
}

func (n *avroDuration) read(r *avrobin.Cursor) error {
	b, err := r.Take(12, "duration")
	if err != nil {
		return err
	}
	n.b.Append(true)
	for i, p := range n.parts {
		p.Append(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return nil
}

// decimalBytes reads a decimal's big-endian two's-complement bytes: fixed
// size bytes, or length-prefixed bytes when size is 0.
func decimalBytes(r *avrobin.Cursor, size int) ([]byte, error) {
	if size > 0 {
		return r.Take(size, "decimal")
	}
	return r.Bytes("decimal")
}

// signExtend widens a big-endian two's-complement value to width bytes. A
// longer value is accepted when its extra leading bytes only repeat the sign.
func signExtend(dst, b []byte) bool {
	var fill byte
	if len(b) > 0 && b[0]&0x80 != 0 {
		fill = 0xff
	}
	for len(b) > len(dst) {
		if b[0] != fill || b[1]&0x80 != fill&0x80 {
			return false
		}
		b = b[1:]
	}
	pad := len(dst) - len(b)
	for i := range pad {
		dst[i] = fill
	}
	copy(dst[pad:], b)
	return true
}

type avroDecimal128 struct {
	b         *array.Decimal128Builder
	size      int
	precision int32
}

func (n *avroDecimal128) read(r *avrobin.Cursor) error {
	b, err := decimalBytes(r, n.size)
	if err != nil {
		return err
	}
	var w [16]byte
	if !signExtend(w[:], b) {
		return malformed("avro: decimal of %d bytes overflows 128 bits", len(b))
	}
	v := decimal128.New(int64(binary.BigEndian.Uint64(w[:8])), binary.BigEndian.Uint64(w[8:]))
	if !v.FitsInPrecision(n.precision) {
		return malformed("avro: decimal %s has more than the %d digits of its precision", v.BigInt(), n.precision)
	}
	n.b.Append(v)
	return nil
}

type avroDecimal256 struct {
	b         *array.Decimal256Builder
	size      int
	precision int32
}

func (n *avroDecimal256) read(r *avrobin.Cursor) error {
	b, err := decimalBytes(r, n.size)
	if err != nil {
		return err
	}
	var w [32]byte
	if !signExtend(w[:], b) {
		return malformed("avro: decimal of %d bytes overflows 256 bits", len(b))
	}
	v := decimal256.New(binary.BigEndian.Uint64(w[:8]), binary.BigEndian.Uint64(w[8:16]), binary.BigEndian.Uint64(w[16:24]), binary.BigEndian.Uint64(w[24:]))
	if !v.FitsInPrecision(n.precision) {
		return malformed("avro: decimal %s has more than the %d digits of its precision", v.BigInt(), n.precision)
	}
	n.b.Append(v)
	return nil
}

type avroRecord struct {
	b      *array.StructBuilder
	fields []avroNode
}

func (n *avroRecord) read(r *avrobin.Cursor) error {
	n.b.Append(true)
	for _, f := range n.fields {
		if err := f.read(r); err != nil {
			return err
		}
	}
	return nil
}

type avroArray struct {
	b       *array.ListBuilder
	items   avroNode
	itemMin int
}

func (n *avroArray) read(r *avrobin.Cursor) error {
	n.b.Append(true)
	for {
		c, size, err := r.Block(n.itemMin)
		if err != nil || c == 0 {
			return err
		}
		start := r.Pos()
		for range c {
			if err := n.items.read(r); err != nil {
				return err
			}
		}
		if err := r.EndBlock(size, start); err != nil {
			return err
		}
	}
}

type avroMap struct {
	b        *array.MapBuilder
	keys     *array.BinaryBuilder
	values   avroNode
	entryMin int
}

func (n *avroMap) read(r *avrobin.Cursor) error {
	n.b.Append(true)
	mark := r.MapKeys()
	for {
		c, size, err := r.Block(n.entryMin)
		if err != nil {
			return err
		}
		if c == 0 {
			return r.CheckKeys(mark)
		}
		start := r.Pos()
		for range c {
			k, err := r.MapKey()
			if err != nil {
				return err
			}
			n.keys.Append(k)
			if err := n.values.read(r); err != nil {
				return err
			}
		}
		if err := r.EndBlock(size, start); err != nil {
			return err
		}
	}
}

// avroOptional reads a union of null and at most one other branch, value
// (-1 when there is none), into that branch's builder.
type avroOptional struct {
	b        array.Builder
	branches int
	value    int
	inner    avroNode
}

func (n *avroOptional) read(r *avrobin.Cursor) error {
	i, err := r.Index(n.branches, "union index")
	if err != nil {
		return err
	}
	if i == n.value {
		return n.inner.read(r)
	}
	n.b.AppendNull()
	return nil
}

// avroUnion reads any other union into a struct: the field of the branch
// taken holds the value, the others are null, and the null branch makes the
// struct itself null.
type avroUnion struct {
	b *array.StructBuilder
	// branches and fields are by branch index; nil for the null branch.
	branches []avroNode
	fields   []array.Builder
}

func (n *avroUnion) read(r *avrobin.Cursor) error {
	i, err := r.Index(len(n.branches), "union index")
	if err != nil {
		return err
	}
	if n.branches[i] == nil {
		n.b.AppendNull()
		return nil
	}
	n.b.Append(true)
	for j, f := range n.fields {
		if f != nil && j != i {
			f.AppendNull()
		}
	}
	return n.branches[i].read(r)
}
