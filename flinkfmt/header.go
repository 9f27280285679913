package flinkfmt

import (
	"errors"
	"fmt"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
	"github.com/stateproc/stateproc/flinkfmt/typeser"
)

// BackendStateType is StateMetaInfoSnapshot.BackendStateType.
type BackendStateType int32

// Backend state types, by ordinal.
const (
	KeyValue      BackendStateType = 0
	OperatorList  BackendStateType = 1
	BroadcastMap  BackendStateType = 2
	PriorityQueue BackendStateType = 3
	KeyValueV2    BackendStateType = 4
)

func (t BackendStateType) String() string {
	switch t {
	case KeyValue:
		return "KEY_VALUE"
	case OperatorList:
		return "OPERATOR"
	case BroadcastMap:
		return "BROADCAST"
	case PriorityQueue:
		return "PRIORITY_QUEUE"
	case KeyValueV2:
		return "KEY_VALUE_V2"
	}
	return fmt.Sprintf("backend-state-type(%d)", int32(t))
}

// Kind is the primitive of a keyed state, as KEYED_STATE_TYPE records it.
type Kind string

// Keyed state kinds; Timers is a priority-queue state.
const (
	Value       Kind = "value"
	List        Kind = "list"
	Map         Kind = "map"
	Reducing    Kind = "reducing"
	Aggregating Kind = "aggregating"
	Folding     Kind = "folding"
	Timers      Kind = "timers"
)

var keyedStateTypes = map[string]Kind{
	"VALUE": Value, "LIST": List, "MAP": Map, "REDUCING": Reducing, "AGGREGATING": Aggregating, "FOLDING": Folding,
}

// Serializer keys of a StateMetaInfoSnapshot.
const (
	keySerializerKey       = "KEY_SERIALIZER"
	namespaceSerializerKey = "NAMESPACE_SERIALIZER"
	valueSerializerKey     = "VALUE_SERIALIZER"
	userKeySerializerKey   = "USER_KEY_SERIALIZER"
)

// StateMeta is one StateMetaInfoSnapshot: a state's name, type, options
// and serializers.
type StateMeta struct {
	Name    string
	Backend BackendStateType
	// Kind is the keyed state's primitive, or Timers for a priority queue.
	Kind    Kind
	Options map[string]string
	// Serializers by their key (KEY_SERIALIZER, NAMESPACE_SERIALIZER,
	// VALUE_SERIALIZER, USER_KEY_SERIALIZER, ...).
	Serializers map[string]*typeser.Serializer
	// Namespace, Value and MapKey are the serializers by role (a timer
	// service's Namespace is its timers' namespace). Value is the
	// whole state serializer: for a list state the list, for a map state
	// the map, with TTL wrappers where the state has TTL.
	Namespace, Value, MapKey *typeser.Serializer
	// Stored is the serializer of one stored value: the value, list
	// element or map value, TTL-wrapped if the state has TTL; the timer for
	// a priority queue.
	Stored *typeser.Serializer
	// TTL reports that the stored values carry a last-access timestamp.
	TTL bool
}

// KeyedHeader is the KeyedBackendSerializationProxy that starts every keyed
// state stream.
type KeyedHeader struct {
	ProxyVersion int
	Compressed   bool
	Key          *typeser.Serializer
	States       []*StateMeta
	// End is the offset in the stream just after the header.
	End int64
	// raw is the header's bytes, keyEnd where its key serializer ends and
	// spans where each state's meta info lies in it, so that a writer
	// carries them over as they are.
	raw    []byte
	keyEnd int
	spans  [][2]int
}

// Keyed backend serialization proxy versions: 3 is Flink 1.3, 4 Flink 1.4
// and 1.5, 5 Flink 1.6, and Flink 1.7 and later write 6. Before 6 the
// serializers are Java-serialized (typeser.ReadLegacySerializers).
const (
	minProxyVersion = 6
	maxProxyVersion = 6
)

// stateDescriptorTypes are StateDescriptor.Type's constants by ordinal, as
// the meta infos of Flink 1.3 to 1.5 record a state's kind.
var stateDescriptorTypes = []string{"UNKNOWN", "VALUE", "LIST", "REDUCING", "FOLDING", "AGGREGATING", "MAP"}

