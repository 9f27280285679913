package keyhash

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
	"github.com/stateproc/stateproc/flinkfmt/typeser"
)

// ErrNotValueHashed is wrapped by Hashable's errors: Java's hashCode of the
// key class is not defined by the key's value, or not one this package
// computes, so a key's key group cannot be found from its bytes.
var ErrNotValueHashed = errors.New("keyhash: key hash not defined by value")

const basePkg = "org.apache.flink.api.common.typeutils.base."

// valueHashed are the serializers (snapshot classes, and the serializer
// classes the legacy snapshots of Flink before 1.7 name) whose values are
// boxed primitives or strings.
var valueHashed = map[string]bool{}

// tupleSerializers write Flink's Java tuples.
var tupleSerializers = map[string]bool{
	"org.apache.flink.api.java.typeutils.runtime.TupleSerializerSnapshot": true,
	"org.apache.flink.api.java.typeutils.runtime.TupleSerializer":         true,
}

func init() {
	for _, t := range []string{"Boolean", "Byte", "Short", "Int", "Long", "Float", "Double", "String"} {
		valueHashed[basePkg+t+"Serializer$"+t+"SerializerSnapshot"] = true
		valueHashed[basePkg+t+"Serializer"] = true
	}
}

// Hashable returns nil when Flink's key group of the keys s writes can be
// computed from their bytes: strings, boxed primitives other than
// Character, and Flink's Java tuples of those, the key classes whose
// hashCode the fixtures' key-group invariant covers. Otherwise its error
// names the key class and why: enums hash by identity, a POJO may override
// hashCode, Row's hash changed across Flink versions, Scala case classes
// hash by the Scala version, and Kryo or Java-serialized keys have no class
// known before they are read.
func Hashable(s *typeser.Serializer) error {
	switch {
	case valueHashed[s.Class]:
		return nil
	case tupleSerializers[s.Class] && strings.HasPrefix(s.Type.Class, tuplePrefix):
		for i, f := range s.Args {
			if err := Hashable(f); err != nil {
				return fmt.Errorf("field f%d of %s: %w", i, s.Type.Class, err)
			}
		}
		return nil
	}
	return fmt.Errorf("%w: keys of class %s (serializer %s): %s", ErrNotValueHashed, keyClass(s.Type), s.Class, whyNot(s))
}

func keyClass(t *typeser.Type) string {
	if t.Class != "" {
		return t.Class
	}
	switch t.Kind {
	case typeser.KindChar:
		return "java.lang.Character"
	case typeser.KindString:
		return "StringData"
	}
	return string(t.Kind)
}

func whyNot(s *typeser.Serializer) string {
	c := s.Class
	switch {
	case s.Type.Kind == typeser.KindEnum && strings.Contains(c, "scala"):
		return "a Scala Enumeration value hashes by identity"
	case s.Type.Kind == typeser.KindEnum:
		return "Java enums hash by identity"
	case strings.Contains(c, "PojoSerializer"):
		return "a POJO may override hashCode"
	case strings.Contains(c, "RowSerializer"):
		return "Row's hashCode changed across Flink versions"
	case strings.Contains(c, "RowData"), strings.Contains(c, "StringData"):
		return "the Table API's binary rows and strings hash their bytes, not by Java's rules for the values"
	case strings.Contains(c, "scala"):
		return "Scala case classes and collections hash by the Scala version"
	case strings.Contains(c, "Kryo"), strings.Contains(c, "JavaSerializer"):
		return "Kryo and Java-serialized keys have no class known before they are read, so their hash cannot be computed"
	}
	return "its hashCode is not one that this rewrite computes from the key's value"
}

// KeyGroupOf returns the key group Flink assigns to the key whose
// serialized form is b, written by s (for which Hashable holds), under
// maxParallelism. Strings are hashed over the UTF-16 units as stored, so
// that unpaired surrogates, which decoding to Go strings cannot keep,
// hash as in Java.
func KeyGroupOf(s *typeser.Serializer, b []byte, maxParallelism int) (int, error) {
	h, err := hashOf(s, b, 0)
	if err != nil {
		return 0, err
	}
	return KeyGroup(h, maxParallelism), nil
}

func hashOf(s *typeser.Serializer, b []byte, depth int) (int32, error) {
	if depth > typeser.MaxDepth {
		return 0, fmt.Errorf("keyhash: tuples nest deeper than %d", typeser.MaxDepth)
	}
	switch {
	case s.Type.Kind == typeser.KindString && valueHashed[s.Class]:
		return stringHash(b)
	case tupleSerializers[s.Class]:
		r := wire.New(b, 0)
		var h int32
		for i, f := range s.Args {
			start := r.Pos()
			if _, err := f.Read(r); err != nil {
				return 0, err
			}
			fh, err := hashOf(f, b[start:r.Pos()], depth+1)
			if err != nil {
				return 0, err
			}
			if i == 0 {
				h = fh
			} else {
				h = 31*h + fh
			}
		}
		if r.Len() != 0 {
			return 0, fmt.Errorf("keyhash: %d bytes follow a %s key", r.Len(), s.Type.Class)
		}
		return h, nil
	}
	v, err := s.Decode(b)
	if err != nil {
		return 0, err
	}
	h, ok := HashCode(v)
	if !ok {
		return 0, fmt.Errorf("%w: a key of %s", ErrNotValueHashed, s.Type)
	}
	return h, nil
}

// stringHash is String.hashCode over the UTF-16 units of a value that
// StringValue.writeString wrote: length+1, then each unit, as 7-bit groups
// low first.
func stringHash(b []byte) (int32, error) {
	n, i, ok := varint(b, 0)
	switch {
	case !ok:
		return 0, fmt.Errorf("keyhash: string key with a bad length")
	case n == 0:
		return 0, fmt.Errorf("keyhash: a null string key")
	}
	var h int32
	for k := uint32(1); k < n; k++ {
		var u uint32
		if u, i, ok = varint(b, i); !ok || u > 0xFFFF {
			return 0, fmt.Errorf("keyhash: string key with a bad character at byte %d", i)
		}
		h = 31*h + int32(u)
	}
	if i != len(b) {
		return 0, fmt.Errorf("keyhash: %d bytes follow a string key", len(b)-i)
	}
	return h, nil
}

func varint(b []byte, i int) (v uint32, next int, ok bool) {
	for shift := 0; shift < 35; shift += 7 {
		if i >= len(b) {
			return 0, i, false
		}
		c := b[i]
		i++
		v |= uint32(c&0x7F) << shift
		if c < 0x80 {
			return v, i, shift < 28 || c <= 0x0F
		}
	}
	return 0, i, false
}
