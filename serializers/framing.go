package serializers

import (
	"encoding/binary"

	"github.com/stateproc/stateproc/internal/uvarint"
)

// frames reads the length-prefixed parts of the list, map and timer
// encodings. Every uvarint must be in its shortest form, so that a value has
// exactly one encoding, and every length is checked against the bytes that
// remain before anything is sized from it.
type frames struct {
	kind Kind
	src  []byte
}

// uvarint reads what+part ("key" and " length"): the two halves are joined
// only in an error, so that reading builds no string.
func (f *frames) uvarint(what, part string) (uint64, error) {
	v, n := binary.Uvarint(f.src)
	switch {
	case n == 0:
		return 0, decodeErr("%s: %s%s truncated", f.kind, what, part)
	case n < 0:
		return 0, decodeErr("%s: %s%s overflows 64 bits", f.kind, what, part)
	case n > 1 && f.src[n-1] == 0:
		return 0, decodeErr("%s: %s%s is not in its shortest form", f.kind, what, part)
	}
	f.src = f.src[n:]
	return v, nil
}

// count reads a number of items that each take at least minBytes bytes.
func (f *frames) count(minBytes int) (int, error) {
	n, err := f.uvarint("count", "")
	if err != nil {
		return 0, err
	}
	if n > uint64(len(f.src)/minBytes) {
		return 0, decodeErr("%s: count %d does not fit in the %d bytes that remain", f.kind, n, len(f.src))
	}
	return int(n), nil
}

func (f *frames) frame(what string) ([]byte, error) {
	n, err := f.uvarint(what, " length")
	if err != nil {
		return nil, err
	}
	if n > uint64(len(f.src)) {
		return nil, decodeErr("%s: %s length %d exceeds the %d bytes that remain", f.kind, what, n, len(f.src))
	}
	b := f.src[:n:n]
	f.src = f.src[n:]
	return b, nil
}

func (f *frames) end() error {
	if len(f.src) != 0 {
		return decodeErr("%s: %d trailing bytes", f.kind, len(f.src))
	}
	return nil
}

// beginFrame reserves one byte for the length of the part that the caller
// appends next; endFrame writes the length there. Most parts are shorter
// than 128 bytes, so the common case neither copies nor needs a scratch
// buffer.
func beginFrame(dst []byte) ([]byte, int) {
	return append(dst, 0), len(dst)
}

func endFrame(dst []byte, at int) []byte {
	n := len(dst) - at - 1
	if n < 0x80 {
		dst[at] = byte(n)
		return dst
	}
	width := uvarint.Len(uint64(n))
	dst = append(dst, make([]byte, width-1)...)
	copy(dst[at+width:], dst[at+1:at+1+n])
	binary.PutUvarint(dst[at:], uint64(n))
	return dst
}
