package engine

import "math"

// MaxWatermark is the watermark of a finished input: every event-time timer
// fires at it.
const MaxWatermark = math.MaxInt64

// MinWatermark is the watermark before any was received.
const MinWatermark = math.MinInt64

// record is one element in flight with its event time. For a keyed edge the
// sender has already serialized the key; key points into its batch's arena.
type record[T any] struct {
	v   T
	ts  int64
	key []byte
}

type controlKind uint8

const (
	noControl controlKind = iota
	watermarkControl
	barrierControl
	endControl
)

// control is an event that flows in order with the records: a watermark, a
// checkpoint barrier, or the end of the channel.
type control struct {
	kind controlKind
	// watermark carries the watermark's time.
	watermark int64
	// barrier carries the checkpoint for barrierControl.
	barrier *checkpoint
}

// batch is what travels on a channel: records, then at most one control
// event. Batching amortizes channel operations over many records.
type batch[T any] struct {
	recs  []record[T]
	arena []byte
	ctl   control
}
