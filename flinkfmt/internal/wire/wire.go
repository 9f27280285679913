package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf16"
)

// ErrShort is wrapped by every error about a value that runs past the end.
var ErrShort = errors.New("truncated")

// ErrMalformed is wrapped by every error about bytes that cannot be the
// encoding they should be.
var ErrMalformed = errors.New("malformed")

// Error is a failed read at an offset of a Buf.
type Error struct {
	// Offset is where the failing value starts, counted from the start of the
	// slice plus the Buf's base.
	Offset int64
	What   string
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("offset %d: %s: %v", e.Offset, e.What, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Buf reads values from a slice. The zero value is an empty Buf.
type Buf struct {
	b    []byte
	off  int
	base int64
	err  error
}

// New returns a Buf over b whose offsets are reported as base+i.
func New(b []byte, base int64) *Buf { return &Buf{b: b, base: base} }

// Reset makes r read b from its start, with offsets reported as base+i,
// and clears its error: a parser keeps one Buf for every value it walks
// rather than allocating one each.
func (r *Buf) Reset(b []byte, base int64) { *r = Buf{b: b, base: base} }

// Err returns the first error.
func (r *Buf) Err() error { return r.err }

// Offset is the position of the next byte, including the base.
func (r *Buf) Offset() int64 { return r.base + int64(r.off) }

// Pos is the position of the next byte within the slice.
func (r *Buf) Pos() int { return r.off }

// Len is the number of unread bytes.
func (r *Buf) Len() int { return len(r.b) - r.off }

// Rest returns the unread bytes without consuming them.
func (r *Buf) Rest() []byte { return r.b[r.off:] }

// Bytes returns the whole underlying slice.
func (r *Buf) Bytes() []byte { return r.b }

// Seek moves to position pos within the slice.
func (r *Buf) Seek(pos int) {
	if r.err == nil && (pos < 0 || pos > len(r.b)) {
		r.Failf(ErrShort, "seek to %d of %d bytes", pos, len(r.b))
		return
	}
	if r.err == nil {
		r.off = pos
	}
}

// Fail records err at the current offset unless an error is recorded
// already.
func (r *Buf) Fail(what string, err error) {
	if r.err == nil {
		r.err = &Error{Offset: r.Offset(), What: what, Err: err}
	}
}

// Failf records a formatted error wrapping kind.
func (r *Buf) Failf(kind error, format string, args ...any) {
	r.Fail(fmt.Sprintf(format, args...), kind)
}

func (r *Buf) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.Fail(what, fmt.Errorf("%w: needs %d bytes, %d remain", ErrShort, n, len(r.b)-r.off))
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

// U8 reads one byte.
func (r *Buf) U8() byte {
	if p := r.take(1, "byte"); p != nil {
		return p[0]
	}
	return 0
}

// Bool reads a boolean byte; anything but 0 is true, as in Java.
func (r *Buf) Bool() bool { return r.U8() != 0 }

// U16 reads a big-endian uint16.
func (r *Buf) U16() uint16 {
	if p := r.take(2, "u16"); p != nil {
		return binary.BigEndian.Uint16(p)
	}
	return 0
}

// I32 reads a big-endian int32.
func (r *Buf) I32() int32 {
	if p := r.take(4, "i32"); p != nil {
		return int32(binary.BigEndian.Uint32(p))
	}
	return 0
}

// I64 reads a big-endian int64.
func (r *Buf) I64() int64 {
	if p := r.take(8, "i64"); p != nil {
		return int64(binary.BigEndian.Uint64(p))
	}
	return 0
}

// F32 reads IEEE-754 bits as a float32.
func (r *Buf) F32() float32 { return math.Float32frombits(uint32(r.I32())) }

// F64 reads IEEE-754 bits as a float64.
func (r *Buf) F64() float64 { return math.Float64frombits(uint64(r.I64())) }

// Raw reads n bytes, aliasing the slice.
func (r *Buf) Raw(n int, what string) []byte { return r.take(n, what) }

// Count reads an int32 count of items that each take at least minSize
// bytes, refusing a negative count or one that cannot fit in what remains.
// It returns 0 after an error.
func (r *Buf) Count(what string, minSize int) int { return r.count(what, "", minSize) }

// count is Count of what+suffix, which are joined only for an error: Sized
// reads a length for every key and value of a key group.
func (r *Buf) count(what, suffix string, minSize int) int {
	start := r.Offset()
	n := r.I32()
	if r.err != nil {
		return 0
	}
	if n < 0 {
		r.err = &Error{Offset: start, What: what + suffix, Err: fmt.Errorf("%w: negative count %d", ErrMalformed, n)}
		return 0
	}
	if minSize > 0 && int64(n)*int64(minSize) > int64(r.Len()) {
		r.err = &Error{Offset: start, What: what + suffix, Err: fmt.Errorf("%w: count %d needs at least %d bytes, %d remain", ErrShort, n, int64(n)*int64(minSize), r.Len())}
		return 0
	}
	return int(n)
}

// Sized reads an int32 length and that many bytes.
func (r *Buf) Sized(what string) []byte {
	// Every key and value of a canonical key group is read here: a length
	// that fits is taken at once, anything else goes the checked way,
	// which reports it.
	if r.err == nil && len(r.b)-r.off >= 4 {
		n := int(int32(binary.BigEndian.Uint32(r.b[r.off:])))
		if start := r.off + 4; n >= 0 && n <= len(r.b)-start {
			r.off = start + n
			return r.b[start:r.off]
		}
	}
	n := r.count(what, " length", 1)
	return r.take(n, what)
}

// UTF reads DataOutput.writeUTF: a u16 byte length and modified UTF-8.
func (r *Buf) UTF(what string) string {
	start := r.Offset()
	n := int(r.U16())
	p := r.take(n, what)
	if r.err != nil {
		return ""
	}
	s, err := DecodeModifiedUTF8(p)
	if err != nil {
		r.err = &Error{Offset: start, What: what, Err: err}
	}
	return s
}

// DecodeModifiedUTF8 decodes Java's modified UTF-8 (NUL as C0 80,
// supplementary characters as surrogate pairs of three bytes each).
func DecodeModifiedUTF8(p []byte) (string, error) {
	ascii := true
	for _, c := range p {
		if c == 0 || c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return string(p), nil
	}
	units := make([]uint16, 0, len(p))
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c != 0 && c < 0x80:
			units = append(units, uint16(c))
			i++
		case c&0xE0 == 0xC0:
			if i+1 >= len(p) || p[i+1]&0xC0 != 0x80 {
				return "", fmt.Errorf("%w: bad modified UTF-8 at byte %d", ErrMalformed, i)
			}
			units = append(units, uint16(c&0x1F)<<6|uint16(p[i+1]&0x3F))
			i += 2
		case c&0xF0 == 0xE0:
			if i+2 >= len(p) || p[i+1]&0xC0 != 0x80 || p[i+2]&0xC0 != 0x80 {
				return "", fmt.Errorf("%w: bad modified UTF-8 at byte %d", ErrMalformed, i)
			}
			units = append(units, uint16(c&0x0F)<<12|uint16(p[i+1]&0x3F)<<6|uint16(p[i+2]&0x3F))
			i += 3
		default:
			return "", fmt.Errorf("%w: bad modified UTF-8 at byte %d", ErrMalformed, i)
		}
	}
	return UTF16String(units), nil
}

