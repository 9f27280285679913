package snapshotfmt

import (
	"encoding/binary"
	"unicode/utf8"
)

// decoder reads the fields of an in-memory buffer with every length checked
// against what remains. Its first error sticks: later reads return zero
// values and change nothing, so a decoding function can read a whole
// structure and look at err once, and the error keeps the offset of the
// field that failed.
type decoder struct {
	buf  []byte
	off  int
	base int64 // file offset of buf[0], so that errors name file offsets
	err  error
	// errOff is the file offset of the field that failed.
	errOff int64
	// more counts the bytes that follow buf in what it is a window onto
	// (a streamed block's payload), for the checks of counts and lengths.
	more int64
}

func newDecoder(buf []byte, base int64) *decoder { return &decoder{buf: buf, base: base} }

func (d *decoder) remaining() int { return len(d.buf) - d.off }

// left is what remains of the whole that buf is a window onto.
func (d *decoder) left() int64 { return int64(d.remaining()) + d.more }

// pos is the file offset of the next byte.
func (d *decoder) pos() int64 { return d.base + int64(d.off) }

// failAt records err for the field that starts at buffer offset start.
func (d *decoder) failAt(start int, err error) {
	if d.err == nil {
		d.err = err
		d.errOff = d.base + int64(start)
		d.off = len(d.buf) // nothing more is read after an error
	}
}

func (d *decoder) failf(start int, format string, args ...any) {
	d.failAt(start, corruptf(format, args...))
}

// need checks that n more bytes remain for a field of fixed width.
func (d *decoder) need(n int, what string) bool {
	if d.err != nil {
		return false
	}
	if d.remaining() < n {
		d.failf(d.off, "truncated: %s needs %d bytes, %d remain", what, n, d.left())
		return false
	}
	return true
}

func (d *decoder) u8(what string) uint8 {
	if !d.need(1, what) {
		return 0
	}
	v := d.buf[d.off]
	d.off++
	return v
}

func (d *decoder) u64(what string) uint64 {
	if !d.need(8, what) {
		return 0
	}
	v := binary.BigEndian.Uint64(d.buf[d.off:])
	d.off += 8
	return v
}

func (d *decoder) i64(what string) int64 { return int64(d.u64(what)) }

// uvarint reads a LEB128 integer in its shortest form.
func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	if d.off < len(d.buf) && d.buf[d.off] < 0x80 {
		v := d.buf[d.off]
		d.off++
		return uint64(v)
	}
	v, n := binary.Uvarint(d.buf[d.off:])
	switch {
	case n == 0:
		d.failf(d.off, "truncated: %s: uvarint runs past the end", what)
		return 0
	case n < 0:
		d.failf(d.off, "%s: uvarint overflows 64 bits", what)
		return 0
	case d.buf[d.off+n-1] == 0:
		// A last byte of zero adds nothing: a shorter encoding exists.
		d.failf(d.off, "%s: non-minimal uvarint", what)
		return 0
	}
	d.off += n
	return v
}

// varint reads a signed integer as encoding/binary's AppendVarint writes
// it: zigzag, then a uvarint in its shortest form.
func (d *decoder) varint(what string) int64 {
	u := d.uvarint(what)
	return int64(u>>1) ^ -int64(u&1)
}

// uvarintMax reads a uvarint that must not exceed limit.
func (d *decoder) uvarintMax(what string, limit uint64) uint64 {
	start := d.off
	v := d.uvarint(what)
	if v > limit {
		d.failf(start, "%s %d above its limit %d", what, v, limit)
		return 0
	}
	return v
}

// count reads the number of elements that follow. Each element takes at
// least one byte, so a count above the bytes that remain is a bad length.
func (d *decoder) count(what string) int {
	start := d.off
	n := d.uvarint(what)
	if d.err == nil && n > uint64(d.left()) {
		d.failf(start, "%s: count %d beyond the %d bytes remaining", what, n, d.left())
		return 0
	}
	return int(n)
}

// short reads a length-prefixed byte string in the common case, a one-byte
// length that fits in what remains, and is small enough to be inlined into
// the per-entry loops. In every other case, an earlier error included (an
// error consumes the buffer), it reads nothing and returns false: the
// caller then calls bytes, which checks everything and says what is wrong.
func (d *decoder) short() ([]byte, bool) {
	off := d.off
	if off >= len(d.buf) {
		return nil, false
	}
	n := int(d.buf[off])
	if n >= 0x80 || n >= len(d.buf)-off {
		return nil, false
	}
	d.off = off + 1 + n
	return d.buf[off+1 : off+1+n : off+1+n], true
}

// bytes reads a length-prefixed byte string. The result aliases the buffer
// and has no spare capacity, so appending to it cannot overwrite what
// follows.
func (d *decoder) bytes(what string) []byte {
	start := d.off
	n := d.uvarint(what)
	if d.err != nil {
		return nil
	}
	if n > uint64(d.remaining()) {
		d.failf(start, "%s: length %d beyond the %d bytes remaining", what, n, d.left())
		return nil
	}
	b := d.buf[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return b
}

func (d *decoder) str(what string) string {
	start := d.off
	b := d.bytes(what)
	if d.err == nil && !utf8.Valid(b) {
		d.failf(start, "%s is not valid UTF-8", what)
		return ""
	}
	return string(b)
}

// end checks that the buffer was consumed exactly.
func (d *decoder) end(what string) {
	if d.err == nil && d.remaining() != 0 {
		d.failf(d.off, "%d trailing bytes after %s", d.remaining(), what)
	}
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}