// parseLegacyKeyedHeader reads the rest of a header of versions 3 to 5.
func parseLegacyKeyedHeader(r *wire.Buf, h *KeyedHeader) (*KeyedHeader, error) {
	if h.ProxyVersion >= 4 {
		h.Compressed = r.Bool()
	}
	keys, err := typeser.ReadLegacySerializers(r)
	if err != nil {
		return nil, snapshotErr("key serializer", err)
	}
	if len(keys) != 1 {
		return nil, corruptf("%d key serializers, want 1", len(keys))
	}
	h.Key = keys[0]
	h.keyEnd = r.Pos()
	n := int(r.U16())
	for i := 0; i < n; i++ {
		var m *StateMeta
		var err error
		start := r.Pos()
		if h.ProxyVersion == 5 {
			m, err = parseStateMetaV5(r)
		} else {
			m, err = parseStateMetaV3(r)
		}
		if err != nil {
			return nil, err
		}
		if err := m.resolve(); err != nil {
			return nil, err
		}
		h.States = append(h.States, m)
		h.spans = append(h.spans, [2]int{start, r.Pos()})
	}
	if err := r.Err(); err != nil {
		return nil, corrupt(err)
	}
	h.End = r.Offset()
	h.raw = r.Bytes()[:r.Pos()]
	return h, nil
}

// parseStateMetaV3 reads KeyedBackendStateMetaInfoReaderV3V4's format: the
// state descriptor type, the name, then the namespace and state
// serializers.
func parseStateMetaV3(r *wire.Buf) (*StateMeta, error) {
	t := r.I32()
	m := &StateMeta{Name: r.UTF("state name"), Backend: KeyValue, Options: map[string]string{}, Serializers: map[string]*typeser.Serializer{}}
	if err := r.Err(); err != nil {
		return nil, corrupt(err)
	}
	if t < 0 || int(t) >= len(stateDescriptorTypes) {
		return nil, corruptf("state %q: state descriptor type %d", m.Name, t)
	}
	m.Options["KEYED_STATE_TYPE"] = stateDescriptorTypes[t]
	sers, err := typeser.ReadLegacySerializers(r)
	if err != nil {
		return nil, snapshotErr(fmt.Sprintf("state %q serializers", m.Name), err)
	}
	if len(sers) != 2 {
		return nil, corruptf("state %q has %d serializers, want 2", m.Name, len(sers))
	}
	m.Serializers[namespaceSerializerKey], m.Serializers[valueSerializerKey] = sers[0], sers[1]
	return m, nil
}

// parseStateMetaV5 reads Flink 1.6's format: as the current one, but the
// serializer keys come first and the serializers after them, Java-serialized.
func parseStateMetaV5(r *wire.Buf) (*StateMeta, error) {
	m := &StateMeta{Name: r.UTF("state name"), Backend: BackendStateType(r.I32()), Options: map[string]string{}, Serializers: map[string]*typeser.Serializer{}}
	n := r.Count("state options", 4)
	for i := 0; i < n && r.Err() == nil; i++ {
		k := r.UTF("option key")
		m.Options[k] = r.UTF("option value")
	}
	n = r.Count("state serializers", 2)
	keys := make([]string, 0, n)
	for i := 0; i < n && r.Err() == nil; i++ {
		keys = append(keys, r.UTF("serializer key"))
	}
	if err := r.Err(); err != nil {
		return nil, corrupt(err)
	}
	sers, err := typeser.ReadLegacySerializers(r)
	if err != nil {
		return nil, snapshotErr(fmt.Sprintf("state %q serializers", m.Name), err)
	}
	if len(sers) != len(keys) {
		return nil, corruptf("state %q names %d serializers and has %d", m.Name, len(keys), len(sers))
	}
	for i, k := range keys {
		m.Serializers[k] = sers[i]
	}
	if m.Backend < KeyValue || m.Backend > KeyValueV2 {
		return nil, corruptf("state %q: backend state type %d", m.Name, m.Backend)
	}
	return m, nil
}

// parseOperatorMetaV2 reads OperatorBackendStateMetaInfoReaderV2V3's format
// (Flink 1.3 to 1.5): the name, the mode, and one serializer for list state
// or two, key then value, for broadcast state.
func parseOperatorMetaV2(r *wire.Buf) (*StateMeta, error) {
	m := &StateMeta{Name: r.UTF("state name"), Backend: OperatorList, Options: map[string]string{}, Serializers: map[string]*typeser.Serializer{}}
	mode := r.U8()
	if err := r.Err(); err != nil {
		return nil, corrupt(err)
	}
	if mode > byte(Broadcast) {
		return nil, corruptf("operator state %q: mode %d", m.Name, mode)
	}
	m.Options["OPERATOR_STATE_DISTRIBUTION_MODE"] = Distribution(mode).String()
	sers, err := typeser.ReadLegacySerializers(r)
	if err != nil {
		return nil, snapshotErr(fmt.Sprintf("operator state %q serializers", m.Name), err)
	}
	switch len(sers) {
	case 1:
		m.Serializers[valueSerializerKey] = sers[0]
	case 2:
		m.Backend = BroadcastMap
		m.Serializers[keySerializerKey], m.Serializers[valueSerializerKey] = sers[0], sers[1]
	default:
		return nil, corruptf("operator state %q has %d serializers", m.Name, len(sers))
	}
	return m, nil
}

