package typeser

import (
	"encoding/binary"
)

// The helpers below write snapshots and values as Flink's Java code does
// (DataOutputStream, big-endian), so that tests can state bytes from the
// layout rather than from this package's reader.

type buf []byte

func (b buf) u8(v byte) buf   { return append(b, v) }
func (b buf) u16(v int) buf   { return binary.BigEndian.AppendUint16(b, uint16(v)) }
func (b buf) i32(v int) buf   { return binary.BigEndian.AppendUint32(b, uint32(int32(v))) }
func (b buf) i64(v int64) buf { return binary.BigEndian.AppendUint64(b, uint64(v)) }
func (b buf) raw(p ...byte) buf {
	return append(b, p...)
}

// utf is DataOutput.writeUTF for ASCII text.
func (b buf) utf(s string) buf { return b.u16(len(s)).raw([]byte(s)...) }

// str is StringValue.writeString: length+1 and each UTF-16 unit as
// 7-bit groups, low first.
func (b buf) str(units ...uint16) buf {
	b = varint7(b, uint32(len(units)+1))
	for _, u := range units {
		b = varint7(b, uint32(u))
	}
	return b
}

func (b buf) ascii(s string) buf {
	units := make([]uint16, len(s))
	for i := range s {
		units[i] = uint16(s[i])
	}
	return b.str(units...)
}

func varint7(b buf, v uint32) buf {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func versioned(class string, version int, body buf) buf {
	return buf(nil).utf(class).i32(version).raw(body...)
}

func simpleSnap(class string) buf { return versioned(class, 3, nil) }

func composite(class string, outer buf, nested ...buf) buf {
	body := buf(nil).i32(compositeMagic).i32(1).raw(outer...).i32(nestedMagic).i32(1).i32(len(nested))
	for _, n := range nested {
		body = body.raw(n...)
	}
	return versioned(class, 3, body)
}

var (
	longSnap   = simpleSnap(base + "LongSerializer$LongSerializerSnapshot")
	intSnap    = simpleSnap(base + "IntSerializer$IntSerializerSnapshot")
	stringSnap = simpleSnap(base + "StringSerializer$StringSerializerSnapshot")
)
