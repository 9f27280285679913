package pebblebackend

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The escape encoding makes a variable-length byte string self-delimiting
// while keeping its order: 0x00 becomes 0x00 0xFF and the string ends with
// 0x00 0x01. The terminator sorts below every escaped byte, so a string sorts
// before every string it is a prefix of, and a concatenation of escaped
// components compares component by component, which is exactly the order of
// the savepoint format.
const (
	escByte    = 0x00
	escEscaped = 0xFF
	escTerm    = 0x01
)

// errKey is wrapped by every error about a stored key that does not parse;
// such a key can only come from a damaged database.
var errKey = errors.New("pebblebackend: malformed stored key")

// appendEscaped appends the escaped form of b, terminator included.
func appendEscaped(dst, b []byte) []byte {
	for {
		i := indexZero(b)
		if i < 0 {
			dst = append(dst, b...)
			break
		}
		dst = append(dst, b[:i]...)
		dst = append(dst, escByte, escEscaped)
		b = b[i+1:]
	}
	return append(dst, escByte, escTerm)
}

func indexZero(b []byte) int {
	for i, c := range b {
		if c == escByte {
			return i
		}
	}
	return -1
}

// readEscaped decodes one escaped component at the start of src: it appends
// the original bytes to dst and returns the rest of src after the
// terminator.
func readEscaped(dst, src []byte) (out, rest []byte, err error) {
	for {
		i := indexZero(src)
		if i < 0 || i+1 >= len(src) {
			return dst, nil, fmt.Errorf("%w: unterminated component", errKey)
		}
		dst = append(dst, src[:i]...)
		switch src[i+1] {
		case escTerm:
			return dst, src[i+2:], nil
		case escEscaped:
			dst = append(dst, escByte)
			src = src[i+2:]
		default:
			return dst, nil, fmt.Errorf("%w: bad escape 0x00 0x%02X", errKey, src[i+1])
		}
	}
}

// prefixLen is the size of the fixed [u16 key group][u16 id] prefix that
// starts every stored key.
const prefixLen = 4

// appendPrefix appends the key-group and state (or timer service) prefix.
func appendPrefix(dst []byte, kg int, id uint16) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(kg))
	return binary.BigEndian.AppendUint16(dst, id)
}

// appendTime appends a timestamp with its sign bit flipped, so that byte
// order equals numeric order (the savepoint format's timer encoding).
func appendTime(dst []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(t)^(1<<63))
}

func readTime(b []byte) int64 {
	return int64(binary.BigEndian.Uint64(b) ^ (1 << 63))
}

// prefixEnd returns the smallest key above every key that starts with p, or
// nil when there is none (p is all 0xFF), which Pebble reads as no bound.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// keyGroupStart returns the first possible key of key group kg.
func keyGroupStart(kg int) []byte {
	return binary.BigEndian.AppendUint16(nil, uint16(kg))
}
