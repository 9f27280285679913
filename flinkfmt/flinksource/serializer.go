package flinksource

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/stateproc/stateproc/flinkfmt/keyhash"
	"github.com/stateproc/stateproc/flinkfmt/typeser"
	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/serializers"
)

// Serializer is a Flink type serializer as the toolkit's external
// serializer: it decodes one stored value and describes its type.
type Serializer struct {
	ser *typeser.Serializer
	// typ is what the values are: ser's type, or, for a map state's
	// values, a nullable of it.
	typ *typeser.Type
	// nullFlag: the bytes start with Flink's null flag of a map value.
	nullFlag bool
	// decode replaces ser's decoding (source splits).
	decode func([]byte) (any, error)
}

func newSerializer(s *typeser.Serializer) *Serializer { return &Serializer{ser: s, typ: s.Type} }

// nullable is the serializer of a map state's stored values: a null flag
// byte, then, unless it is set, the value.
func nullable(s *typeser.Serializer) *Serializer {
	return &Serializer{ser: s, typ: &typeser.Type{Kind: typeser.KindNullable, Elem: s.Type, Serializer: s.Class}, nullFlag: true}
}

func snapshot(s *Serializer) serializers.Snapshot { return serializers.ExternalSnapshot(s) }

// FlinkType is the type of the values DecodeAny gives, for a columnar
// mapping.
func (s *Serializer) FlinkType() *typeser.Type { return s.typ }

// Class is the Flink serializer (snapshot) class.
func (s *Serializer) Class() string { return s.ser.Class }

func (s *Serializer) String() string { return s.typ.String() }

// DecodeAny decodes one stored value into typeser's Go values.
func (s *Serializer) DecodeAny(b []byte) (any, error) {
	if s.decode != nil {
		return s.decode(b)
	}
	if s.nullFlag {
		if len(b) == 0 {
			return nil, fmt.Errorf("%w: a map value without its null flag", serializers.ErrDecode)
		}
		if b[0] != 0 {
			if len(b) != 1 {
				return nil, fmt.Errorf("%w: a null map value followed by %d bytes", serializers.ErrDecode, len(b)-1)
			}
			return nil, nil
		}
		b = b[1:]
	}
	v, err := s.ser.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", serializers.ErrDecode, err)
	}
	return v, nil
}

// FlinkShape describes the stored values for a columnar decoding without
// Go values (nil for source splits, which decode their own way); nullFlag
// says that each starts with a map value's null flag.
func (s *Serializer) FlinkShape() (sh *typeser.Shape, nullFlag bool) {
	if s.decode != nil {
		return nil, false
	}
	return s.ser.Shape(), s.nullFlag
}

// MarshalJSON records the serializer class, its version and the type.
func (s *Serializer) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Layout  string `json:"layout"`
		Class   string `json:"class"`
		Version int    `json:"version"`
		Type    string `json:"type"`
	}{"Apache Flink", s.ser.Class, s.ser.Version, s.typ.String()})
}

// KeyGroup is Flink's key group of a decoded key, for the keys whose Java
// hashCode is defined by value (package keyhash).
func (s *Serializer) KeyGroup(key any, maxParallelism int) (int, bool) {
	h, ok := keyhash.HashCode(key)
	if !ok {
		return 0, false
	}
	return keyhash.KeyGroup(h, maxParallelism), true
}

// ParseKey reads a key given on a command line: a string as is, numbers
// and booleans parsed, a one-character char, an enum by its symbol, bytes
// as hex, and a tuple, case class or POJO as a JSON array of its fields or
// a JSON object by field name.
func (s *Serializer) ParseKey(text string) (any, error) {
	switch s.typ.Kind {
	case typeser.KindString, typeser.KindEnum:
		return parseText(s.typ, text)
	case typeser.KindRecord, typeser.KindList:
		var v any
		dec := json.NewDecoder(strings.NewReader(text))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("a %s key is JSON: %w", s.typ, err)
		}
		return fromJSON(s.typ, v, 0)
	}
	return parseText(s.typ, text)
}