// UTF16String converts UTF-16 code units to a Go string; an unpaired
// surrogate becomes U+FFFD, as it cannot be represented in UTF-8.
func UTF16String(units []uint16) string {
	var sb strings.Builder
	sb.Grow(len(units))
	for i := 0; i < len(units); i++ {
		u := rune(units[i])
		if utf16.IsSurrogate(u) && i+1 < len(units) {
			if d := utf16.DecodeRune(u, rune(units[i+1])); d != 0xFFFD {
				sb.WriteRune(d)
				i++
				continue
			}
		}
		sb.WriteRune(u)
	}
	return sb.String()
}

// maxStringUnits bounds one StringValue: Java strings hold at most 2^31-1
// UTF-16 units, and each takes at least one byte, so the bytes that remain
// bound it first.
const maxStringUnits = math.MaxInt32

// StringValue reads Flink's StringValue.writeString encoding: length+1 as a
// 7-bit varint, low group first (0 is null), then each UTF-16 unit as its
// own varint. ok is false for null.
func (r *Buf) StringValue() (s string, ok bool) {
	start := r.Offset()
	n, vok := r.varint()
	if !vok {
		if r.err == nil {
			r.err = &Error{Offset: start, What: "string length", Err: fmt.Errorf("%w: varint longer than 5 bytes", ErrMalformed)}
		}
		return "", false
	}
	if n == 0 {
		return "", false
	}
	n--
	if n > maxStringUnits || int64(n) > int64(r.Len()) {
		r.Fail("string", fmt.Errorf("%w: %d UTF-16 units, %d bytes remain", ErrShort, n, r.Len()))
		return "", false
	}
	// Fast path: all units below 0x80 are single bytes, as ASCII is.
	p := r.b[r.off : r.off+int(n)]
	if isASCII(p) {
		r.off += int(n)
		return string(p), true
	}
	units := make([]uint16, 0, n)
	for i := uint32(0); i < n; i++ {
		u, vok := r.varint()
		if !vok || u > 0xFFFF {
			r.Fail("string character", fmt.Errorf("%w: UTF-16 unit out of range", ErrMalformed))
			return "", false
		}
		units = append(units, uint16(u))
	}
	return UTF16String(units), true
}

