package state

import "sync/atomic"

// Clock gives processing time in epoch milliseconds. TTL runs on it: the
// engine gives each subtask's handles the subtask's own clock, which never
// runs backwards, and tests of the handles inject a ManualClock.
type Clock interface {
	Now() int64
}

// ManualClock is a Clock that moves only when told to. It is safe for
// concurrent use.
type ManualClock struct{ t atomic.Int64 }

// NewManualClock returns a clock standing at t.
func NewManualClock(t int64) *ManualClock {
	c := &ManualClock{}
	c.t.Store(t)
	return c
}

func (c *ManualClock) Now() int64 { return c.t.Load() }

// Set moves the clock to t.
func (c *ManualClock) Set(t int64) { c.t.Store(t) }

// Advance moves the clock forward by d milliseconds.
func (c *ManualClock) Advance(d int64) { c.t.Add(d) }