// parseText reads a scalar of type t from text.
func parseText(t *typeser.Type, text string) (any, error) {
	switch t.Kind {
	case typeser.KindString:
		return text, nil
	case typeser.KindEnum:
		for _, sym := range t.Symbols {
			if sym == text {
				return text, nil
			}
		}
		return nil, fmt.Errorf("%s has no symbol %q (it has %v)", t, text, t.Symbols)
	case typeser.KindChar:
		if n := len([]rune(text)); n != 1 {
			return nil, fmt.Errorf("a char is one character, not %d", n)
		}
		return text, nil
	case typeser.KindBool:
		return strconv.ParseBool(text)
	case typeser.KindInt8, typeser.KindInt16, typeser.KindInt32, typeser.KindInt64:
		bits := map[typeser.Kind]int{typeser.KindInt8: 8, typeser.KindInt16: 16, typeser.KindInt32: 32, typeser.KindInt64: 64}[t.Kind]
		n, err := strconv.ParseInt(text, 10, bits)
		if err != nil {
			return nil, err
		}
		switch t.Kind {
		case typeser.KindInt8:
			return int8(n), nil
		case typeser.KindInt16:
			return int16(n), nil
		case typeser.KindInt32:
			return int32(n), nil
		}
		return n, nil
	case typeser.KindFloat32:
		f, err := strconv.ParseFloat(text, 32)
		return float32(f), err
	case typeser.KindFloat64:
		return strconv.ParseFloat(text, 64)
	case typeser.KindBytes:
		return hex.DecodeString(text)
	}
	return nil, fmt.Errorf("keys of type %s cannot be given on the command line", t)
}

// fromJSON turns a JSON value into the Go value typeser decodes for t.
func fromJSON(t *typeser.Type, v any, depth int) (any, error) {
	if depth > typeser.MaxDepth {
		return nil, errors.New("nests too deeply")
	}
	switch t.Kind {
	case typeser.KindRecord:
		out := typeser.RecordValue{Class: t.Class, Fields: make([]typeser.FieldValue, len(t.Fields))}
		switch x := v.(type) {
		case []any:
			if len(x) != len(t.Fields) {
				return nil, fmt.Errorf("%s has %d fields, not %d", t, len(t.Fields), len(x))
			}
			for i, f := range t.Fields {
				fv, err := fromJSON(f.Type, x[i], depth+1)
				if err != nil {
					return nil, fmt.Errorf("field %s: %w", f.Name, err)
				}
				out.Fields[i] = typeser.FieldValue{Name: f.Name, Value: fv}
			}
		case map[string]any:
			if len(x) != len(t.Fields) {
				return nil, fmt.Errorf("%s has %d fields, not %d", t, len(t.Fields), len(x))
			}
			for i, f := range t.Fields {
				jv, ok := x[f.Name]
				if !ok {
					return nil, fmt.Errorf("field %s is missing", f.Name)
				}
				fv, err := fromJSON(f.Type, jv, depth+1)
				if err != nil {
					return nil, fmt.Errorf("field %s: %w", f.Name, err)
				}
				out.Fields[i] = typeser.FieldValue{Name: f.Name, Value: fv}
			}
		default:
			return nil, fmt.Errorf("%s is a JSON array or object", t)
		}
		return out, nil
	case typeser.KindList:
		x, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s is a JSON array", t)
		}
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = fromJSON(t.Elem, e, depth+1); err != nil {
				return nil, err
			}
		}
		return out, nil
	case typeser.KindNullable:
		if v == nil {
			return nil, nil
		}
		return fromJSON(t.Elem, v, depth+1)
	}
	switch x := v.(type) {
	case string:
		return parseText(t, x)
	case json.Number:
		return parseText(t, x.String())
	case bool:
		return parseText(t, strconv.FormatBool(x))
	case nil:
		if t.Kind == typeser.KindString {
			return nil, nil
		}
	}
	return nil, fmt.Errorf("%v is not a %s", v, t)
}

// JSONValue renders a decoded value in the toolkit's JSON conventions
// (package jsonvalue): records as objects in field order (with "row_kind"
// for Table API rows), maps as lists of {"key", "value"}, instants as RFC
// 3339, windows as {"start", "end"}, Either as {"left"} or {"right"}, a
// TTL value as {"last_access", "value"}, and an opaque value as its class
// and bytes in hex.
func (s *Serializer) JSONValue(v any) any { return jsonOf(s.typ, v, 0) }

