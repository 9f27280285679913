package savepoint

import (
	"fmt"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// Metadata describes a whole savepoint.
type Metadata struct {
	// ID comes from the checkpoint id that produced the savepoint.
	ID uint64
	// CreatedAt is when the savepoint was taken, in epoch milliseconds, by
	// the job's processing-time clock: the latest processing time of the
	// subtasks at the barrier. Every TTL decision the job made was at or
	// before it.
	CreatedAt int64
	// Watermark is the job's event-time watermark at the savepoint, in
	// epoch milliseconds: the lowest that any operator had reached at the
	// barrier, so every event-time timer at or before it has fired.
	// math.MinInt64 before the first watermark, math.MaxInt64 once the
	// input has ended and been drained. Format version 1 does not record
	// it.
	Watermark int64
	// Lineage lists, oldest first, the rewrites that produced this savepoint
	// from the one the engine wrote: which savepoint each came from and what
	// it did.
	Lineage   []string
	Operators []Operator
	// IDOf, when set, derives an operator's ID from a uid as the layout's
	// job graph does (Apache Flink hashes the uid), so that an operator
	// whose uid the savepoint does not record is still found by it.
	IDOf func(uid string) string
	// Notes are what the layout's reader says about the savepoint as a
	// whole that a report shows beside its operators: what it holds that no
	// operator does, what it does not record.
	Notes []string
}

// Operator finds an operator by uid.
func (m *Metadata) Operator(uid string) (*Operator, bool) {
	for i := range m.Operators {
		if m.Operators[i].UID == uid {
			return &m.Operators[i], true
		}
	}
	return nil, false
}

// Operator is one operator of the job, identified by its uid.
type Operator struct {
	// UID is how tools name the operator: the uid the job gave it, or,
	// in a layout that keys operators by an ID and does not record the uid,
	// the ID.
	UID  string
	Name string
	// ID is the operator's ID in a layout that keys operators by one of
	// its own (Apache Flink's operator ID, in hex); empty otherwise.
	ID             string
	Parallelism    int
	MaxParallelism int
	// KeyHash is the function that mapped key bytes to key groups.
	KeyHash keygroup.Hash
	// Key is the key serializer; its Kind is empty for a non-keyed operator.
	Key             serializers.Snapshot
	States          []KeyedState
	Timers          []TimerService
	OperatorStates  []OperatorState
	BroadcastStates []BroadcastState
	// Unread lists the parts of the operator's state that the layout's
	// reader finds but cannot read, each saying what it is, its layout and
	// its size. Tools that read every entry refuse an operator that has
	// some (see CheckRead); reports list them.
	Unread []string
	// Notes are what else the reader says about the operator's state: what
	// it keeps that no tool reads (raw state an operator's own code
	// writes), values that cannot be decoded without the job's classes.
	Notes []string
}

// Keyed reports whether the operator has a key serializer.
func (o *Operator) Keyed() bool { return o.Key.Kind != "" }

// State finds a keyed state by name.
func (o *Operator) State(name string) (*KeyedState, bool) {
	for i := range o.States {
		if o.States[i].Name == name {
			return &o.States[i], true
		}
	}
	return nil, false
}

// TimerService finds a timer service by name.
func (o *Operator) TimerService(name string) (*TimerService, bool) {
	for i := range o.Timers {
		if o.Timers[i].Name == name {
			return &o.Timers[i], true
		}
	}
	return nil, false
}

// Kind is the primitive of a keyed state.
type Kind uint8

const (
	Value       Kind = 1
	List        Kind = 2
	Map         Kind = 3
	Reducing    Kind = 4
	Aggregating Kind = 5
)

var kindNames = map[Kind]string{Value: "value", List: "list", Map: "map", Reducing: "reducing", Aggregating: "aggregating"}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseKind is the inverse of Kind.String.
func ParseKind(s string) (Kind, error) {
	for k, n := range kindNames {
		if n == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("savepoint: unknown state kind %q", s)
}

// Valid reports whether k is one of the known kinds.
func (k Kind) Valid() bool { _, ok := kindNames[k]; return ok }

// SingleValue reports whether the state holds at most one value per key and
// namespace (value, reducing and aggregating states).
func (k Kind) SingleValue() bool { return k == Value || k == Reducing || k == Aggregating }

// KeyedState is one keyed state descriptor.
type KeyedState struct {
	Name string
	Kind Kind
	// Namespace is the namespace serializer (void unless the state is
	// windowed).
	Namespace serializers.Snapshot
	// MapKey is the map-key serializer of a map state; zero otherwise.
	MapKey serializers.Snapshot
	// Value is the serializer of the value, list element, map value or
	// accumulator, as the job declared it; when TTL is set each stored value
	// is wrapped by the TTL serializer (StoredValue).
	Value serializers.Snapshot
	// TTL is nil when the state has no time-to-live.
	TTL *ttl.Config
	// Notes say what a report should know about the state's values: those
	// that only the job's classes decode, which are kept as bytes.
	Notes []string
}

// StoredValue is the serializer of the bytes stored per value, list element
// or map entry: Value, wrapped with an 8-byte last-modified timestamp when
// the state has TTL.
func (s *KeyedState) StoredValue() serializers.Snapshot {
	if s.TTL == nil {
		return s.Value
	}
	return serializers.Snapshot{Kind: serializers.KindTTL, Args: []serializers.Snapshot{s.Value}}
}

// TimerService is a named set of timers of one operator. Timers are keyed
// data: (key, namespace, timestamp) triples stored per key group.
type TimerService struct {
	Name      string
	Namespace serializers.Snapshot
}

// Distribution says how operator list state is handed out on restore.
type Distribution uint8

const (
	// EvenSplit concatenates every subtask's list and splits it evenly.
	EvenSplit Distribution = 1
	// Union gives every subtask the whole list.
	Union Distribution = 2
)

func (d Distribution) String() string {
	switch d {
	case EvenSplit:
		return "even-split"
	case Union:
		return "union"
	}
	return fmt.Sprintf("distribution(%d)", uint8(d))
}

// OperatorState is non-keyed list state: one list per subtask.
type OperatorState struct {
	Name         string
	Distribution Distribution
	Element      serializers.Snapshot
	// Subtasks holds, per subtask of the operator, its list of serialized
	// elements.
	Subtasks [][][]byte
}

// BroadcastState is a map that every subtask holds identically. It is stored
// once.
type BroadcastState struct {
	Name    string
	Key     serializers.Snapshot
	Value   serializers.Snapshot
	Entries []BroadcastEntry // sorted by Key bytes
}

// BroadcastEntry is one serialized map entry of a broadcast state.
type BroadcastEntry struct {
	Key, Value []byte
}
