package flinkfmt

import (
	"encoding/binary"
	"fmt"
)

// Snapshot is a serializer snapshot as TypeSerializerSnapshot's
// writeVersionedSnapshot writes it: its class, its version and its body.
// It is how a savepoint built from scratch (a benchmark's, a test's)
// records its serializers; a rewrite carries the input's over as bytes
// instead.
type Snapshot struct {
	Class   string
	Version int
	Body    []byte
}

// Snapshot classes of Flink's serializers that the builders below write.
const (
	basePkg                  = "org.apache.flink.api.common.typeutils.base."
	StringSnapshotClass      = basePkg + "StringSerializer$StringSerializerSnapshot"
	LongSnapshotClass        = basePkg + "LongSerializer$LongSerializerSnapshot"
	ListSnapshotClass        = basePkg + "ListSerializerSnapshot"
	MapSnapshotClass         = basePkg + "MapSerializerSnapshot"
	VoidNamespaceClass       = "org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot"
	TTLSnapshotClass         = "org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot"
	TimerSnapshotClass       = "org.apache.flink.streaming.api.operators.TimerSerializerSnapshot"
	TupleSnapshotClass       = "org.apache.flink.api.java.typeutils.runtime.TupleSerializerSnapshot"
	AvroSnapshotClass        = "org.apache.flink.formats.avro.typeutils.AvroSerializerSnapshot"
	compositeSnapshotVersion = 3
)

// Magic numbers of CompositeTypeSerializerSnapshot's outer snapshot and of
// NestedSerializersSnapshotDelegate.
const (
	compositeMagic = 911108
	nestedMagic    = 1333245
)

// SimpleSnapshot is a SimpleTypeSerializerSnapshot (a string, long, void
// namespace serializer): version 3 has no body.
func SimpleSnapshot(class string) Snapshot { return Snapshot{Class: class, Version: 3} }

// CompositeSnapshot is a CompositeTypeSerializerSnapshot of version 3: the
// composite magic, the outer snapshot's version and body, then the nested
// snapshots behind NestedSerializersSnapshotDelegate's magic and version.
func CompositeSnapshot(class string, outerVersion int, outer []byte, nested ...Snapshot) (Snapshot, error) {
	b := binary.BigEndian.AppendUint32(nil, compositeMagic)
	b = binary.BigEndian.AppendUint32(b, uint32(outerVersion))
	b = append(b, outer...)
	b = binary.BigEndian.AppendUint32(b, nestedMagic)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint32(b, uint32(len(nested)))
	for _, n := range nested {
		var err error
		if b, err = n.appendTo(b); err != nil {
			return Snapshot{}, err
		}
	}
	return Snapshot{Class: class, Version: compositeSnapshotVersion, Body: b}, nil
}

// The outer snapshot versions Flink writes: TupleSerializerSnapshot and
// TimerSerializerSnapshot write 2, ListSerializerSnapshot 1 (all three as
// the reference savepoints record them), MapSerializerSnapshot 1 and
// TtlSerializerSnapshot 2 (as Flink's sources give them).

// ListSnapshot is ListSerializerSnapshot over the element's.
func ListSnapshot(elem Snapshot) (Snapshot, error) {
	return CompositeSnapshot(ListSnapshotClass, 1, nil, elem)
}

// MapSnapshot is MapSerializerSnapshot over the key's and value's.
func MapSnapshot(key, value Snapshot) (Snapshot, error) {
	return CompositeSnapshot(MapSnapshotClass, 1, nil, key, value)
}

// TTLSnapshot is TtlSerializerSnapshot: the long timestamp and the value.
func TTLSnapshot(value Snapshot) (Snapshot, error) {
	return CompositeSnapshot(TTLSnapshotClass, 2, nil, SimpleSnapshot(LongSnapshotClass), value)
}

// TimerSnapshot is TimerSerializerSnapshot over the key's and namespace's.
func TimerSnapshot(key, namespace Snapshot) (Snapshot, error) {
	return CompositeSnapshot(TimerSnapshotClass, 2, nil, key, namespace)
}