func jsonOf(t *typeser.Type, v any, depth int) any {
	if depth > typeser.MaxDepth || v == nil {
		return jsonvalue.Value(v)
	}
	switch x := v.(type) {
	case typeser.RecordValue:
		var names []string
		var values []any
		if x.Kind != "" {
			names, values = append(names, "row_kind"), append(values, x.Kind)
		}
		for i, f := range x.Fields {
			var ft *typeser.Type
			if t != nil && t.Kind == typeser.KindRecord && i < len(t.Fields) {
				ft = t.Fields[i].Type
			}
			names, values = append(names, f.Name), append(values, jsonOf(ft, f.Value, depth+1))
		}
		return jsonvalue.Object(names, values)
	case []any:
		var et *typeser.Type
		if t != nil {
			et = t.Elem
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonOf(et, e, depth+1)
		}
		return out
	case []typeser.MapEntry:
		var kt, vt *typeser.Type
		if t != nil {
			kt, vt = t.Key, t.Value
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonvalue.Object([]string{"key", "value"}, []any{jsonOf(kt, e.Key, depth+1), jsonOf(vt, e.Value, depth+1)})
		}
		return out
	case typeser.EitherValue:
		var bt *typeser.Type
		side := "right"
		if t != nil {
			bt = t.Value
		}
		if x.Left {
			side = "left"
			if t != nil {
				bt = t.Key
			}
		}
		return jsonvalue.Object([]string{side}, []any{jsonOf(bt, x.Value, depth+1)})
	case typeser.TTLValue:
		var et *typeser.Type
		if t != nil {
			et = t.Elem
		}
		return jsonvalue.Object([]string{"last_access", "value"}, []any{jsonvalue.Time(x.LastAccess), jsonOf(et, x.Value, depth+1)})
	case typeser.TimerValue:
		return jsonvalue.Object([]string{"timestamp", "key", "namespace"}, []any{jsonvalue.Time(x.Timestamp), jsonOf(nil, x.Key, depth+1), jsonOf(nil, x.Namespace, depth+1)})
	case typeser.TimeWindow:
		return jsonvalue.Object([]string{"start", "end"}, []any{jsonvalue.Time(x.Start), jsonvalue.Time(x.End)})
	case typeser.VoidNamespace:
		return nil
	case typeser.GlobalWindow:
		return "global"
	case typeser.OpaqueValue:
		return jsonvalue.Object([]string{"class", "bytes"}, []any{x.Class, hex.EncodeToString(x.Bytes)})
	case *big.Int:
		return x.String()
	case time.Time:
		return jsonvalue.Value(x)
	}
	if t != nil {
		switch t.Kind {
		case typeser.KindAvro:
			return jsonvalue.For(serializers.Snapshot{Kind: serializers.KindAvro, Schema: t.Schema})(v)
		case typeser.KindDate:
			if d, ok := v.(int32); ok {
				return time.Unix(int64(d)*86400, 0).UTC().Format("2006-01-02")
			}
		case typeser.KindTime:
			if ms, ok := v.(int32); ok {
				return time.UnixMilli(int64(ms)).UTC().Format("15:04:05.999")
			}
		}
	}
	return jsonvalue.Value(v)
}

// NamespaceKind says the namespace is void or a time window, which Flink
// writes as stateproc's window serializer does.
func (s *Serializer) NamespaceKind() serializers.Kind {
	switch s.typ.Kind {
	case typeser.KindVoid:
		return serializers.KindVoid
	case typeser.KindWindow:
		return serializers.KindWindow
	}
	return serializers.KindExternal
}

// Opaque lists the classes of the opaque values within v.
func (s *Serializer) Opaque(v any) []string { return opaqueIn(v, 0, nil) }

func opaqueIn(v any, depth int, out []string) []string {
	if depth > typeser.MaxDepth {
		return out
	}
	switch x := v.(type) {
	case typeser.OpaqueValue:
		out = append(out, x.Class)
	case typeser.RecordValue:
		for _, f := range x.Fields {
			out = opaqueIn(f.Value, depth+1, out)
		}
	case []any:
		for _, e := range x {
			out = opaqueIn(e, depth+1, out)
		}
	case []typeser.MapEntry:
		for _, e := range x {
			out = opaqueIn(e.Value, depth+1, opaqueIn(e.Key, depth+1, out))
		}
	case typeser.EitherValue:
		out = opaqueIn(x.Value, depth+1, out)
	case typeser.TTLValue:
		out = opaqueIn(x.Value, depth+1, out)
	}
	return out
}
