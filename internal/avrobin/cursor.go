package avrobin

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"
)

const (
	// MaxDepth bounds how deep a datum nests: a record's fields, an array's
	// items, a map's values and a union's branch are each one level below
	// their parent, the datum itself is at depth 0. Hostile input then
	// cannot exhaust the stack of a recursive reader.
	MaxDepth = 1000
	// MaxZeroWidthItems bounds the array items that take no bytes (nulls,
	// records of nulls) in one datum: their count cannot be checked against
	// the input's length, and each costs its reader memory.
	MaxZeroWidthItems = 1 << 16
)

// Error is a datum that does not follow its schema. Msg says what is wrong
// and at which byte of the datum.
type Error struct {
	Msg string
}

func (e *Error) Error() string { return e.Msg }

func errorf(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

// CheckDepth fails when depth is deeper than MaxDepth.
func CheckDepth(depth int) error {
	if depth > MaxDepth {
		return errorf("datum nests deeper than %d levels", MaxDepth)
	}
	return nil
}

// A Cursor reads one datum's encoding from the front. The zero Cursor reads
// nothing; Reset gives it a datum. Byte positions in errors count from the
// start of the datum.
type Cursor struct {
	buf       []byte
	pos       int
	zeroItems int
	// keys is a stack of the map keys being checked for repeats, as
	// positions in buf.
	keys []keySpan
}

type keySpan struct{ start, end int }

// Reset makes c read b from its start.
func (c *Cursor) Reset(b []byte) {
	c.buf, c.pos, c.zeroItems, c.keys = b, 0, 0, c.keys[:0]
}

// Pos is the number of bytes read so far.
func (c *Cursor) Pos() int { return c.pos }

// Remaining is the number of bytes not read yet.
func (c *Cursor) Remaining() int { return len(c.buf) - c.pos }

// End fails unless the whole datum has been read.
func (c *Cursor) End() error {
	if c.pos != len(c.buf) {
		return errorf("%d trailing bytes after the datum", len(c.buf)-c.pos)
	}
	return nil
}

// truncated and the other errors take what a value is in two parts, so
// that the hot paths build no string: "string" and " length".
func (c *Cursor) truncated(what, part string) error {
	return errorf("%s%s truncated at byte %d", what, part, c.pos)
}

// Long reads a zig-zag varint of at most 64 bits; what names it in errors.
func (c *Cursor) Long(what string) (int64, error) {
	if c.pos < len(c.buf) && c.buf[c.pos] < 0x80 {
		b := c.buf[c.pos]
		c.pos++
		return int64(b>>1) ^ -int64(b&1), nil
	}
	return c.longSlow(what, "")
}

func (c *Cursor) longSlow(what, part string) (int64, error) {
	u, err := c.varint(10, 0x01, what, part)
	return int64(u>>1) ^ -int64(u&1), err
}

// Int reads a zig-zag varint of at most 32 bits.
func (c *Cursor) Int(what string) (int32, error) {
	if c.pos < len(c.buf) && c.buf[c.pos] < 0x80 {
		b := c.buf[c.pos]
		c.pos++
		return int32(b>>1) ^ -int32(b&1), nil
	}
	u, err := c.varint(5, 0x0f, what, "")
	return int32(u>>1) ^ -int32(u&1), err
}

// varint reads the raw varint of an int (maxBytes 5, the last byte at most
// 0x0f) or a long (10, 0x01); longer or wider encodings overflow.
func (c *Cursor) varint(maxBytes int, lastMax byte, what, part string) (uint64, error) {
	var v uint64
	for i := range maxBytes {
		if c.pos >= len(c.buf) {
			return 0, c.truncated(what, part)
		}
		b := c.buf[c.pos]
		c.pos++
		if i == maxBytes-1 && b > lastMax {
			break
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, errorf("%s%s overflows at byte %d", what, part, c.pos-1)
}

// Take reads n bytes, a fixed or a float; the slice aliases the datum.
func (c *Cursor) Take(n int, what string) ([]byte, error) {
	if n > len(c.buf)-c.pos {
		return nil, errorf("%s of %d bytes at byte %d exceeds the %d bytes that remain", what, n, c.pos, len(c.buf)-c.pos)
	}
	b := c.buf[c.pos : c.pos+n : c.pos+n]
	c.pos += n
	return b, nil
}

// Bytes reads a length-prefixed bytes value.
func (c *Cursor) Bytes(what string) ([]byte, error) {
	at := c.pos
	var n int64
	if c.pos < len(c.buf) && c.buf[c.pos] < 0x80 {
		b := c.buf[c.pos]
		c.pos++
		n = int64(b>>1) ^ -int64(b&1)
	} else {
		var err error
		if n, err = c.longSlow(what, " length"); err != nil {
			return nil, err
		}
	}
	if n < 0 || n > int64(len(c.buf)-c.pos) {
		return nil, errorf("%s length %d at byte %d does not fit in the %d bytes that remain", what, n, at, len(c.buf)-c.pos)
	}
	b := c.buf[c.pos : c.pos+int(n) : c.pos+int(n)]
	c.pos += int(n)
	return b, nil
}

// String reads a length-prefixed string, which must be UTF-8.
func (c *Cursor) String(what string) ([]byte, error) {
	at := c.pos
	b, err := c.Bytes(what)
	if err == nil && !utf8.Valid(b) {
		return nil, errorf("%s at byte %d is not valid UTF-8", what, at)
	}
	return b, err
}

// Bool reads a boolean, one byte 0x00 or 0x01.
func (c *Cursor) Bool() (bool, error) {
	if c.pos >= len(c.buf) {
		return false, c.truncated("boolean", "")
	}
	b := c.buf[c.pos]
	if b > 1 {
		return false, errorf("boolean byte %#02x at byte %d is neither 0x00 nor 0x01", b, c.pos)
	}
	c.pos++
	return b == 1, nil
}

// Index reads an enum symbol's or a union branch's index, which must be in
// [0, n).
func (c *Cursor) Index(n int, what string) (int, error) {
	i, err := c.Int(what)
	if err != nil {
		return 0, err
	}
	if i < 0 || int(i) >= n {
		return 0, errorf("%s %d out of range [0, %d)", what, i, n)
	}
	return int(i), nil
}

// Block reads the header of an array or map block: its item count and, in
// the negative-count form, its size in bytes (else -1). A count of 0 ends
// the array or map. The count must fit in the bytes that remain at itemMin
// bytes an item; items of no bytes count towards MaxZeroWidthItems.
func (c *Cursor) Block(itemMin int) (count int, size int64, err error) {
	n, err := c.Long("block count")
	if err != nil {
		return 0, 0, err
	}
	size = -1
	if n < 0 {
		if n == math.MinInt64 {
			return 0, 0, errorf("block count %d out of range", n)
		}
		n = -n
		if size, err = c.Long("block size"); err != nil {
			return 0, 0, err
		}
		if size < 0 {
			return 0, 0, errorf("negative block size %d", size)
		}
	}
	if itemMin == 0 {
		if n > int64(MaxZeroWidthItems-c.zeroItems) {
			return 0, 0, errorf("more than %d array items that take no bytes", MaxZeroWidthItems)
		}
		c.zeroItems += int(n)
	} else if n > int64((len(c.buf)-c.pos)/itemMin) {
		return 0, 0, errorf("block of %d items does not fit in the %d bytes that remain", n, len(c.buf)-c.pos)
	}
	return int(n), size, nil
}

// EndBlock checks a block's byte size, when it has one, against the bytes
// its items took since start.
func (c *Cursor) EndBlock(size int64, start int) error {
	if size >= 0 && size != int64(c.pos-start) {
		return errorf("block size %d does not match its %d bytes", size, c.pos-start)
	}
	return nil
}

// MapKeys begins checking the keys of a map for repeats: a map with a
// repeated key has no single meaning. Pass the mark it returns to
// CheckKeys once every key has been read with MapKey.
func (c *Cursor) MapKeys() int { return len(c.keys) }

// MapKey reads a map key, a string.
func (c *Cursor) MapKey() ([]byte, error) {
	k, err := c.String("map key")
	if err == nil {
		c.keys = append(c.keys, keySpan{c.pos - len(k), c.pos})
	}
	return k, err
}

// CheckKeys fails if two keys read since mark are equal, and forgets them.
func (c *Cursor) CheckKeys(mark int) error {
	keys := c.keys[mark:]
	defer func() { c.keys = c.keys[:mark] }()
	key := func(s keySpan) []byte { return c.buf[s.start:s.end] }
	if len(keys) <= 8 {
		// Pairs of a few short keys compare faster than they sort.
		for i := 1; i < len(keys); i++ {
			for j := range i {
				if bytes.Equal(key(keys[i]), key(keys[j])) {
					return errorf("map key %q appears twice", key(keys[i]))
				}
			}
		}
		return nil
	}
	slices.SortFunc(keys, func(a, b keySpan) int { return bytes.Compare(key(a), key(b)) })
	for i := 1; i < len(keys); i++ {
		if bytes.Equal(key(keys[i-1]), key(keys[i])) {
			return errorf("map key %q appears twice", key(keys[i]))
		}
	}
	return nil
}
