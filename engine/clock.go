package engine

import "github.com/stateproc/stateproc/engine/state"

// taskClock is a subtask's processing-time clock, the one TTL and
// processing-time timers run on. By default processing time is derived from
// the event being processed: a record's event time, or a timer's time. That
// makes every TTL timestamp a pure function of the input, whatever the
// interleaving of the subtasks, so savepoints are reproducible. A job can
// inject another clock (a state.ManualClock in tests, or the wall clock).
type taskClock struct {
	injected state.Clock
	current  int64
	// highest is the largest event time seen: processing-time timers fire
	// against it when the clock is derived.
	highest int64
}

func (c *taskClock) Now() int64 {
	if c.injected != nil {
		return c.injected.Now()
	}
	return c.current
}

// observe is called before a record is processed.
func (c *taskClock) observe(eventTime int64) {
	c.current = eventTime
	c.highest = max(c.highest, eventTime)
}

// atTimer is called before a timer fires.
func (c *taskClock) atTimer(ts int64) {
	c.current = ts
}

func (c *taskClock) processingTime() int64 {
	if c.injected != nil {
		return c.injected.Now()
	}
	return c.highest
}