// ParseKeyedHeader reads the header of a keyed state stream.
func ParseKeyedHeader(r *wire.Buf) (*KeyedHeader, error) {
	h := &KeyedHeader{ProxyVersion: int(r.I32())}
	if err := r.Err(); err != nil {
		return nil, corrupt(err)
	}
	if h.ProxyVersion < 3 || h.ProxyVersion > maxProxyVersion {
		return nil, corruptf("keyed state header version %d, want 3 to %d", h.ProxyVersion, maxProxyVersion)
	}
	if h.ProxyVersion < minProxyVersion {
		return parseLegacyKeyedHeader(r, h)
	}
	h.Compressed = r.Bool()
	key, err := typeser.ReadProxied(r)
	if err != nil {
		return nil, snapshotErr("key serializer", err)
	}
	h.Key = key
	h.keyEnd = r.Pos()
	n := int(r.U16())
	for i := 0; i < n; i++ {
		start := r.Pos()
		m, err := parseStateMeta(r, true)
		if err != nil {
			return nil, err
		}
		h.States = append(h.States, m)
		h.spans = append(h.spans, [2]int{start, r.Pos()})
	}
	if err := r.Err(); err != nil {
		return nil, corrupt(err)
	}
	h.End = r.Offset()
	h.raw = r.Bytes()[:r.Pos()]
	return h, nil
}

func snapshotErr(what string, err error) error {
	if errors.Is(err, typeser.ErrUnsupported) {
		return &problem{msg: what + ": " + err.Error(), kind: []error{ErrUnsupported, err}}
	}
	return corrupt(fmt.Errorf("%s: %w", what, err))
}

// parseStateMeta reads StateMetaInfoSnapshotReadersWriters' current
// format.
func parseStateMeta(r *wire.Buf, keyed bool) (*StateMeta, error) {
	m := &StateMeta{Name: r.UTF("state name"), Backend: BackendStateType(r.I32()), Options: map[string]string{}, Serializers: map[string]*typeser.Serializer{}}
	n := r.Count("state options", 4)
	for i := 0; i < n && r.Err() == nil; i++ {
		k := r.UTF("option key")
		m.Options[k] = r.UTF("option value")
	}
	n = r.Count("state serializers", 6)
	if err := r.Err(); err != nil {
		return nil, corrupt(err)
	}
	for i := 0; i < n; i++ {
		k := r.UTF("serializer key")
		if err := r.Err(); err != nil {
			return nil, corrupt(err)
		}
		s, err := typeser.ReadProxied(r)
		if err != nil {
			return nil, snapshotErr(fmt.Sprintf("state %q %s", m.Name, k), err)
		}
		m.Serializers[k] = s
	}
	if m.Backend < KeyValue || m.Backend > KeyValueV2 {
		return nil, corruptf("state %q: backend state type %d", m.Name, m.Backend)
	}
	if !keyed {
		return m, nil
	}
	if err := m.resolve(); err != nil {
		return nil, err
	}
	return m, nil
}

// resolve picks the serializers by role and unwraps list, map and TTL
// layers to the stored value.
func (m *StateMeta) resolve() error {
	m.Value = m.Serializers[valueSerializerKey]
	m.Namespace = m.Serializers[namespaceSerializerKey]
	if m.Value == nil {
		return corruptf("state %q has no value serializer", m.Name)
	}
	if m.Backend == PriorityQueue {
		m.Kind = Timers
		m.Stored = m.Value
		if m.Value.Type.Kind != typeser.KindTimer || len(m.Value.Args) != 2 {
			return unsupportedf("priority queue %q holds %s, not timers", m.Name, m.Value.Type)
		}
		m.Namespace = m.Value.Args[1]
		return nil
	}
	if m.Namespace == nil {
		return corruptf("state %q has no namespace serializer", m.Name)
	}
	kind, ok := keyedStateTypes[m.Options["KEYED_STATE_TYPE"]]
	if !ok {
		return corruptf("state %q: keyed state type %q", m.Name, m.Options["KEYED_STATE_TYPE"])
	}
	m.Kind = kind
	m.Stored = m.Value
	switch kind {
	case List:
		if m.Value.Type.Kind != typeser.KindList || len(m.Value.Args) != 1 {
			return corruptf("list state %q has value serializer %s", m.Name, m.Value.Type)
		}
		m.Stored = m.Value.Args[0]
	case Map:
		if m.Value.Type.Kind != typeser.KindMap || len(m.Value.Args) != 2 {
			return corruptf("map state %q has value serializer %s", m.Name, m.Value.Type)
		}
		m.MapKey = m.Value.Args[0]
		m.Stored = m.Value.Args[1]
	}
	m.TTL = m.Stored.Type.Kind == typeser.KindTTL
	return nil
}

// UserValue is the serializer of the value the job stored, inside any TTL
// wrapper.
func (m *StateMeta) UserValue() *typeser.Serializer {
	if m.TTL && len(m.Stored.Args) == 2 {
		return m.Stored.Args[1]
	}
	return m.Stored
}
