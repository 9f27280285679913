package diff

import (
	"github.com/stateproc/stateproc/internal/jsonvalue"
)

// Report is what differs between two savepoints. Its JSON form is the
// output of stateproc diff -o json.
type Report struct {
	A SavepointInfo `json:"a"`
	B SavepointInfo `json:"b"`
	// Differ says whether keyed data, timers, operator or broadcast state
	// differ: what stateproc diff --exit-code exits 5 on.
	Differ         bool                `json:"differ"`
	Operators      []OperatorDiff      `json:"operators"`
	States         []StateDiff         `json:"states"`
	OperatorStates []OperatorStateDiff `json:"operator_states"`
}

// SavepointInfo says which savepoint a side is.
type SavepointInfo struct {
	Path    string            `json:"path"`
	Layout  string            `json:"layout"`
	ID      uint64            `json:"id"`
	Created jsonvalue.Instant `json:"created"`
}

// Presence says which sides have an operator or a state.
type Presence string

const (
	InBoth Presence = "both"
	OnlyA  Presence = "a"
	OnlyB  Presence = "b"
)

// OperatorDiff is one operator, matched by uid.
type OperatorDiff struct {
	UID string   `json:"uid"`
	In  Presence `json:"in"`
	// A and B are absent on the side that lacks the operator.
	A *OperatorShape `json:"a,omitempty"`
	B *OperatorShape `json:"b,omitempty"`
	// Rebucketed says that the max parallelism differs, so B's keyed
	// entries were moved to A's key groups before they were compared.
	Rebucketed bool `json:"rebucketed"`
}

// OperatorShape is what tells an operator's two sides apart without being
// a difference of its state.
type OperatorShape struct {
	Name           string `json:"name"`
	Parallelism    int    `json:"parallelism"`
	MaxParallelism int    `json:"max_parallelism"`
	KeyType        string `json:"key_type,omitempty"`
}

// StateDiff is one keyed state or timer service, matched by operator uid,
// name and whether it is a timer service.
type StateDiff struct {
	Operator string `json:"operator"`
	Name     string `json:"name"`
	// Kind is the state's kind (value, list, map, reducing, aggregating)
	// or "timers"; "A-kind -> B-kind" when the kinds differ, and then
	// every entry of each side counts as only on its side.
	Kind string   `json:"kind"`
	In   Presence `json:"in"`
	// SerializersChanged says that a serializer snapshot of the state
	// (value, map key, namespace, with its schema) or its TTL differs
	// between the sides, as after a migration.
	SerializersChanged bool `json:"serializers_changed"`
	// Keys counts keys by what happened to them; absent for timer
	// services, whose timers are compared one by one.
	Keys    *Counts `json:"keys,omitempty"`
	Entries Counts  `json:"entries"`
	// A and B are each side's figures, absent on the side that lacks the
	// state.
	A        *Figures  `json:"a,omitempty"`
	B        *Figures  `json:"b,omitempty"`
	Examples *Examples `json:"examples,omitempty"`
}

// Counts sorts keys or entries by what happened to them from A to B.
type Counts struct {
	OnlyA     uint64 `json:"only_a"`
	OnlyB     uint64 `json:"only_b"`
	Changed   uint64 `json:"changed"`
	Unchanged uint64 `json:"unchanged"`
}

func (c *Counts) add(o Counts) {
	c.OnlyA += o.OnlyA
	c.OnlyB += o.OnlyB
	c.Changed += o.Changed
	c.Unchanged += o.Unchanged
}

// Differ says whether anything is only on one side or changed.
func (c Counts) Differ() bool { return c.OnlyA+c.OnlyB+c.Changed > 0 }

// Figures are one side's totals of a state, from its index.
type Figures struct {
	Keys    uint64 `json:"keys"`
	Entries uint64 `json:"entries"`
	Bytes   uint64 `json:"bytes"`
	// Type is the value serializer (or a timer service's namespace), so
	// that a migration shows.
	Type string `json:"type"`
}

// OperatorStateDiff is one operator list state or broadcast state, whose
// Distribution is "broadcast". Operator list state compares as a multiset
// of elements, so none is changed; broadcast state by key.
type OperatorStateDiff struct {
	Operator     string    `json:"operator"`
	Name         string    `json:"name"`
	Distribution string    `json:"distribution"`
	In           Presence  `json:"in"`
	Entries      Counts    `json:"entries"`
	A            *Figures  `json:"a,omitempty"`
	B            *Figures  `json:"b,omitempty"`
	Examples     *Examples `json:"examples,omitempty"`
}

// Examples are the first keys of each kind, in key-group order, up to
// Options.Examples of each.
type Examples struct {
	OnlyA     []Example `json:"only_a"`
	OnlyB     []Example `json:"only_b"`
	Changed   []Example `json:"changed"`
	Unchanged []Example `json:"unchanged"`
}

func (e *Examples) list(k kind) *[]Example {
	switch k {
	case kindOnlyA:
		return &e.OnlyA
	case kindOnlyB:
		return &e.OnlyB
	case kindChanged:
		return &e.Changed
	}
	return &e.Unchanged
}

// Example is one key with its entries, decoded as stateproc dump prints
// them: for a key only on one side its entries there, for a changed key
// the entries that differ on each side, for an unchanged key its entries.
// At most MaxExampleEntries are listed per side; More says there are more.
type Example struct {
	// Key is absent for operator list state, whose elements have none.
	Key  any     `json:"key,omitempty"`
	A    []Entry `json:"a,omitempty"`
	B    []Entry `json:"b,omitempty"`
	More bool    `json:"more,omitempty"`
}

// MaxExampleEntries bounds the entries an example lists per side.
const MaxExampleEntries = 8

// kind is what happened to a key or entry.
type kind uint8

const (
	kindOnlyA kind = iota
	kindOnlyB
	kindChanged
	kindUnchanged
	kinds
)

func (c *Counts) count(k kind, n uint64) {
	switch k {
	case kindOnlyA:
		c.OnlyA += n
	case kindOnlyB:
		c.OnlyB += n
	case kindChanged:
		c.Changed += n
	default:
		c.Unchanged += n
	}
}
