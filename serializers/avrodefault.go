package serializers

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/hamba/avro/v2"

	"github.com/stateproc/stateproc/internal/avrobin"
)

// appendDefault encodes a field default, as hamba parsed it from the
// schema's JSON, in canonical form. hamba's own default encoder cannot be
// used: it reads a record default for a union-typed field as a union map.
func appendDefault(dst []byte, s avro.Schema, v any) ([]byte, error) {
	s = avrobin.Deref(s)
	switch s := s.(type) {
	case *avro.NullSchema:
		return dst, nil
	case *avro.UnionSchema:
		// Defaults of union fields belong to the first branch.
		return appendDefault(append(dst, 0), s.Types()[0], v)
	case *avro.EnumSchema:
		sym, _ := v.(string)
		i := slices.Index(s.Symbols(), sym)
		if i < 0 {
			return nil, fmt.Errorf("%v is not a symbol of %s", v, s.FullName())
		}
		return appendLong(dst, int64(i)), nil
	case *avro.FixedSchema:
		b, ok := byteArray(v)
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
			if dst, err = appendDefault(dst, s.Items(), item); err != nil {
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
			if dst, err = appendDefault(appendString(dst, k), s.Values(), m[k]); err != nil {
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
				if !f.HasDefault() {
					return nil, fmt.Errorf("field %s is missing", f.Name())
				}
				fv = f.Default()
			}
			var err error
			if dst, err = appendDefault(dst, f.Type(), fv); err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name(), err)
			}
		}
		return dst, nil
	}
	var ok bool
	switch s.Type() {
	case avro.Boolean:
		var b bool
		if b, ok = v.(bool); ok {
			if b {
				return append(dst, 1), nil
			}
			return append(dst, 0), nil
		}
	case avro.Int:
		var i int
		if i, ok = v.(int); ok && i >= math.MinInt32 && i <= math.MaxInt32 {
			return appendLong(dst, int64(i)), nil
		}
	case avro.Long:
		var i int64
		if i, ok = v.(int64); ok {
			return appendLong(dst, i), nil
		}
	case avro.Float:
		var f float32
		if f, ok = v.(float32); ok {
			return binary.LittleEndian.AppendUint32(dst, math.Float32bits(f)), nil
		}
	case avro.Double:
		var f float64
		if f, ok = v.(float64); ok {
			return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), nil
		}
	case avro.String:
		var str string
		if str, ok = v.(string); ok {
			return appendString(dst, str), nil
		}
	case avro.Bytes:
		var b []byte
		if b, ok = v.([]byte); ok {
			return append(appendLong(dst, int64(len(b))), b...), nil
		}
	}
	return nil, fmt.Errorf("%v (%T) is not a %s", v, v, s.Type())
}

// byteArray reads hamba's default for a fixed, a [N]byte.
func byteArray(v any) ([]byte, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Array || rv.Type().Elem().Kind() != reflect.Uint8 {
		return nil, false
	}
	b := make([]byte, rv.Len())
	reflect.Copy(reflect.ValueOf(b), rv)
	return b, true
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
