package export

import (
	"encoding/binary"
	"math"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
)

// maxZeroWidthItems bounds the array items that take no bytes (nulls): their
// count cannot be checked against the input's length, and each costs
// memory. The serializers package sets the same bound.
const maxZeroWidthItems = 1 << 16

// avroReader walks the Avro binary encoding of one datum. Every length and
// count is checked against the bytes that remain before anything is
// appended for it.
type avroReader struct {
	buf       []byte
	pos       int
	zeroItems int
}

// An avroNode reads one Avro value of its schema and appends it to its
// builder.
type avroNode interface {
	read(r *avroReader) error
}

// avroDatum is the decoder of a whole Avro-serialized value.
type avroDatum struct{ root avroNode }

func (d avroDatum) decode(src []byte) error {
	r := avroReader{buf: src}
	if err := d.root.read(&r); err != nil {
		return err
	}
	if r.pos != len(src) {
		return malformed("avro: %d trailing bytes after the datum", len(src)-r.pos)
	}
	return nil
}

func (r *avroReader) truncated(what string) error {
	return malformed("avro: %s truncated at byte %d", what, r.pos)
}

// varint reads the raw (zig-zag) varint of an int (at most 5 bytes, the
// last at most 0x0f) or a long (10, 0x01); anything longer or wider
// overflows.
func (r *avroReader) varint(maxBytes int, lastMax byte, what string) (uint64, error) {
	if r.pos < len(r.buf) && r.buf[r.pos] < 0x80 {
		v := r.buf[r.pos]
		r.pos++
		return uint64(v), nil
	}
	var v uint64
	for i := range maxBytes {
		if r.pos >= len(r.buf) {
			return 0, r.truncated(what)
		}
		b := r.buf[r.pos]
		r.pos++
		if i == maxBytes-1 && b > lastMax {
			break
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, malformed("avro: %s overflows at byte %d", what, r.pos-1)
}

func (r *avroReader) long(what string) (int64, error) {
	u, err := r.varint(10, 0x01, what)
	return int64(u>>1) ^ -int64(u&1), err
}

func (r *avroReader) int(what string) (int32, error) {
	u, err := r.varint(5, 0x0f, what)
	return int32(u>>1) ^ -int32(u&1), err
}

func (r *avroReader) take(n int, what string) ([]byte, error) {
	if n > len(r.buf)-r.pos {
		return nil, malformed("avro: %s of %d bytes at byte %d exceeds the %d bytes that remain", what, n, r.pos, len(r.buf)-r.pos)
	}
	b := r.buf[r.pos : r.pos+n]
	r.pos += n
	return b, nil
}

// bytes reads a length-prefixed string or bytes.
func (r *avroReader) bytes(what string) ([]byte, error) {
	at := r.pos
	n, err := r.long(what + " length")
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(r.buf)-r.pos) {
		return nil, malformed("avro: %s length %d at byte %d does not fit in the %d bytes that remain", what, n, at, len(r.buf)-r.pos)
	}
	return r.take(int(n), what)
}

// block reads the header of an array or map block: its item count and, in
// the negative-count form, its size in bytes (else -1). The count must fit
// in what remains, at itemMin bytes an item.
func (r *avroReader) block(itemMin int) (count int, size int64, err error) {
	c, err := r.long("block count")
	if err != nil {
		return 0, 0, err
	}
	size = -1
	if c < 0 {
		if c == math.MinInt64 {
			return 0, 0, malformed("avro: block count %d out of range", c)
		}
		c = -c
		if size, err = r.long("block size"); err != nil {
			return 0, 0, err
		}
		if size < 0 {
			return 0, 0, malformed("avro: negative block size %d", size)
		}
	}
	if itemMin == 0 {
		if c > int64(maxZeroWidthItems-r.zeroItems) {
			return 0, 0, malformed("avro: more than %d array items that take no bytes", maxZeroWidthItems)
		}
		r.zeroItems += int(c)
	} else if c > int64((len(r.buf)-r.pos)/itemMin) {
		return 0, 0, malformed("avro: block of %d items does not fit in the %d bytes that remain", c, len(r.buf)-r.pos)
	}
	return int(c), size, nil
}

func (r *avroReader) endBlock(size int64, start int) error {
	if size >= 0 && size != int64(r.pos-start) {
		return malformed("avro: block size %d does not match its %d bytes", size, r.pos-start)
	}
	return nil
}

type avroNull struct{ b *array.NullBuilder }

func (n avroNull) read(*avroReader) error {
	n.b.AppendNull()
	return nil
}

type avroBool struct{ b *array.BooleanBuilder }

func (n avroBool) read(r *avroReader) error {
	b, err := r.take(1, "boolean")
	if err != nil {
		return err
	}
	if b[0] > 1 {
		return malformed("avro: boolean byte %#02x at byte %d is neither 0x00 nor 0x01", b[0], r.pos-1)
	}
	n.b.Append(b[0] == 1)
	return nil
}

// appender is a builder of fixed-width values of type T: ints, dates and
// times for Avro ints; longs, timestamps and times for Avro longs.
type appender[T any] interface {
	Append(T)
}

type avroInt[T ~int32] struct{ b appender[T] }

func (n avroInt[T]) read(r *avroReader) error {
	v, err := r.int("int")
	if err != nil {
		return err
	}
	n.b.Append(T(v))
	return nil
}

type avroLong[T ~int64] struct{ b appender[T] }

func (n avroLong[T]) read(r *avroReader) error {
	v, err := r.long("long")
	if err != nil {
		return err
	}
	n.b.Append(T(v))
	return nil
}

type avroFloat struct{ b *array.Float32Builder }

func (n avroFloat) read(r *avroReader) error {
	b, err := r.take(4, "float")
	if err != nil {
		return err
	}
	n.b.Append(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	return nil
}

type avroDouble struct{ b *array.Float64Builder }

func (n avroDouble) read(r *avroReader) error {
	b, err := r.take(8, "double")
	if err != nil {
		return err
	}
	n.b.Append(math.Float64frombits(binary.LittleEndian.Uint64(b)))
	return nil
}

type avroBytes struct{ b *array.BinaryBuilder }

func (n avroBytes) read(r *avroReader) error {
	b, err := r.bytes("bytes")
	if err != nil {
		return err
	}
	n.b.Append(b)
	return nil
}

// avroString checks UTF-8, which hamba does not: Parquet strings must be
// UTF-8, and readers refuse files whose strings are not.
type avroString struct{ b *array.BinaryBuilder }

func (n avroString) read(r *avroReader) error {
	at := r.pos
	b, err := r.bytes("string")
	if err != nil {
		return err
	}
	if !utf8.Valid(b) {
		return malformed("avro: string at byte %d is not valid UTF-8", at)
	}
	n.b.Append(b)
	return nil
}

type avroFixed struct {
	b    *array.FixedSizeBinaryBuilder
	size int
}

func (n *avroFixed) read(r *avroReader) error {
	b, err := r.take(n.size, "fixed")
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

func (n *avroEnum) read(r *avroReader) error {
	i, err := r.int("enum index")
	if err != nil {
		return err
	}
	if i < 0 || int(i) >= len(n.symbols) {
		return malformed("avro: enum index %d out of range [0, %d)", i, len(n.symbols))
	}
	return n.b.Append(n.symbols[i])
}

type avroDuration struct {
	b     *array.StructBuilder
	parts [3]*array.Uint32Builder
}

func (n *avroDuration) read(r *avroReader) error {
	b, err := r.take(12, "duration")
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
func decimalBytes(r *avroReader, size int) ([]byte, error) {
	if size > 0 {
		return r.take(size, "decimal")
	}
	return r.bytes("decimal")
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

func (n *avroDecimal128) read(r *avroReader) error {
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

func (n *avroDecimal256) read(r *avroReader) error {
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

func (n *avroRecord) read(r *avroReader) error {
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

func (n *avroArray) read(r *avroReader) error {
	n.b.Append(true)
	for {
		c, size, err := r.block(n.itemMin)
		if err != nil || c == 0 {
			return err
		}
		start := r.pos
		for range c {
			if err := n.items.read(r); err != nil {
				return err
			}
		}
		if err := r.endBlock(size, start); err != nil {
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

func (n *avroMap) read(r *avroReader) error {
	n.b.Append(true)
	for {
		c, size, err := r.block(n.entryMin)
		if err != nil || c == 0 {
			return err
		}
		start := r.pos
		for range c {
			at := r.pos
			k, err := r.bytes("map key")
			if err != nil {
				return err
			}
			if !utf8.Valid(k) {
				return malformed("avro: map key at byte %d is not valid UTF-8", at)
			}
			n.keys.Append(k)
			if err := n.values.read(r); err != nil {
				return err
			}
		}
		if err := r.endBlock(size, start); err != nil {
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

func (n *avroOptional) read(r *avroReader) error {
	i, err := r.int("union index")
	if err != nil {
		return err
	}
	switch {
	case i < 0 || int(i) >= n.branches:
		return malformed("avro: union index %d out of range [0, %d)", i, n.branches)
	case int(i) == n.value:
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

func (n *avroUnion) read(r *avroReader) error {
	i, err := r.int("union index")
	if err != nil {
		return err
	}
	if i < 0 || int(i) >= len(n.branches) {
		return malformed("avro: union index %d out of range [0, %d)", i, len(n.branches))
	}
	if n.branches[i] == nil {
		n.b.AppendNull()
		return nil
	}
	n.b.Append(true)
	for j, f := range n.fields {
		if f != nil && j != int(i) {
			f.AppendNull()
		}
	}
	return n.branches[i].read(r)
}
