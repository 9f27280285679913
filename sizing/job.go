package sizing

import (
	"github.com/stateproc/stateproc/ttl"
)

// Job is what sizing knows about a job's keyed state before any
// projection: measured from a savepoint (MeasureSavepoint) or estimated
// from a plan (Plan.Job). Project turns it into a Report.
type Job struct {
	// Source names the savepoint directory or plan file.
	Source string
	// FromPlan says the numbers are estimates from a plan, not measurements.
	FromPlan bool
	// Now is the time TTL ages are taken at, in epoch milliseconds
	// (savepoints only).
	Now int64
	// HeapOverhead, when set, replaces the heap model: heap bytes are the
	// serialized bytes times a factor in this range.
	HeapOverhead *Range
	Operators    []Operator
}

// Range is a low and a high estimate.
type Range struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

func (r Range) add(o Range) Range { return Range{r.Low + o.Low, r.High + o.High} }

// Operator is one keyed operator.
type Operator struct {
	UID            string
	Parallelism    int
	MaxParallelism int
	States         []State
}

// State is one keyed state or timer service of an operator.
type State struct {
	Name string
	// Kind is value, list, map, reducing, aggregating or timers.
	Kind string
	TTL  *ttl.Config
	// KeyGroups holds one entry per key group of the operator.
	KeyGroups []KeyGroup
	// RecordsPerKey is the records, that is (key, namespace) pairs, per
	// distinct key: more than one for windowed state.
	RecordsPerKey float64
	// PerEntry splits the savepoint bytes of an entry.
	PerEntry Breakdown
	// The heap model's inputs: bytes per record and per entry (including
	// the entry's share of its record's slice), and the shape that gives
	// the per-key-group containers.
	HeapPerRecord, HeapPerEntry float64
	heap                        *heapShape
	// spreadPerKey is set for plans to the records (or timers) per key. A
	// plan fills its key groups evenly, but a hash spreads keys over key
	// groups binomially, and the containers' cost steps with their size:
	// the model averages it over that spread. Savepoints need none, their
	// key groups are measured.
	spreadPerKey float64
	// spreadMemo keeps the last spreadContainer result: a plan's key
	// groups all ask for the same one.
	spreadMemo struct{ keys, cost float64 }
	// PebblePerByte is the Pebble backend's bytes on disk per savepoint
	// byte, and PebbleFrom where that ratio comes from: measured, model or
	// plan.
	PebblePerByte float64
	PebbleFrom    string
	// Sample says what was read to measure; nil for plans.
	Sample *Sample
	Age    *AgeHistogram
	Timers *TimerStats
	// ValueCollection marks a value state whose values are lists or maps.
	ValueCollection bool
}

// KeyGroup is one state's data in one key group.
type KeyGroup struct {
	// Keys counts distinct keys (zero for timers), Entries values, list
	// elements, map entries or timers.
	Keys, Entries float64
	// Bytes is the serialized size before block compression, Stored the
	// size in the savepoint's files (what a full checkpoint writes).
	Bytes, Stored float64
}

// Breakdown is what an entry takes in the savepoint format, on average.
// Key and namespace bytes are counted once per record, so in a map or list
// they are shared by the record's entries. For timers, Value is the 8-byte
// time. Framing is everything else: lengths, counts, and keys repeated
// where a record continues in the next block.
type Breakdown struct {
	Key       float64 `json:"key"`
	Namespace float64 `json:"namespace"`
	MapKey    float64 `json:"map_key"`
	Value     float64 `json:"value"`
	TTL       float64 `json:"ttl"`
	Framing   float64 `json:"framing"`
	Total     float64 `json:"total"`
}

// Sample says which part of a state was read.
type Sample struct {
	// KeyGroups were read out of WithData key groups holding data.
	KeyGroups int `json:"key_groups"`
	WithData  int `json:"with_data"`
	// Entries were read out of the state's Of.
	Entries uint64 `json:"entries"`
	Of      uint64 `json:"of"`
}

// Complete reports whether the whole state was read.
func (s *Sample) Complete() bool { return s == nil || s.Entries == s.Of }

// totals sums the state over its key groups.
func (s *State) totals() KeyGroup {
	var t KeyGroup
	for _, kg := range s.KeyGroups {
		t.Keys += kg.Keys
		t.Entries += kg.Entries
		t.Bytes += kg.Bytes
		t.Stored += kg.Stored
	}
	return t
}
