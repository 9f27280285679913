package sizing

import "github.com/stateproc/stateproc/internal/jsonvalue"

// Report is the result of Project: sizes per state, subtask and slot on
// both backends, what checkpoints write, findings about unbounded growth,
// and the recommendation with the numbers it rests on. Byte counts are
// float64 because projections scale them. Counts of entries, keys and
// timers describe the state as projected, except in Age, Timers and
// Findings, which describe what was measured.
type Report struct {
	Source   string `json:"source"`
	FromPlan bool   `json:"from_plan"`
	// Now is the time TTL ages are taken at (savepoints only).
	Now jsonvalue.Instant `json:"now,omitempty"`
	// HeapOverhead is the plan's factor range when it replaces the model.
	HeapOverhead *Range `json:"heap_overhead,omitempty"`
	// Basis says what the heap and Pebble figures stand for when they are
	// not stateproc's backends.
	Basis          string           `json:"basis,omitempty"`
	Operators      []OperatorReport `json:"operators"`
	Slots          []SlotReport     `json:"slots"`
	Total          Totals           `json:"total"`
	Checkpoints    Checkpoints      `json:"checkpoints"`
	Recommendation Recommendation   `json:"recommendation"`
	Findings       []Finding        `json:"findings"`
}

// Totals are sizes on the savepoint format (the bytes a full checkpoint
// writes), as live heap of the heap backend, and on disk on Pebble.
type Totals struct {
	Savepoint float64 `json:"savepoint"`
	Heap      Range   `json:"heap"`
	Pebble    float64 `json:"pebble"`
}

func (t *Totals) add(o Totals) {
	t.Savepoint += o.Savepoint
	t.Heap = t.Heap.add(o.Heap)
	t.Pebble += o.Pebble
}

// OperatorReport is one operator at the projected parallelism.
type OperatorReport struct {
	UID            string `json:"uid"`
	Parallelism    int    `json:"parallelism"`
	MaxParallelism int    `json:"max_parallelism"`
	// Scale is the factor keys and entries were projected by.
	Scale    float64         `json:"scale"`
	States   []StateReport   `json:"states"`
	Subtasks []SubtaskReport `json:"subtasks"`
	Total    Totals          `json:"total"`
}

// StateReport is one keyed state or timer service.
type StateReport struct {
	Name      string  `json:"name"`
	Kind      string  `json:"kind"`
	TTLMillis int64   `json:"ttl_ms,omitempty"`
	Keys      float64 `json:"keys"`
	Entries   float64 `json:"entries"`
	// PerEntry is the savepoint bytes of an entry, split.
	PerEntry Breakdown `json:"bytes_per_entry"`
	Sample   *Sample   `json:"sample,omitempty"`
	Totals
	// HeapPerEntry is the heap an entry adds: the state's heap less what
	// every key group costs even when empty, over its entries.
	HeapPerEntry Range `json:"heap_per_entry"`
	// PebbleFrom says whether Pebble's size was measured, modelled from
	// the layout, or taken from the plan.
	PebbleFrom string        `json:"pebble_from"`
	Age        *AgeHistogram `json:"age,omitempty"`
	Timers     *TimerStats   `json:"timers,omitempty"`
}

// SubtaskReport is one subtask: the key groups keygroup.ForSubtask gives it
// and what they hold, so skew between subtasks shows.
type SubtaskReport struct {
	Subtask   int    `json:"subtask"`
	KeyGroups string `json:"key_groups"`
	Totals
}

// SlotReport is one task slot, which runs subtask i of every operator
// whose parallelism exceeds i (Flink's slot sharing).
type SlotReport struct {
	Slot int `json:"slot"`
	Totals
}

// Checkpoints estimates what checkpoints write. On the heap every
// checkpoint is full. On Pebble an incremental checkpoint uploads the
// sstables written since the last one: the entries written in the interval
// (ChangeRate of them) at Pebble's bytes per entry, plus whatever
// compaction rewrote, which this estimate leaves out: a large compaction
// makes one checkpoint much bigger.
type Checkpoints struct {
	Full        float64 `json:"full"`
	Incremental float64 `json:"incremental"`
	ChangeRate  float64 `json:"change_rate"`
}

// Recommendation chooses a backend. The heap fits when the busiest slot's
// live heap, times (1 + GOGC/100) for the collector's headroom, is within
// the memory per slot; the heap is chosen when it fits and a full
// checkpoint of the busiest slot stays within the limit, since every heap
// checkpoint is full. Otherwise Pebble, with incremental checkpoints.
type Recommendation struct {
	Backend string `json:"backend"`
	// HeapSlot is the busiest slot, HeapPerSlot its live heap and
	// HeapNeeded that with the collector's headroom.
	HeapSlot      int     `json:"heap_slot"`
	HeapPerSlot   Range   `json:"heap_per_slot"`
	HeapNeeded    Range   `json:"heap_needed"`
	GOGC          int     `json:"gogc"`
	MemoryPerSlot float64 `json:"memory_per_slot"`
	HeapFits      bool    `json:"heap_fits"`
	// PebbleSlot is the slot with the most on disk on Pebble.
	PebbleSlot    int     `json:"pebble_slot"`
	PebblePerSlot float64 `json:"pebble_per_slot"`
	// FullPerSlot is the busiest slot's full checkpoint.
	FullPerSlot         float64 `json:"full_per_slot"`
	FullCheckpointLimit float64 `json:"full_checkpoint_limit"`
	FullTooLarge        bool    `json:"full_too_large"`
}

// Finding kinds.
const (
	// FindingPastTTL: entries past their TTL are still stored.
	FindingPastTTL = "past-ttl"
	// FindingTimerLeak: keys hold timers that pile up (see TimerStats).
	FindingTimerLeak = "timer-leak"
	// FindingTimersOverdue: timers lie well before the job's time.
	FindingTimersOverdue = "timers-overdue"
	// FindingValueCollection: a value state holds whole lists or maps.
	FindingValueCollection = "collection-in-value"
	// FindingNoTTLCollection: a list or map state without TTL.
	FindingNoTTLCollection = "collection-without-ttl"
)

// Finding flags possible unbounded growth in one state.
type Finding struct {
	Operator string `json:"operator"`
	State    string `json:"state"`
	Kind     string `json:"kind"`
	// Count of Of: entries past TTL of all entries, (key, namespace) pairs
	// whose timers pile up of all pairs with timers, or overdue timers of
	// all timers.
	Count float64 `json:"count,omitempty"`
	Of    float64 `json:"of,omitempty"`
	// Bytes are the serialized bytes of the entries past TTL.
	Bytes float64 `json:"bytes,omitempty"`
	// MaxPerKey is the most timers a key holds.
	MaxPerKey int `json:"max_per_key,omitempty"`
	// Timers are the figures of the timer service that a timer finding
	// rests on.
	Timers *TimerStats `json:"timers,omitempty"`
	// Cleanup lists the TTL's cleanup strategies besides cleanup on read.
	Cleanup []string `json:"cleanup,omitempty"`
	// Estimated says the counts come from a sample.
	Estimated bool `json:"estimated,omitempty"`
}
