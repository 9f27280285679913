package jsonvalue

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"maps"
	"math/big"
	"reflect"
	"slices"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/stateproc/stateproc/internal/avrobin"
	"github.com/stateproc/stateproc/serializers"
)

// For returns the renderer of the values that a serializer restored from
// snap decodes: Value, with the schema of every Avro value they hold, so
// that a record's fields keep the schema's order and a union is written as
// the Avro JSON encoding writes it, {"long": 42}, which reads apart from
// {"float": 42}. A union of null and one other type is an optional value:
// it is that value, or null, as export's columns hold it; a union of one
// type is that type's value.
//
// An external serializer (another layout's) renders its own values when it
// implements JSONValue(any) any.
func For(snap serializers.Snapshot) func(v any) any {
	switch snap.Kind {
	case serializers.KindExternal:
		if r, ok := snap.External.(interface{ JSONValue(any) any }); ok {
			return r.JSONValue
		}
	case serializers.KindAvro:
		s, _, err := avrobin.ParseSchema(snap.Schema)
		if err != nil {
			return Value
		}
		return func(v any) any { return avroValue(s, v) }
	case serializers.KindNullable:
		if len(snap.Args) == 1 {
			elem := For(snap.Args[0])
			return func(v any) any {
				if p, ok := v.(serializers.Present); ok {
					v = p.Value
				}
				if v == nil {
					return nil
				}
				return elem(v)
			}
		}
	case serializers.KindList:
		if len(snap.Args) == 1 {
			elem := For(snap.Args[0])
			return func(v any) any {
				l, ok := v.([]any)
				if !ok {
					return Value(v)
				}
				out := make([]any, len(l))
				for i, e := range l {
					out[i] = elem(e)
				}
				return out
			}
		}
	case serializers.KindMap:
		if len(snap.Args) == 2 {
			key, val := For(snap.Args[0]), For(snap.Args[1])
			return func(v any) any {
				m, ok := v.([]serializers.MapEntry)
				if !ok {
					return Value(v)
				}
				out := make([]map[string]any, len(m))
				for i, e := range m {
					out[i] = map[string]any{"key": key(e.Key), "value": val(e.Value)}
				}
				return out
			}
		}
	}
	return Value
}

// object is a JSON object whose members keep their order.
type object struct {
	names  []string
	values []any
}

// MarshalJSON writes the members without escaping HTML's characters: the
// encoder that called it applies its own choice to what it returns, as it
// does to every string outside the object.
func (o *object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	buf.WriteByte('{')
	for i, n := range o.names {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := encode(enc, &buf, n); err != nil {
			return nil, err
		}
		buf.WriteByte(':')
		if err := encode(enc, &buf, o.values[i]); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// encode writes v with enc into buf, without the newline Encode ends it
// with.
func encode(enc *json.Encoder, buf *bytes.Buffer, v any) error {
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1)
	return nil
}

func avroValue(s avro.Schema, v any) any {
	switch s := s.(type) {
	case *avro.RefSchema:
		return avroValue(s.Schema(), v)
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return Value(v)
		}
		o := &object{}
		for _, f := range s.Fields() {
			if fv, ok := m[f.Name()]; ok {
				o.names = append(o.names, f.Name())
				o.values = append(o.values, avroValue(f.Type(), fv))
			}
		}
		return o
	case *avro.ArraySchema:
		l, ok := v.([]any)
		if !ok {
			return Value(v)
		}
		out := make([]any, len(l))
		for i, e := range l {
			out[i] = avroValue(s.Items(), e)
		}
		return out
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return Value(v)
		}
		// A list of {"key", "value"} in key order, as every map.
		out := make([]map[string]any, 0, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out = append(out, map[string]any{"key": k, "value": avroValue(s.Values(), m[k])})
		}
		return out
	case *avro.UnionSchema:
		return avroUnion(s, v)
	case *avro.PrimitiveSchema:
		if l := s.Logical(); l != nil {
			return logical(l, v)
		}
	case *avro.FixedSchema:
		if l := s.Logical(); l != nil {
			return logical(l, v)
		}
		if b, ok := fixedBytes(v); ok {
			return hex.EncodeToString(b)
		}
	}
	return Value(v)
}

