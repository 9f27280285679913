package engine

import (
	"fmt"
	"time"

	"github.com/stateproc/stateproc/engine/state"
)

// ProcessingTimeMode chooses where the processing time of a job's subtasks
// comes from: the time TTL and processing-time timers run on. Whatever the
// source, each subtask has its own clock and it never runs backwards: a
// state written at one time is never read or cleaned up at an earlier one.
// The zero value is WallClock.
type ProcessingTimeMode struct {
	kind  timeKind
	clock state.Clock
}

type timeKind uint8

const (
	wallTime timeKind = iota
	deterministicTime
	injectedTime
)

var (
	// WallClock is the machine's clock, as in Flink: each subtask reads it
	// before every batch of records and every few milliseconds while its
	// input is idle, so processing-time timers fire on time in an
	// unbounded job. TTL timestamps, and so savepoint bytes, then depend on
	// when the job runs.
	WallClock = ProcessingTimeMode{kind: wallTime}
	// DeterministicTime makes a subtask's processing time its event-time
	// input watermark, and has every keyed subtask read its inputs in
	// watermark order, so that the watermark, and with it the processing
	// time, at every record and timer is the same run after run. A future-
	// dated record on one input moves neither: the watermark is the lowest
	// of the inputs'. Watermarks.MaxAdvance bounds how far one record can
	// move its own split's. The end of the input, which takes the watermark
	// to MaxWatermark, does not move processing time. The README describes
	// which outputs and savepoint bytes are then reproducible.
	DeterministicTime = ProcessingTimeMode{kind: deterministicTime}
)

// ClockTime runs processing time on c, a clock of the caller's (a
// state.ManualClock in tests): each subtask reads it as it would the wall
// clock, and never goes back when c does.
func ClockTime(c state.Clock) ProcessingTimeMode {
	return ProcessingTimeMode{kind: injectedTime, clock: c}
}

func (p ProcessingTimeMode) String() string {
	switch p.kind {
	case wallTime:
		return "wall clock"
	case deterministicTime:
		return "deterministic"
	}
	return fmt.Sprintf("clock %T", p.clock)
}

func (p ProcessingTimeMode) validate() error {
	if p.kind == injectedTime && p.clock == nil {
		return fmt.Errorf("engine: ClockTime without a clock")
	}
	return nil
}

// deterministic reports whether the run orders inputs by watermark.
func (p ProcessingTimeMode) deterministic() bool { return p.kind == deterministicTime }

// source returns the clock a subtask samples; nil in deterministic mode,
// where processing time follows the watermark instead.
func (p ProcessingTimeMode) source() state.Clock {
	switch p.kind {
	case wallTime:
		return wallClock{}
	case injectedTime:
		return p.clock
	}
	return nil
}

type wallClock struct{}

func (wallClock) Now() int64 { return time.Now().UnixMilli() }

// subtaskClock is one subtask's processing time. The state handles read it
// (it is their state.Clock) as often as they like, so it only changes when
// the runtime says so: before a batch of records, on a tick while the input
// is idle, and when the watermark advances. Between those, every access
// sees the same time.
type subtaskClock struct {
	src state.Clock
	now int64
}

// newSubtaskClock starts a subtask's clock at from, the time restored from
// a checkpoint (or the earliest time, on a fresh start in deterministic
// mode). An injected clock starts where it stands: the caller owns it.
func newSubtaskClock(p ProcessingTimeMode, from int64) *subtaskClock {
	c := &subtaskClock{src: p.source(), now: from}
	if p.kind == injectedTime {
		c.now = p.clock.Now()
	}
	c.sample()
	return c
}

func (c *subtaskClock) Now() int64 { return c.now }

// ticks reports whether the clock moves by itself, so that processing-time
// timers can come due while no input arrives.
func (c *subtaskClock) ticks() bool { return c.src != nil }

// sample moves a wall or injected clock to its source's time, unless that
// is behind.
func (c *subtaskClock) sample() {
	if c.src != nil {
		c.now = max(c.now, c.src.Now())
	}
}

// follow moves a deterministic clock to the watermark w. The watermark of
// an input that has ended, MaxWatermark, is not a time.
func (c *subtaskClock) follow(w int64) {
	if c.src == nil && w != MaxWatermark {
		c.now = max(c.now, w)
	}
}
