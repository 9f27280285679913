package state

import (
	"context"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// Backend holds the keyed state of one operator subtask: every state the
// operator declares, for the key groups the subtask owns.
//
// A Backend is used by one goroutine at a time.
type Backend interface {
	// KeyGroups is the range of key groups this backend owns.
	KeyGroups() keygroup.Range
	MaxParallelism() int

	// SetCurrentKey scopes every handle to key, given as the key
	// serializer's bytes. It fails when the key's group is not owned.
	SetCurrentKey(key []byte) error
	// ClearCurrentKey leaves the backend without a current key, as a
	// broadcast element is processed: a keyed access then fails with
	// ErrNoCurrentKey.
	ClearCurrentKey()
	CurrentKey() []byte
	CurrentKeyGroup() int

	// RegisterValue, RegisterList and RegisterMap declare a state and return
	// its store. Reducing and aggregating states are value stores. Declaring
	// the same name twice is an error.
	RegisterValue(spec *Spec) (RawValue, error)
	RegisterList(spec *Spec) (RawList, error)
	RegisterMap(spec *Spec) (RawMap, error)
	// Timers declares a timer service whose timers carry namespaces
	// serialized by ns.
	Timers(name string, ns serializers.Serializer) (Timers, error)

	// Snapshot writes every owned key group of every declared state and
	// timer service into f, as operator op of the savepoint whose metadata
	// describes the operator as meta. States with full-snapshot cleanup leave
	// out entries expired at now.
	Snapshot(ctx context.Context, f *snapshotfmt.DataFileWriter, op int, meta *savepoint.Operator, now int64) error
	// Restore loads the owned key groups of operator op of src, a savepoint
	// or checkpoint of any layout. Every state and timer service in it must
	// be declared first, unless opts allows dropping it.
	Restore(ctx context.Context, src savepoint.Source, op int, opts RestoreOptions) error

	Close() error
}

// Sweeper is implemented by backends that clean up expired entries in the
// background (Pebble, which has no compaction filter). The runtime calls
// Sweep from the processing-time clock.
type Sweeper interface {
	// Sweep examines up to the budget of each TTL state with a sweep budget,
	// resuming where the previous call stopped, and deletes what is expired
	// at now. It returns the number of entries deleted.
	Sweep(now int64) (int, error)
}

// Cell is a stored value with its last-modified time. Timestamp is
// meaningful only for states with TTL.
type Cell struct {
	Value     any
	Timestamp int64
}

// RawValue stores one value per (current key, namespace).
type RawValue interface {
	Get(ns []byte) (Cell, bool, error)
	Put(ns []byte, c Cell) error
	Delete(ns []byte) error
}

// RawList stores a list per (current key, namespace).
type RawList interface {
	// Get returns the elements in list order, nil when there are none.
	Get(ns []byte) ([]Cell, error)
	Append(ns []byte, cells ...Cell) error
	// Replace sets the whole list; an empty list deletes it.
	Replace(ns []byte, cells []Cell) error
}

// RawMap stores a map per (current key, namespace). Map keys are compared by
// their serialized bytes.
type RawMap interface {
	Get(ns []byte, mapKey any) (Cell, bool, error)
	Put(ns []byte, mapKey any, c Cell) error
	Delete(ns []byte, mapKey any) error
	// Range calls fn for every entry in map-key byte order until fn returns
	// false. fn must not modify the map.
	Range(ns []byte, fn func(mapKey any, c Cell) bool) error
	IsEmpty(ns []byte) (bool, error)
	Clear(ns []byte) error
}

// IncrementalCleaner is implemented by the heap backend's stores: each call
// examines up to n entries of the whole state, resuming where the last call
// stopped, and removes those for which expired returns true.
type IncrementalCleaner interface {
	CleanupIncrementally(n int, expired func(lastModified int64) bool)
}

// Timer is one registered timer.
type Timer struct {
	Timestamp      int64
	Key, Namespace []byte
}

// Timers is a timer service: timers per (key, namespace, time), at most one
// of each, fired in (time, key, namespace) order.
type Timers interface {
	// Register adds a timer for the current key; registering an existing
	// timer again is a no-op.
	Register(ns []byte, ts int64) error
	// Delete removes a timer of the current key, if present.
	Delete(ns []byte, ts int64) error
	// Earliest returns the time of the earliest timer.
	Earliest() (int64, bool, error)
	// Pop removes and returns the earliest timer if its time is <= upTo.
	Pop(upTo int64) (Timer, bool, error)
}

// RestoreOptions controls Backend.Restore.
type RestoreOptions struct {
	// AllowNonRestoredState drops states and timer services of the savepoint
	// that the job no longer declares, instead of failing.
	AllowNonRestoredState bool
	// Now is the processing time used as last-modified time when a state
	// gains a TTL.
	Now int64
}