// logical renders a value of a logical type as export's column of that
// type holds it: a date as 2006-01-02, a time of day as 15:04:05 with the
// fraction it has, a local timestamp without a zone, a decimal in its
// scale, a duration as its months, days and milliseconds. Instants are
// instants.
func logical(l avro.LogicalSchema, v any) any {
	switch x := v.(type) {
	case time.Time:
		switch l.Type() {
		case avro.Date:
			return x.UTC().Format("2006-01-02")
		case avro.LocalTimestampMillis, avro.LocalTimestampMicros:
			return x.UTC().Format("2006-01-02T15:04:05.999999999")
		}
	case time.Duration:
		if l.Type() == avro.TimeMillis || l.Type() == avro.TimeMicros {
			return timeOfDay(x)
		}
	case *big.Rat:
		if d, ok := l.(*avro.DecimalLogicalSchema); ok {
			return x.FloatString(d.Scale())
		}
	case avro.LogicalDuration:
		return &object{names: []string{"months", "days", "milliseconds"}, values: []any{x.Months, x.Days, x.Milliseconds}}
	}
	return Value(v)
}

// timeOfDay renders a time since midnight as 15:04:05, with the fraction
// of a second it has.
func timeOfDay(d time.Duration) string {
	return time.Unix(0, int64(d)).UTC().Format("15:04:05.999999999")
}

// fixedBytes returns the bytes of a fixed value, which the decoder gives as
// an array of bytes.
func fixedBytes(v any) ([]byte, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Array || rv.Type().Elem().Kind() != reflect.Uint8 {
		return nil, false
	}
	b := make([]byte, rv.Len())
	reflect.Copy(reflect.ValueOf(b), rv)
	return b, true
}

// avroUnion finds the branch of v, which the decoder gives either wrapped
// as {"branch": value} or bare.
func avroUnion(s *avro.UnionSchema, v any) any {
	types := s.Types()
	if v == nil {
		return nil
	}
	names := unionNames(types)
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		// The decoder names a named branch by its full name.
		for i, t := range types {
			key := string(t.Type())
			if n, ok := named(t); ok {
				key = n.FullName()
			}
			if inner, ok := m[key]; ok {
				return branch(s, t, names[i], inner)
			}
		}
	}
	for i, t := range types {
		if fits(t, v) {
			return branch(s, t, names[i], v)
		}
	}
	return Value(v)
}

// branch renders value v of branch t, named n, of union s.
func branch(s *avro.UnionSchema, t avro.Schema, n string, v any) any {
	if s.Nullable() && len(s.Types()) == 2 || len(s.Types()) == 1 {
		// One type besides null, or alone: the value, bare, as export's
		// column holds it.
		return avroValue(t, v)
	}
	return &object{names: []string{n}, values: []any{avroValue(t, v)}}
}

// unionNames names the branches of a union as export names the fields of a
// union's column: a named type by its name (its full name if two share a
// name), any other by its type.
func unionNames(types []avro.Schema) []string {
	names := make([]string, len(types))
	count := map[string]int{}
	for i, t := range types {
		if n, ok := named(t); ok {
			names[i] = n.Name()
		} else {
			names[i] = string(t.Type())
		}
		count[names[i]]++
	}
	for i, t := range types {
		if n, ok := named(t); ok && count[names[i]] > 1 {
			names[i] = n.FullName()
		}
	}
	return names
}

func named(t avro.Schema) (avro.NamedSchema, bool) {
	if r, ok := t.(*avro.RefSchema); ok {
		t = r.Schema()
	}
	n, ok := t.(avro.NamedSchema)
	return n, ok
}

// fits reports whether the decoder gives values of t as v's Go type.
func fits(t avro.Schema, v any) bool {
	if r, ok := t.(*avro.RefSchema); ok {
		t = r.Schema()
	}
	switch v.(type) {
	case bool:
		return t.Type() == avro.Boolean
	case int, int32:
		return t.Type() == avro.Int
	case int64:
		return t.Type() == avro.Long
	case float32:
		return t.Type() == avro.Float
	case float64:
		return t.Type() == avro.Double
	case string:
		return t.Type() == avro.String || t.Type() == avro.Enum
	case []byte, *big.Rat:
		return t.Type() == avro.Bytes || t.Type() == avro.Fixed
	case time.Time, time.Duration:
		return t.Type() == avro.Int || t.Type() == avro.Long
	case []any:
		return t.Type() == avro.Array
	case map[string]any:
		return t.Type() == avro.Record || t.Type() == avro.Map
	}
	return t.Type() == avro.Fixed
}

// Object is a JSON object whose members keep the order given: a record's
// fields in the order of its type. names and values have one element per
// member.
func Object(names []string, values []any) json.Marshaler {
	return &object{names: names, values: values}
}
