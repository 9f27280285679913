package engine

import (
	"github.com/stateproc/stateproc/engine/internal/coord"
	"github.com/stateproc/stateproc/engine/internal/flow"
)

// MaxWatermark is the watermark of a finished input: every event-time timer
// fires at it.
const MaxWatermark = flow.MaxWatermark

// MinWatermark is the watermark before any was received.
const MinWatermark = flow.MinWatermark

// record is one element in flight with its event time. For a keyed edge the
// sender has already serialized the key; key points into its batch's arena.
type record[T any] struct {
	v   T
	ts  int64
	key []byte
}

// The gates, barriers and alignment groups of this engine's subtasks, and
// their coordinator.
type (
	gate             = flow.Gate[*checkpoint]
	control          = flow.Control[*checkpoint]
	alignGroup       = flow.AlignGroup[*task]
	checkpoint       = coord.Checkpoint
	coordinator      = coord.Coordinator[*task]
	message          = coord.Message[*task]
	sourceCmd        = coord.Command
	savepointRequest = coord.Request
)

// batch is what travels on a channel: records, then at most one control
// event. Batching amortizes channel operations over many records.
type batch[T any] struct {
	recs  []record[T]
	arena []byte
	ctl   control
}
