package window

import (
	"fmt"
	"math"
	"time"

	"github.com/stateproc/stateproc/serializers"
)

// Window is a time window [Start, End) in epoch milliseconds, the
// namespace of window state.
type Window = serializers.TimeWindow

// MaxTimestamp is the last millisecond in w: when its event-time trigger
// fires, and the timestamp of what it emits.
func MaxTimestamp(w Window) int64 { return w.End - 1 }

// Assigner puts each record in its windows.
type Assigner interface {
	// Assign appends to dst the windows of a record with event time ts
	// arriving at processing time now.
	Assign(dst []Window, ts, now int64) []Window
	// EventTime says whether the windows are in event time.
	EventTime() bool
	// Merging says whether windows that overlap merge into one (sessions).
	Merging() bool
	// DefaultTrigger fires the windows when nothing else is said.
	DefaultTrigger() Trigger
	validate() error
}

// Tumbling assigns each record to the one window of a fixed size that
// holds it, aligned to the epoch plus an offset.
type Tumbling struct {
	size, offset int64
	processing   bool
}

// TumblingEventTime returns tumbling windows of size in event time.
func TumblingEventTime(size time.Duration) Tumbling { return Tumbling{size: millis(size)} }

// TumblingProcessingTime returns tumbling windows of size in processing
// time.
func TumblingProcessingTime(size time.Duration) Tumbling {
	return Tumbling{size: millis(size), processing: true}
}

// WithOffset shifts the windows' alignment by offset (for example a time
// zone), which must be smaller than the size.
func (a Tumbling) WithOffset(offset time.Duration) Tumbling { a.offset = millis(offset); return a }

func (a Tumbling) Assign(dst []Window, ts, now int64) []Window {
	if a.processing {
		ts = now
	}
	start := windowStart(ts, a.offset, a.size)
	return append(dst, Window{Start: start, End: addSat(start, a.size)})
}

func (a Tumbling) EventTime() bool { return !a.processing }
func (a Tumbling) Merging() bool   { return false }
func (a Tumbling) DefaultTrigger() Trigger {
	if a.processing {
		return ProcessingTimeTrigger()
	}
	return EventTimeTrigger()
}

func (a Tumbling) validate() error {
	if a.size <= 0 || a.offset < 0 || a.offset >= a.size {
		return fmt.Errorf("tumbling windows of size %dms and offset %dms: want 0 <= offset < size", a.size, a.offset)
	}
	return nil
}

// Sliding assigns each record to the size/slide overlapping windows of a
// fixed size that start every slide.
type Sliding struct {
	size, slide, offset int64
	processing          bool
}

// SlidingEventTime returns sliding windows of size every slide in event
// time.
func SlidingEventTime(size, slide time.Duration) Sliding {
	return Sliding{size: millis(size), slide: millis(slide)}
}

// SlidingProcessingTime returns sliding windows of size every slide in
// processing time.
func SlidingProcessingTime(size, slide time.Duration) Sliding {
	return Sliding{size: millis(size), slide: millis(slide), processing: true}
}

// WithOffset shifts the windows' alignment by offset, smaller than the
// slide.
func (a Sliding) WithOffset(offset time.Duration) Sliding { a.offset = millis(offset); return a }

// Assign appends the windows latest start first, as Flink lists them.
func (a Sliding) Assign(dst []Window, ts, now int64) []Window {
	if a.processing {
		ts = now
	}
	last := windowStart(ts, a.offset, a.slide)
	for start := last; addSat(start, a.size) > ts; start -= a.slide {
		dst = append(dst, Window{Start: start, End: addSat(start, a.size)})
		if start < math.MinInt64+a.slide {
			break
		}
	}
	return dst
}

func (a Sliding) EventTime() bool { return !a.processing }
func (a Sliding) Merging() bool   { return false }
func (a Sliding) DefaultTrigger() Trigger {
	if a.processing {
		return ProcessingTimeTrigger()
	}
	return EventTimeTrigger()
}

func (a Sliding) validate() error {
	if a.size <= 0 || a.slide <= 0 || a.offset < 0 || a.offset >= a.slide {
		return fmt.Errorf("sliding windows of size %dms, slide %dms and offset %dms: want positive sizes and 0 <= offset < slide", a.size, a.slide, a.offset)
	}
	return nil
}

// Session puts each record in a window [t, t+gap) and merges windows that
// overlap or touch: a session ends after a gap without records.
type Session struct {
	gap        int64
	processing bool
}

// EventTimeSession returns session windows with gap in event time.
func EventTimeSession(gap time.Duration) Session { return Session{gap: millis(gap)} }

// ProcessingTimeSession returns session windows with gap in processing
// time.
func ProcessingTimeSession(gap time.Duration) Session {
	return Session{gap: millis(gap), processing: true}
}

func (a Session) Assign(dst []Window, ts, now int64) []Window {
	if a.processing {
		ts = now
	}
	return append(dst, Window{Start: ts, End: addSat(ts, a.gap)})
}

func (a Session) EventTime() bool { return !a.processing }
func (a Session) Merging() bool   { return true }
func (a Session) DefaultTrigger() Trigger {
	if a.processing {
		return ProcessingTimeTrigger()
	}
	return EventTimeTrigger()
}

func (a Session) validate() error {
	if a.gap <= 0 {
		return fmt.Errorf("session windows with gap %dms: want a positive gap", a.gap)
	}
	return nil
}

// windowStart is the start of the window of size (or slide) that holds ts,
// the windows aligned to offset; right for times before the epoch too. The
// window of a time so early that its start is not a time (a deterministic
// clock before the first watermark) starts at the earliest time.
func windowStart(ts, offset, size int64) int64 {
	r := (ts%size - offset%size) % size
	if r < 0 {
		r += size
	}
	return subSat(ts, r)
}

// millis converts d to milliseconds; a part of a millisecond makes it
// invalid (-1), which validate reports.
func millis(d time.Duration) int64 {
	if d%time.Millisecond != 0 {
		return -1
	}
	return d.Milliseconds()
}

func subSat(t, d int64) int64 {
	if d > 0 && t < math.MinInt64+d {
		return math.MinInt64
	}
	return t - d
}

func addSat(t, d int64) int64 {
	if d > 0 && t > math.MaxInt64-d {
		return math.MaxInt64
	}
	return t + d
}

// intersects says whether two windows overlap or touch: such session
// windows merge.
func intersects(a, b Window) bool { return a.Start <= b.End && a.End >= b.Start }

func cover(a, b Window) Window {
	return Window{Start: min(a.Start, b.Start), End: max(a.End, b.End)}
}
