package serializers

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/hamba/avro/v2"

	"github.com/stateproc/stateproc/internal/avrobin"
)

// appendDefault encodes a field default, v as the schema's JSON writes it
// (avrobin.FieldDefaults: numbers are json.Number, bytes and fixed strings
// of code points 0 to 255), in canonical form. The defaults of the fields
// of a record default that leaves them out come from defs. hamba's parsed
// defaults cannot be used: it reads numbers through float64, which rounds
// longs past 2^53, and a record default for a union-typed field as a union
// map.
func appendDefault(dst []byte, s avro.Schema, v any, defs avrobin.Defaults) ([]byte, error) {
	s = avrobin.Deref(s)
	switch s := s.(type) {
	case *avro.NullSchema:
		if v != nil {
			return nil, fmt.Errorf("%v is not null", v)
		}
		return dst, nil
	case *avro.UnionSchema:
		// Defaults of union fields belong to the first branch.
		if len(s.Types()) == 0 {
			return nil, errors.New("the empty union has no default")
		}
		return appendDefault(append(dst, 0), s.Types()[0], v, defs)
	case *avro.EnumSchema:
		sym, _ := v.(string)
		i := slices.Index(s.Symbols(), sym)
		if i < 0 {
			return nil, fmt.Errorf("%v is not a symbol of %s", v, s.FullName())
		}
		return appendLong(dst, int64(i)), nil
	case *avro.FixedSchema:
		b, ok := defaultBytes(v)
		if !ok || len(b) != s.Size() {
			return nil, fmt.Errorf("%v is not %d bytes", v, s.Size())
		}
		return append(dst, b...), nil
	case *avro.ArraySchema:
		items, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%T is not an array", v)
		}
		if len(items) > 0 {
			dst = appendLong(dst, int64(len(items)))
		}
		for _, item := range items {
			var err error
			if dst, err = appendDefault(dst, s.Items(), item, defs); err != nil {
				return nil, err
			}
		}
		return append(dst, 0), nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%T is not a map", v)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if len(keys) > 0 {
			dst = appendLong(dst, int64(len(keys)))
		}
		for _, k := range keys {
			var err error
			if dst, err = appendDefault(appendString(dst, k), s.Values(), m[k], defs); err != nil {
				return nil, err
			}
		}
		return append(dst, 0), nil
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%T is not a record", v)
		}
		for _, f := range s.Fields() {
			fv, ok := m[f.Name()]
			if !ok {
				if fv, ok = defs[s.FullName()][f.Name()]; !ok {
					return nil, fmt.Errorf("field %s is missing", f.Name())
				}
			}
			var err error
			if dst, err = appendDefault(dst, f.Type(), fv, defs); err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name(), err)
			}
		}
		return dst, nil
	}
	switch s.Type() {
	case avro.Boolean:
		if b, ok := v.(bool); ok {
			if b {
				return append(dst, 1), nil
			}
			return append(dst, 0), nil
		}
	case avro.Int, avro.Long:
		bits := 64
		if s.Type() == avro.Int {
			bits = 32
		}
		if n, ok := v.(json.Number); ok {
			i, err := avrobin.ParseInteger(n, bits)
			if err != nil {
				return nil, fmt.Errorf("%s is not %s", n, withArticle(s.Type()))
			}
			return appendLong(dst, i), nil
		}
	case avro.Float, avro.Double:
		if n, ok := v.(json.Number); ok {
			if s.Type() == avro.Float {
				f, err := strconv.ParseFloat(string(n), 32)
				if err != nil {
					return nil, fmt.Errorf("%s is not a float", n)
				}
				return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(f))), nil
			}
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil {
				return nil, fmt.Errorf("%s is not a double", n)
			}
			return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), nil
		}
	case avro.String:
		if str, ok := v.(string); ok {
			return appendString(dst, str), nil
		}
	case avro.Bytes:
		if b, ok := defaultBytes(v); ok {
			return append(appendLong(dst, int64(len(b))), b...), nil
		}
	}
	return nil, fmt.Errorf("%s is not %s", jsonText(v), withArticle(s.Type()))
}

// defaultBytes reads the default of a bytes or fixed: a JSON string whose
// code points 0 to 255 are the bytes.
func defaultBytes(v any) ([]byte, bool) {
	str, ok := v.(string)
	if !ok {
		return nil, false
	}
	b := make([]byte, 0, len(str))
	for _, r := range str {
		if r > 0xff {
			return nil, false
		}
		b = append(b, byte(r))
	}
	return b, true
}

func withArticle(t avro.Type) string {
	switch t {
	case avro.Int, avro.Array, avro.Enum:
		return "an " + string(t)
	}
	return "a " + string(t)
}

// jsonText is a default's JSON, for messages.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// appendZero encodes the simplest datum of a schema: zeros, empty strings
// and collections, first symbols, and union branches that do not recurse.
// Avro[T] decodes it into a T to find out early whether T fits the schema.
func appendZero(dst []byte, s avro.Schema, active map[string]bool) ([]byte, bool) {
	s = avrobin.Deref(s)
	switch s := s.(type) {
	case *avro.NullSchema:
		return dst, true
	case *avro.UnionSchema:
		for i, b := range s.Types() {
			if out, ok := appendZero(appendLong(dst, int64(i)), b, active); ok {
				return out, true
			}
		}
		return dst, false
	case *avro.FixedSchema:
		return append(dst, make([]byte, s.Size())...), true
	case *avro.RecordSchema:
		if active[s.FullName()] {
			return dst, false
		}
		active[s.FullName()] = true
		defer delete(active, s.FullName())
		for _, f := range s.Fields() {
			var ok bool
			if dst, ok = appendZero(dst, f.Type(), active); !ok {
				return dst, false
			}
		}
		return dst, true
	}
	switch s.Type() {
	case avro.Float:
		return append(dst, 0, 0, 0, 0), true
	case avro.Double:
		return append(dst, 0, 0, 0, 0, 0, 0, 0, 0), true
	}
	// Every other type's zero is the single byte 0: false, 0, "", the first
	// enum symbol, an empty array or map.
	return append(dst, 0), true
}

// appendLong writes Avro's zig-zag varint.
func appendLong(dst []byte, v int64) []byte {
	return binary.AppendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

func appendString(dst []byte, s string) []byte {
	return append(appendLong(dst, int64(len(s))), s...)
}
