package engine

import (
	"fmt"
	"math"
)

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
	statusControl
)

// control is an event that flows in order with the records: a watermark, a
// checkpoint barrier, a change of the channel's status, or the end of the
// channel.
type control struct {
	kind controlKind
	// watermark carries the watermark's time.
	watermark int64
	// barrier carries the checkpoint for barrierControl.
	barrier *checkpoint
	// status carries the channel's new status for statusControl.
	status channelStatus
}

// channelStatus says whether a channel is expected to carry records.
type channelStatus uint8

const (
	// active: records may come at any time.
	active channelStatus = iota
	// stopped: the sender has reached its stop position or the end of its
	// input and sends no record until the job finishes; its watermark
	// still holds the receiver's back, since the records after the stop
	// position come later, after a restore.
	stopped
	// idle: the sender has no record to send for now (Watermarks.
	// IdleTimeout); its watermark holds nothing back until records come
	// again.
	idle
)

func (s channelStatus) String() string {
	switch s {
	case active:
		return "active"
	case stopped:
		return "stopped"
	case idle:
		return "idle"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// batch is what travels on a channel: records, then at most one control
// event. Batching amortizes channel operations over many records.
type batch[T any] struct {
	recs  []record[T]
	arena []byte
	ctl   control
}
