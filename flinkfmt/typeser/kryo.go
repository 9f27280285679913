package typeser

import (
	"bytes"
	"math"

	"github.com/stateproc/stateproc/flinkfmt/internal/javaobj"
	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
)

// Flink's KryoSerializer writes every value with Kryo's
// writeClassAndObject: the class's registration id plus 2 as a varint (0
// for null, 1 for a class written by name: a name id and, the first time,
// the name), then, as references are on, 1 for a new object unless the
// class is a primitive box, then the object. Kryo (2.24, which Flink ships)
// registers the primitives, their boxes and String first, with ids 0 to 9,
// whatever else the job registers; their encodings are Kryo's own, so
// values of those classes decode without the job. Flink serializes
// Throwables with Java serialization inside Kryo, so a class written by
// name whose object is a Java object stream is walked to its end and kept
// opaque with its class. Any other class is opaque.
type kryoCodec struct{ class, serializer string }

// Kryo's default registrations, by the id written (registration id + 2).
const (
	kryoNull    = 0
	kryoByName  = 1
	kryoInt     = 2
	kryoString  = 3
	kryoFloat   = 4
	kryoBoolean = 5
	kryoByte    = 6
	kryoChar    = 7
	kryoShort   = 8
	kryoLong    = 9
	kryoDouble  = 10
)

func (c kryoCodec) read(r *wire.Buf, last bool) any {
	start := r.Pos()
	id, ok := kryoVarint(r, 5)
	if r.Err() != nil {
		return nil
	}
	if ok {
		switch id {
		case kryoNull:
			return nil
		case kryoByName:
			if v, ok := c.javaInKryo(r); ok {
				return v
			}
			r.Seek(start)
			return opaqueCodec{class: c.class, serializer: c.serializer}.read(r, last)
		case kryoInt:
			if v, ok := kryoVarint(r, 5); ok {
				return int32(zigzag(v))
			}
		case kryoLong:
			if v, ok := kryoVarint(r, 9); ok {
				return zigzag(v)
			}
		case kryoString:
			if ref, ok := kryoVarint(r, 5); !ok || ref != kryoNotNull {
				if r.Err() == nil {
					r.Failf(wire.ErrMalformed, "Kryo string with reference marker %d", ref)
				}
				return nil
			}
			if s, ok := readKryoString(r); ok {
				return s
			}
		case kryoFloat:
			return math.Float32frombits(uint32(r.I32()))
		case kryoDouble:
			return math.Float64frombits(uint64(r.I64()))
		case kryoBoolean:
			return r.U8() == 1
		case kryoByte:
			return int8(r.U8())
		case kryoChar:
			return wire.UTF16String([]uint16{r.U16()})
		case kryoShort:
			return int16(r.U16())
		default:
			r.Seek(start)
			return opaqueCodec{class: c.class, serializer: c.serializer}.read(r, last)
		}
	}
	if r.Err() == nil {
		r.Failf(wire.ErrMalformed, "Kryo value of class id %d", id)
	}
	return nil
}

func (kryoCodec) size() (int, bool) { return 1, false }

func zigzag(v uint64) int64 { return int64(v>>1) ^ -int64(v&1) }

// kryoVarint reads Kryo's varints: 7-bit groups, low first; the ninth
// byte of a long holds 8 bits.
func kryoVarint(r *wire.Buf, maxBytes int) (uint64, bool) {
	var v uint64
	for i := 0; i < maxBytes; i++ {
		c := r.U8()
		if r.Err() != nil {
			return 0, false
		}
		if i == 8 {
			return v | uint64(c)<<56, true
		}
		v |= uint64(c&0x7F) << (7 * i)
		if c < 0x80 {
			return v, true
		}
	}
	return 0, false
}

// readKryoString reads Kryo's Output.writeString: ASCII strings as their
// bytes with the last one's high bit set; others as a length (chars+1;
// 0 null, 1 empty) whose first byte has the high bit set and 6 bits of
// value, then each UTF-16 unit in one to three bytes.
func readKryoString(r *wire.Buf) (any, bool) {
	b := r.U8()
	if r.Err() != nil {
		return nil, false
	}
	if b&0x80 == 0 {
		s := []byte{b}
		for r.Err() == nil {
			c := r.U8()
			s = append(s, c&0x7F)
			if c&0x80 != 0 {
				return string(s), true
			}
		}
		return nil, false
	}
	n := uint64(b & 0x3F)
	if b&0x40 != 0 {
		for shift := 6; shift <= 27; shift += 7 {
			c := r.U8()
			n |= uint64(c&0x7F) << shift
			if c&0x80 == 0 {
				break
			}
		}
	}
	if r.Err() != nil {
		return nil, false
	}
	switch {
	case n == 0:
		return nil, true
	case n == 1:
		return "", true
	case n-1 > uint64(r.Len()):
		r.Failf(wire.ErrShort, "Kryo string of %d chars, %d bytes remain", n-1, r.Len())
		return nil, false
	}
	units := make([]uint16, 0, n-1)
	for i := uint64(0); i < n-1 && r.Err() == nil; i++ {
		c := r.U8()
		switch c >> 4 {
		case 12, 13:
			units = append(units, uint16(c&0x1F)<<6|uint16(r.U8()&0x3F))
		case 14:
			u := uint16(c&0x0F) << 12
			u |= uint16(r.U8()&0x3F) << 6
			units = append(units, u|uint16(r.U8()&0x3F))
		default:
			units = append(units, uint16(c))
		}
	}
	if r.Err() != nil {
		return nil, false
	}
	return wire.UTF16String(units), true
}

// kryoNotNull is Kryo's reference marker for an object not seen before.
const kryoNotNull = 1

var javaStreamMagic = []byte{0xAC, 0xED, 0x00, 0x05}

// javaInKryo reads a class written by name whose object is a Java object
// stream (Flink's Kryo serializes Throwables so), or reports false.
func (c kryoCodec) javaInKryo(r *wire.Buf) (any, bool) {
	start := r.Pos()
	if _, ok := kryoVarint(r, 5); !ok {
		return nil, false
	}
	name, ok := readKryoString(r)
	cls, isString := name.(string)
	if !ok || !isString {
		return nil, false
	}
	if ref, ok := kryoVarint(r, 5); !ok || ref != kryoNotNull || !bytes.HasPrefix(r.Rest(), javaStreamMagic) {
		return nil, false
	}
	_, n, err := javaobj.Parse(r.Rest(), javaobj.Limits{})
	if err != nil || r.Err() != nil {
		return nil, false
	}
	r.Raw(n, "Java-serialized object in Kryo")
	return OpaqueValue{Class: cls, Serializer: c.serializer, Bytes: append([]byte(nil), r.Bytes()[start-1:r.Pos()]...)}, true
}