// TupleSnapshot is TupleSerializerSnapshot of the tuple class over its
// fields'.
func TupleSnapshot(tupleClass string, fields ...Snapshot) (Snapshot, error) {
	outer, err := appendUTF(nil, tupleClass)
	if err != nil {
		return Snapshot{}, err
	}
	return CompositeSnapshot(TupleSnapshotClass, 2, outer, fields...)
}

// AvroSnapshot is AvroSerializerSnapshot of version 2, which Flink 1.7 and
// later read: the runtime class and the writer schema.
func AvroSnapshot(runtimeClass, schema string) (Snapshot, error) {
	b, err := appendUTF(nil, runtimeClass)
	if err == nil {
		b, err = appendUTF(b, schema)
	}
	return Snapshot{Class: AvroSnapshotClass, Version: 2, Body: b}, err
}

// Bytes returns the snapshot as writeVersionedSnapshot writes it.
func (s Snapshot) Bytes() ([]byte, error) { return s.appendTo(nil) }

func (s Snapshot) appendTo(b []byte) ([]byte, error) {
	b, err := appendUTF(b, s.Class)
	if err != nil {
		return b, err
	}
	b = binary.BigEndian.AppendUint32(b, uint32(int32(s.Version)))
	return append(b, s.Body...), nil
}

// StateSpec is one state of a keyed-stream header built from scratch.
type StateSpec struct {
	Name string
	// Kind is the state's primitive, or Timers for a timer service.
	Kind Kind
	// Value is the state serializer's snapshot: the list or map serializer
	// for those kinds, TTL-wrapped where the state has TTL; the timer
	// serializer for a timer service. Namespace is unused for a timer
	// service, whose timers carry their namespace.
	Namespace, Value Snapshot
}

// Keyed-stream header constants of the current format (Flink 1.7 on).
const (
	currentProxyVersion  = 6
	snapshotProxyVersion = 2
	keyedStateTypeOption = "KEYED_STATE_TYPE"
)

// NewCanonicalHeader builds the keyed-stream header Flink 1.7 and later
// write (KeyedBackendSerializationProxy version 6) for keys of the key
// snapshot and the given states, whose ids are their positions.
func NewCanonicalHeader(key Snapshot, compressed bool, states []StateSpec) (*CanonicalHeader, error) {
	e := &encoder{}
	e.i32(currentProxyVersion)
	if compressed {
		e.u8(1)
	} else {
		e.u8(0)
	}
	e.proxied(key)
	if len(states) >= endOfKeyGroup {
		return nil, fmt.Errorf("flinkfmt: %d states in one header", len(states))
	}
	e.b = binary.BigEndian.AppendUint16(e.b, uint16(len(states)))
	h := &CanonicalHeader{Compressed: compressed}
	for i, s := range states {
		e.utf(s.Name)
		// The meta info's options and serializers as Flink's registered
		// meta infos compute them; the serializers in the order of the
		// HashMap they are kept in.
		switch s.Kind {
		case Timers:
			e.i32(int32(PriorityQueue))
			e.i32(0)
			e.i32(1)
			e.utf(valueSerializerKey)
			e.proxied(s.Value)
		case Value, List, Map, Reducing, Aggregating:
			e.i32(int32(KeyValue))
			e.i32(1)
			e.utf(keyedStateTypeOption)
			e.utf(keyedStateTypeName(s.Kind))
			e.i32(2)
			e.utf(valueSerializerKey)
			e.proxied(s.Value)
			e.utf(namespaceSerializerKey)
			e.proxied(s.Namespace)
		default:
			return nil, fmt.Errorf("flinkfmt: state %q of kind %q", s.Name, s.Kind)
		}
		h.IDs = append(h.IDs, i)
	}
	if e.err != nil {
		return nil, e.err
	}
	h.Bytes = e.b
	return h, nil
}

func keyedStateTypeName(k Kind) string {
	for name, kind := range keyedStateTypes {
		if kind == k {
			return name
		}
	}
	return ""
}

// proxied writes a snapshot behind TypeSerializerSnapshotSerializationProxy's
// version, as a state meta info holds it.
func (e *encoder) proxied(s Snapshot) {
	e.i32(snapshotProxyVersion)
	var err error
	if e.b, err = s.appendTo(e.b); err != nil {
		e.fail(err)
	}
}
