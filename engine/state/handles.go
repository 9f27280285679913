package state

// Namespaced is embedded by every handle. A handle starts in the void
// namespace; SetNamespace moves it to ns, a value of the descriptor's
// namespace type (for example serializers.Window).
type Namespaced interface {
	SetNamespace(ns any) error
}

// ValueState holds one value per key and namespace.
type ValueState[T any] interface {
	Namespaced
	// Value returns the value and whether there is one.
	Value() (T, bool, error)
	Update(v T) error
	Clear() error
}

// ListState holds a list per key and namespace.
type ListState[T any] interface {
	Namespaced
	// Get returns the elements in order; nil when empty.
	Get() ([]T, error)
	Add(v T) error
	AddAll(vs []T) error
	// Update replaces the list; an empty list clears it.
	Update(vs []T) error
	Clear() error
}

// MapState holds a map per key and namespace.
type MapState[K, V any] interface {
	Namespaced
	Get(k K) (V, bool, error)
	Put(k K, v V) error
	Remove(k K) error
	Contains(k K) (bool, error)
	// Range calls fn for each entry in serialized map-key order until fn
	// returns false. fn must not modify the state.
	Range(fn func(k K, v V) bool) error
	IsEmpty() (bool, error)
	Clear() error
}

// ReducingState folds added values into one.
type ReducingState[T any] interface {
	Namespaced
	Get() (T, bool, error)
	Add(v T) error
	Clear() error
}

// AggregatingState folds added inputs into an accumulator and returns its
// result.
type AggregatingState[IN, OUT any] interface {
	Namespaced
	Get() (OUT, bool, error)
	Add(in IN) error
	Clear() error
}