// AppendStringValue appends the UTF-8 of what StringValue reads to dst,
// without building a string for ASCII text; ok is false for null.
func (r *Buf) AppendStringValue(dst []byte) (out []byte, ok bool) {
	at := r.off
	if n, vok := r.varint(); vok && n > 0 && int64(n-1) <= int64(r.Len()) {
		if p := r.b[r.off : r.off+int(n-1)]; isASCII(p) {
			r.off += int(n - 1)
			return append(dst, p...), true
		}
	}
	// Anything else, an error included, as StringValue has it.
	r.off = at
	s, ok := r.StringValue()
	return append(dst, s...), ok
}

// SkipStringValue steps over what StringValue reads, checking it as
// StringValue does, without building the string: finding where a key ends
// must not cost an allocation.
func (r *Buf) SkipStringValue() {
	if n, ok := StringValueLen(r.b[r.off:]); ok && r.err == nil {
		r.off += n
		return
	}
	// What does not read takes the way that reports it.
	start := r.Offset()
	n, vok := r.varint()
	if !vok {
		if r.err == nil {
			r.err = &Error{Offset: start, What: "string length", Err: fmt.Errorf("%w: varint longer than 5 bytes", ErrMalformed)}
		}
		return
	}
	if n == 0 {
		return
	}
	n--
	if n > maxStringUnits || int64(n) > int64(r.Len()) {
		r.Fail("string", fmt.Errorf("%w: %d UTF-16 units, %d bytes remain", ErrShort, n, r.Len()))
		return
	}
	if isASCII(r.b[r.off : r.off+int(n)]) {
		r.off += int(n)
		return
	}
	for i := uint32(0); i < n; i++ {
		u, vok := r.varint()
		if !vok || u > 0xFFFF {
			r.Fail("string character", fmt.Errorf("%w: UTF-16 unit out of range", ErrMalformed))
			return
		}
	}
}

// StringValueLen returns how many bytes the StringValue at the front of b
// takes, and true, when StringValue reads it without an error; false
// otherwise, and then only StringValue tells what is wrong. It is the
// check of a key that a parser of a key group's bytes makes without a Buf.
func StringValueLen(b []byte) (int, bool) {
	n, i, ok := varintAt(b, 0)
	if !ok {
		return 0, false
	}
	if n == 0 {
		return i, true
	}
	n--
	if n > maxStringUnits || int64(n) > int64(len(b)-i) {
		return 0, false
	}
	if isASCII(b[i : i+int(n)]) {
		return i + int(n), true
	}
	for range n {
		var u uint32
		if u, i, ok = varintAt(b, i); !ok || u > 0xFFFF {
			return 0, false
		}
	}
	return i, true
}

// varintAt is varint over b from i: the value, where it ends, and whether
// it is one.
func varintAt(b []byte, i int) (uint32, int, bool) {
	var v uint32
	for shift := 0; shift < 35 && i < len(b); shift += 7 {
		c := b[i]
		i++
		v |= uint32(c&0x7F) << shift
		if c < 0x80 {
			if shift == 28 && c > 0x0F {
				return 0, i, false
			}
			return v, i, true
		}
	}
	return 0, i, false
}

// isASCII looks at eight bytes at a time: every key and map key of a
// canonical key group goes through it.
func isASCII(p []byte) bool {
	for len(p) >= 8 {
		if binary.LittleEndian.Uint64(p)&0x8080808080808080 != 0 {
			return false
		}
		p = p[8:]
	}
	for _, c := range p {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// varint reads up to five 7-bit groups, low first.
func (r *Buf) varint() (uint32, bool) {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.U8()
		if r.err != nil {
			return 0, false
		}
		v |= uint32(c&0x7F) << shift
		if c < 0x80 {
			if shift == 28 && c > 0x0F {
				return 0, false
			}
			return v, true
		}
	}
	return 0, false
}
