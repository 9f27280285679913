package window

import (
	"fmt"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/serializers"
)

// Result is what a trigger decides for a window.
type Result uint8

const (
	// Continue does nothing.
	Continue Result = iota
	// Fire emits the window's contents and keeps them.
	Fire
	// Purge drops the window's contents without emitting them.
	Purge
	// FireAndPurge emits the window's contents and drops them.
	FireAndPurge
)

// IsFire says whether r emits the window.
func (r Result) IsFire() bool { return r == Fire || r == FireAndPurge }

// IsPurge says whether r drops the window's contents.
func (r Result) IsPurge() bool { return r == Purge || r == FireAndPurge }

// Trigger decides when a window fires. A trigger's state is keyed state in
// the window's namespace: it declares its descriptors with States, obtains
// handles in Open and scopes them to TriggerContext.Window before use.
type Trigger interface {
	// States are the keyed states the trigger keeps, each with the
	// serializers.Window namespace.
	States() []state.Descriptor
	// Open returns the trigger of one subtask, with its state handles.
	Open(ctx *engine.OpenContext) (Trigger, error)
	OnElement(ctx *TriggerContext, ts int64) (Result, error)
	OnEventTime(ctx *TriggerContext, ts int64) (Result, error)
	OnProcessingTime(ctx *TriggerContext, ts int64) (Result, error)
	// CanMerge says whether the trigger works with session windows.
	CanMerge() bool
	// OnMerge is called for the window that merged windows became, before
	// Clear is called for each merged one.
	OnMerge(ctx *TriggerContext, merged []Window) error
	// Clear drops the trigger's state and timers of the window.
	Clear(ctx *TriggerContext) error
}

// timerContext is what a trigger needs of the engine's Context: timers in
// the window's namespace and the two clocks.
type timerContext interface {
	CurrentWatermark() int64
	CurrentProcessingTime() int64
	RegisterEventTimeTimerIn(ns any, ts int64) error
	DeleteEventTimeTimerIn(ns any, ts int64) error
	RegisterProcessingTimeTimerIn(ns any, ts int64) error
	DeleteProcessingTimeTimerIn(ns any, ts int64) error
}

// TriggerContext is given to a trigger, scoped to the current key and
// window.
type TriggerContext struct {
	c      timerContext
	window Window
}

// Window is the window the call is about.
func (c *TriggerContext) Window() Window { return c.window }

// CurrentWatermark is the operator's event-time watermark.
func (c *TriggerContext) CurrentWatermark() int64 { return c.c.CurrentWatermark() }

// CurrentProcessingTime is the subtask's processing time.
func (c *TriggerContext) CurrentProcessingTime() int64 { return c.c.CurrentProcessingTime() }

// RegisterEventTimeTimer sets an event-time timer for the window.
func (c *TriggerContext) RegisterEventTimeTimer(ts int64) error {
	return c.c.RegisterEventTimeTimerIn(c.window, ts)
}

// DeleteEventTimeTimer removes an event-time timer of the window.
func (c *TriggerContext) DeleteEventTimeTimer(ts int64) error {
	return c.c.DeleteEventTimeTimerIn(c.window, ts)
}

// RegisterProcessingTimeTimer sets a processing-time timer for the window.
func (c *TriggerContext) RegisterProcessingTimeTimer(ts int64) error {
	return c.c.RegisterProcessingTimeTimerIn(c.window, ts)
}

// DeleteProcessingTimeTimer removes a processing-time timer of the window.
func (c *TriggerContext) DeleteProcessingTimeTimer(ts int64) error {
	return c.c.DeleteProcessingTimeTimerIn(c.window, ts)
}

type eventTimeTrigger struct{}

// EventTimeTrigger fires a window once the watermark passes its end, and
// again for each record that comes within the allowed lateness after.
// It is the default trigger of event-time windows.
func EventTimeTrigger() Trigger { return eventTimeTrigger{} }

func (eventTimeTrigger) States() []state.Descriptor { return nil }

func (t eventTimeTrigger) Open(*engine.OpenContext) (Trigger, error) { return t, nil }

func (eventTimeTrigger) OnElement(ctx *TriggerContext, _ int64) (Result, error) {
	if MaxTimestamp(ctx.window) <= ctx.CurrentWatermark() {
		// Late, within the allowed lateness: fire at once.
		return Fire, nil
	}
	return Continue, ctx.RegisterEventTimeTimer(MaxTimestamp(ctx.window))
}

func (eventTimeTrigger) OnEventTime(ctx *TriggerContext, ts int64) (Result, error) {
	if ts == MaxTimestamp(ctx.window) {
		return Fire, nil
	}
	return Continue, nil
}

func (eventTimeTrigger) OnProcessingTime(*TriggerContext, int64) (Result, error) {
	return Continue, nil
}

func (eventTimeTrigger) CanMerge() bool { return true }

func (eventTimeTrigger) OnMerge(ctx *TriggerContext, _ []Window) error {
	// A window that merged into one already past the watermark needs no
	// timer: a record in it fires it at once.
	if m := MaxTimestamp(ctx.window); m > ctx.CurrentWatermark() {
		return ctx.RegisterEventTimeTimer(m)
	}
	return nil
}

