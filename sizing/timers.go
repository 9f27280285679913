package sizing

import (
	"math"
	"strings"

	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// The timer leak rule. A job that registers a timer per record holds
// several per key, and is healthy when each one fires soon: GatewayMeter's
// TenantCost prices each record when the watermark passes the record's
// time, so the timers a tenant has waiting lie within seconds of each other
// and of the watermark. Timers leak when they accumulate without bound,
// which one savepoint shows in two ways:
//
//   - A (key, namespace) holds at least PileUpTimers timers spread over more
//     than TimerHorizon, from its earliest to its latest. They wait at once
//     over more than a day of the job's time, so the pile grows with
//     everything the key does in that time: each event registers a timer
//     far ahead and none is deleted, or the watermark stands still while
//     records keep registering timers. A key's timers for different
//     purposes (a deadline and a cleanup, a window's trigger and its
//     cleanup) are one or two at fixed offsets, hence at least three.
//   - Timers lie more than TimerHorizon before the job's time in their
//     domain at the savepoint: the watermark for event time, the creation
//     time for processing time. A timer that its clock has passed fires
//     when the clock next advances, so these were registered in the past
//     and the clock has not moved on since: they wait for good, and more
//     come with every such registration.
//
// How many timers a key holds is no evidence by itself. The report over
// several savepoints judges growth instead: a timer service whose timers
// keep rising from one savepoint to the next grows without bound.
const (
	PileUpTimers = 3
	// TimerHorizon is a day, in milliseconds.
	TimerHorizon = int64(24 * 60 * 60 * 1000)
)

// The domains of timer services, as reports name them.
const (
	EventTime      = "event time"
	ProcessingTime = "processing time"
)

// TimerStats describes the timers of a timer service per (key, namespace),
// with the figures the timer leak rule reads. For windowed timers the
// namespace is the window.
type TimerStats struct {
	Timers float64 `json:"timers"`
	// Keys counts (key, namespace) pairs holding timers.
	Keys float64 `json:"keys"`
	// AboveOne counts the pairs holding more than one timer; MaxPerKey is
	// the most any pair holds.
	AboveOne  float64 `json:"above_one"`
	MaxPerKey int     `json:"max_per_key"`
	// Earliest and Latest bound the timers' times.
	Earliest jsonvalue.Instant `json:"earliest,omitempty"`
	Latest   jsonvalue.Instant `json:"latest,omitempty"`
	// Domain is the clock that fires the timers, EventTime or
	// ProcessingTime, as the service's name tells; empty when it does not.
	Domain string `json:"domain,omitempty"`
	// Time is the job's time in Domain at the savepoint: the watermark, or
	// the creation time. Absent when the savepoint does not record it.
	Time *jsonvalue.Instant `json:"time,omitempty"`
	// MaxSpreadMillis is the widest that one pair's timers spread, from
	// its earliest to its latest.
	MaxSpreadMillis int64 `json:"max_spread_ms"`
	// PiledUp counts the pairs holding at least three timers spread over
	// more than a day; Overdue the timers more than a day before Time.
	PiledUp float64 `json:"piled_up"`
	Overdue float64 `json:"overdue"`
}

func newTimerStats(domain string, time *jsonvalue.Instant) *TimerStats {
	return &TimerStats{Earliest: math.MaxInt64, Latest: math.MinInt64, Domain: domain, Time: time}
}

// pairTimers is what a (key, namespace) holds: how many timers, from when
// to when.
type pairTimers struct {
	n                int
	earliest, latest int64
}

func (p *pairTimers) add(ts int64) {
	if p.n == 0 {
		p.earliest, p.latest = ts, ts
	}
	p.n++
	p.earliest, p.latest = min(p.earliest, ts), max(p.latest, ts)
}

// add counts one timer at ts.
func (s *TimerStats) add(ts int64) {
	s.Earliest = min(s.Earliest, jsonvalue.Instant(ts))
	s.Latest = max(s.Latest, jsonvalue.Instant(ts))
	if s.Time != nil && ts < int64(*s.Time) && distance(ts, int64(*s.Time)) > TimerHorizon {
		s.Overdue++
	}
}

// addKeyGroup merges the pairs of one key group.
func (s *TimerStats) addKeyGroup(pairs map[string]pairTimers) {
	for _, p := range pairs {
		s.Timers += float64(p.n)
		s.Keys++
		if p.n > 1 {
			s.AboveOne++
		}
		s.MaxPerKey = max(s.MaxPerKey, p.n)
		spread := distance(p.earliest, p.latest)
		s.MaxSpreadMillis = max(s.MaxSpreadMillis, spread)
		if p.n >= PileUpTimers && spread > TimerHorizon {
			s.PiledUp++
		}
	}
}

func (s *TimerStats) scale(f float64) {
	s.Timers *= f
	s.Keys *= f
	s.AboveOne *= f
	s.PiledUp *= f
	s.Overdue *= f
}

// distance is b - a for b >= a in milliseconds, at most math.MaxInt64, so
// that timers at the ends of time (a Long.MAX_VALUE timer of Flink's) do
// not overflow it.
func distance(a, b int64) int64 { return int64(min(uint64(b)-uint64(a), math.MaxInt64)) }

// timerClock gives the domain of a timer service, from its name as the
// engine (engine.EventTimeTimers, engine.ProcessingTimeTimers) or Apache
// Flink (_timer_state/event_NAME, _timer_state/processing_NAME) names it,
// and the job's time in that domain at the savepoint when the savepoint
// records it. A savepoint of Apache Flink's records neither its watermark
// nor its creation time, and one taken before the first watermark has
// none.
func timerClock(meta *savepoint.Metadata, ref savepoint.StateRef) (string, *jsonvalue.Instant) {
	name := meta.RefName(ref)
	var domain string
	switch {
	case name == "event-time" || strings.HasPrefix(name, "_timer_state/event_"):
		domain = EventTime
	case name == "processing-time" || strings.HasPrefix(name, "_timer_state/processing_"):
		domain = ProcessingTime
	}
	if domain == "" || meta.Operators[ref.Operator].Key.Kind == serializers.KindExternal {
		return domain, nil
	}
	if domain == ProcessingTime {
		return domain, jsonvalue.Ptr(meta.CreatedAt)
	}
	if meta.Watermark == math.MinInt64 {
		return domain, nil
	}
	return domain, jsonvalue.Ptr(meta.Watermark)
}
