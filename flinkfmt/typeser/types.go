package typeser

import (
	"fmt"
	"strings"
)

// Kind is what a Type is, in terms a columnar exporter can map.
type Kind string

// The kinds of Type.
const (
	KindBool         Kind = "bool"
	KindInt8         Kind = "int8"
	KindInt16        Kind = "int16"
	KindInt32        Kind = "int32"
	KindInt64        Kind = "int64"
	KindFloat32      Kind = "float32"
	KindFloat64      Kind = "float64"
	KindChar         Kind = "char"
	KindString       Kind = "string"
	KindBytes        Kind = "bytes"
	KindBigInt       Kind = "bigint"
	KindDecimal      Kind = "decimal"
	KindTimestamp    Kind = "timestamp" // epoch milliseconds; Instant and SQL timestamps keep nanoseconds
	KindDate         Kind = "date"
	KindTime         Kind = "time"
	KindArray        Kind = "array" // a primitive or object array: Elem
	KindEnum         Kind = "enum"  // Symbols
	KindRecord       Kind = "record"
	KindList         Kind = "list"
	KindMap          Kind = "map"      // Key, Value
	KindNullable     Kind = "nullable" // Elem
	KindEither       Kind = "either"   // Key is the left type, Value the right
	KindTTL          Kind = "ttl"      // Elem
	KindTimer        Kind = "timer"    // Key, Value (the namespace)
	KindVoid         Kind = "void"
	KindWindow       Kind = "window"
	KindGlobalWindow Kind = "global-window"
	KindAvro         Kind = "avro" // Schema
	KindOpaque       Kind = "opaque"
)

// Type describes the values a Serializer decodes, enough to choose columns
// for them.
type Type struct {
	Kind Kind
	// Class is the Java (or Scala) class of the values where the snapshot
	// names it: the tuple, case class, POJO, enum, Avro record or the class
	// an opaque serializer writes.
	Class string
	// Fields are a record's fields in encoding order.
	Fields []Field
	// Elem is the element of an array, list, nullable or TTL value.
	Elem *Type
	// Key and Value are a map's key and value, an Either's left and right,
	// a timer's key and namespace.
	Key, Value *Type
	// Symbols are an enum's constants, indexed by their stored number.
	Symbols []string
	// Schema is an Avro type's writer schema (JSON).
	Schema string
	// Serializer is the Flink serializer (snapshot) class that writes the
	// values; for opaque values it says why they are opaque.
	Serializer string
}

// Field is one field of a record.
type Field struct {
	Name string
	Type *Type
	// Nullable reports whether the encoding can hold null for the field
	// (POJO fields can; tuple and case-class fields cannot).
	Nullable bool
}

func (t *Type) String() string {
	if t == nil {
		return "<nil>"
	}
	var sb strings.Builder
	t.format(&sb, 0)
	return sb.String()
}

func (t *Type) format(sb *strings.Builder, depth int) {
	if depth > MaxDepth {
		sb.WriteString("...")
		return
	}
	switch t.Kind {
	case KindRecord:
		sb.WriteString(shortClass(t.Class))
		sb.WriteByte('{')
		for i, f := range t.Fields {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(f.Name)
			sb.WriteString(": ")
			f.Type.format(sb, depth+1)
		}
		sb.WriteByte('}')
	case KindList, KindArray, KindNullable, KindTTL:
		fmt.Fprintf(sb, "%s<", t.Kind)
		t.Elem.format(sb, depth+1)
		sb.WriteByte('>')
	case KindMap, KindEither, KindTimer:
		fmt.Fprintf(sb, "%s<", t.Kind)
		t.Key.format(sb, depth+1)
		sb.WriteString(", ")
		t.Value.format(sb, depth+1)
		sb.WriteByte('>')
	case KindEnum:
		fmt.Fprintf(sb, "enum %s%v", shortClass(t.Class), t.Symbols)
	case KindOpaque, KindAvro:
		fmt.Fprintf(sb, "%s(%s)", t.Kind, t.Class)
	default:
		sb.WriteString(string(t.Kind))
	}
}

func shortClass(c string) string {
	if i := strings.LastIndexAny(c, ".$"); i >= 0 && i+1 < len(c) {
		return c[i+1:]
	}
	return c
}

// RecordValue is a decoded tuple, case class, POJO or row.
type RecordValue struct {
	Class string
	// Kind is a Table API row's RowKind: +I, -U, +U or -D; empty for other
	// records.
	Kind   string
	Fields []FieldValue
}

// FieldValue is one field of a RecordValue.
type FieldValue struct {
	Name  string
	Value any
}

// Get returns the value of the named field.
func (r RecordValue) Get(name string) (any, bool) {
	for _, f := range r.Fields {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// MapEntry is one entry of a decoded map.
type MapEntry struct {
	Key, Value any
}

// EitherValue is a decoded Either (or Scala Try: Left is the failure).
type EitherValue struct {
	Left  bool
	Value any
}

// TTLValue is a value with the time it was last written, in epoch
// milliseconds.
type TTLValue struct {
	LastAccess int64
	Value      any
}

// TimerValue is a decoded timer.
type TimerValue struct {
	Timestamp int64
	Key       any
	Namespace any
}

// VoidNamespace is the namespace of state that is not in a window.
type VoidNamespace struct{}

// TimeWindow is a window [Start, End) in epoch milliseconds.
type TimeWindow struct{ Start, End int64 }

// GlobalWindow is the single window of global windowing.
type GlobalWindow struct{}

// OpaqueValue is a value that cannot be decoded without the job's classes.
type OpaqueValue struct {
	// Class is the class of the value, when known.
	Class string
	// Serializer names the Flink serializer that wrote it.
	Serializer string
	Bytes      []byte
}
