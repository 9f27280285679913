package flow

import (
	"fmt"
	"math"
)

// MaxWatermark is the watermark of a finished input: every event-time timer
// fires at it.
const MaxWatermark = math.MaxInt64

// MinWatermark is the watermark before any was received.
const MinWatermark = math.MinInt64

// Barrier is the checkpoint a barrier carries, as a gate needs it: its id,
// which orders checkpoints, and its epoch, where it cuts the input under
// DeterministicTime. The zero value (a nil pointer) is no checkpoint.
type Barrier interface {
	comparable
	CheckpointID() uint64
	Epoch() int64
}

// ControlKind says what a control event is.
type ControlKind uint8

const (
	// NoControl: a batch of records only.
	NoControl ControlKind = iota
	// WatermarkControl carries a watermark.
	WatermarkControl
	// BarrierControl carries a checkpoint's barrier.
	BarrierControl
	// EndControl ends the channel.
	EndControl
	// StatusControl carries the channel's new status.
	StatusControl
)

// Control is an event that flows in order with the records: a watermark, a
// checkpoint barrier, a change of the channel's status, or the end of the
// channel.
type Control[B Barrier] struct {
	Kind ControlKind
	// Watermark carries the watermark's time.
	Watermark int64
	// Barrier carries the checkpoint for BarrierControl.
	Barrier B
	// Status carries the channel's new status for StatusControl.
	Status Status
}

// Status says whether a channel is expected to carry records.
type Status uint8

const (
	// Active: records may come at any time.
	Active Status = iota
	// Stopped: the sender has reached its stop position or the end of its
	// input and sends no record until the job finishes; its watermark
	// still holds the receiver's back, since the records after the stop
	// position come later, after a restore.
	Stopped
	// Idle: the sender has no record to send for now (Watermarks.
	// IdleTimeout); its watermark holds nothing back until records come
	// again.
	Idle
)

func (s Status) String() string {
	switch s {
	case Active:
		return "active"
	case Stopped:
		return "stopped"
	case Idle:
		return "idle"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}