func (eventTimeTrigger) Clear(ctx *TriggerContext) error {
	return ctx.DeleteEventTimeTimer(MaxTimestamp(ctx.window))
}

type processingTimeTrigger struct{}

// ProcessingTimeTrigger fires a window once processing time passes its
// end. It is the default trigger of processing-time windows.
func ProcessingTimeTrigger() Trigger { return processingTimeTrigger{} }

func (processingTimeTrigger) States() []state.Descriptor { return nil }

func (t processingTimeTrigger) Open(*engine.OpenContext) (Trigger, error) { return t, nil }

func (processingTimeTrigger) OnElement(ctx *TriggerContext, _ int64) (Result, error) {
	return Continue, ctx.RegisterProcessingTimeTimer(MaxTimestamp(ctx.window))
}

func (processingTimeTrigger) OnEventTime(*TriggerContext, int64) (Result, error) {
	return Continue, nil
}

func (processingTimeTrigger) OnProcessingTime(*TriggerContext, int64) (Result, error) {
	return Fire, nil
}

func (processingTimeTrigger) CanMerge() bool { return true }

func (processingTimeTrigger) OnMerge(ctx *TriggerContext, _ []Window) error {
	if m := MaxTimestamp(ctx.window); m > ctx.CurrentProcessingTime() {
		return ctx.RegisterProcessingTimeTimer(m)
	}
	return nil
}

func (processingTimeTrigger) Clear(ctx *TriggerContext) error {
	return ctx.DeleteProcessingTimeTimer(MaxTimestamp(ctx.window))
}

// countDesc is the count trigger's state: records in the window since it
// last fired.
var countDesc = state.NewReducing("count", serializers.Int64(), func(a, b int64) int64 { return a + b },
	state.WithNamespace(serializers.Window()))

type countTrigger struct {
	max   int64
	count state.ReducingState[int64]
}

// CountTrigger fires a window each time it has received n more records.
// Its count is keyed state, "count", in the window's namespace.
func CountTrigger(n int64) Trigger { return &countTrigger{max: n} }

func (t *countTrigger) States() []state.Descriptor { return []state.Descriptor{countDesc} }

func (t *countTrigger) Open(ctx *engine.OpenContext) (Trigger, error) {
	if t.max < 1 {
		return nil, fmt.Errorf("window: count trigger of %d records: want at least 1", t.max)
	}
	count, err := engine.GetReducing(ctx, countDesc)
	if err != nil {
		return nil, err
	}
	return &countTrigger{max: t.max, count: count}, nil
}

func (t *countTrigger) OnElement(ctx *TriggerContext, _ int64) (Result, error) {
	if err := t.count.SetNamespace(ctx.window); err != nil {
		return Continue, err
	}
	if err := t.count.Add(1); err != nil {
		return Continue, err
	}
	n, _, err := t.count.Get()
	if err != nil || n < t.max {
		return Continue, err
	}
	return Fire, t.count.Clear()
}

func (t *countTrigger) OnEventTime(*TriggerContext, int64) (Result, error) { return Continue, nil }

func (t *countTrigger) OnProcessingTime(*TriggerContext, int64) (Result, error) {
	return Continue, nil
}

func (t *countTrigger) CanMerge() bool { return true }

// OnMerge adds the merged windows' counts into the new window's.
func (t *countTrigger) OnMerge(ctx *TriggerContext, merged []Window) error {
	var sum int64
	for _, w := range merged {
		if err := t.count.SetNamespace(w); err != nil {
			return err
		}
		n, ok, err := t.count.Get()
		if err != nil {
			return err
		}
		if ok {
			sum += n
		}
	}
	if err := t.count.SetNamespace(ctx.window); err != nil {
		return err
	}
	if sum == 0 {
		return nil
	}
	return t.count.Add(sum)
}

func (t *countTrigger) Clear(ctx *TriggerContext) error {
	if err := t.count.SetNamespace(ctx.window); err != nil {
		return err
	}
	return t.count.Clear()
}

type purgingTrigger struct{ Trigger }

// Purging makes t drop a window's contents whenever it fires it.
func Purging(t Trigger) Trigger { return purgingTrigger{t} }

func (p purgingTrigger) Open(ctx *engine.OpenContext) (Trigger, error) {
	t, err := p.Trigger.Open(ctx)
	return purgingTrigger{t}, err
}

func purge(r Result, err error) (Result, error) {
	if r.IsFire() {
		return FireAndPurge, err
	}
	return r, err
}

func (p purgingTrigger) OnElement(ctx *TriggerContext, ts int64) (Result, error) {
	return purge(p.Trigger.OnElement(ctx, ts))
}

func (p purgingTrigger) OnEventTime(ctx *TriggerContext, ts int64) (Result, error) {
	return purge(p.Trigger.OnEventTime(ctx, ts))
}

func (p purgingTrigger) OnProcessingTime(ctx *TriggerContext, ts int64) (Result, error) {
	return purge(p.Trigger.OnProcessingTime(ctx, ts))
}
