package window

import (
	"fmt"
	"math"

	"github.com/stateproc/stateproc/engine"
)

// operator is the window operator of one subtask: a keyed process
// function whose timers are namespaced by window. It follows Flink's
// WindowOperator step by step.
type operator[K, IN, R, OUT any] struct {
	ws       *spec[IN]
	contents contents[IN, R]
	fn       func(ctx *Context[K, OUT], r R) error

	trigger Trigger
	merging *mergingSet
	tctx    TriggerContext
	wctx    Context[K, OUT]
	buf     []Window
}

func (o *operator[K, IN, R, OUT]) Open(ctx *engine.OpenContext) error {
	if err := o.contents.open(ctx); err != nil {
		return err
	}
	var err error
	if o.trigger, err = o.ws.trigger.Open(ctx); err != nil {
		return err
	}
	if o.ws.assigner.Merging() {
		o.merging, err = openMergingSet(ctx)
	}
	return err
}

// cleanupTime is when a window's state goes: at its end plus the allowed
// lateness in event time, at its end in processing time.
func (o *operator[K, IN, R, OUT]) cleanupTime(w Window) int64 {
	if o.ws.assigner.EventTime() {
		return addSat(MaxTimestamp(w), o.ws.lateness)
	}
	return MaxTimestamp(w)
}

func (o *operator[K, IN, R, OUT]) windowLate(c *engine.Context[K, OUT], w Window) bool {
	return o.ws.assigner.EventTime() && o.cleanupTime(w) <= c.CurrentWatermark()
}

func (o *operator[K, IN, R, OUT]) registerCleanup(c *engine.Context[K, OUT], w Window) error {
	t := o.cleanupTime(w)
	if t == math.MaxInt64 {
		// Such a window lasts as long as the job.
		return nil
	}
	if o.ws.assigner.EventTime() {
		return c.RegisterEventTimeTimerIn(w, t)
	}
	return c.RegisterProcessingTimeTimerIn(w, t)
}

func (o *operator[K, IN, R, OUT]) deleteCleanup(c *engine.Context[K, OUT], w Window) error {
	t := o.cleanupTime(w)
	if t == math.MaxInt64 {
		return nil
	}
	if o.ws.assigner.EventTime() {
		return c.DeleteEventTimeTimerIn(w, t)
	}
	return c.DeleteProcessingTimeTimerIn(w, t)
}

func (o *operator[K, IN, R, OUT]) ProcessElement(c *engine.Context[K, OUT], in IN) error {
	ts := c.Timestamp()
	o.buf = o.ws.assigner.Assign(o.buf[:0], ts, c.CurrentProcessingTime())
	o.tctx.c = c
	skipped := true
	if o.merging != nil {
		if err := o.merging.load(); err != nil {
			return err
		}
	}
	for _, w := range o.buf {
		stateWindow := w
		if o.merging != nil {
			var err error
			if w, err = o.merging.add(w, func(result Window, merged []Window, stateResult Window, mergedState []Window) error {
				return o.merge(c, result, merged, stateResult, mergedState)
			}); err != nil {
				return err
			}
			if o.windowLate(c, w) {
				o.merging.retire(w)
				continue
			}
			var ok bool
			if stateWindow, ok = o.merging.stateWindow(w); !ok {
				return fmt.Errorf("window: window %v of key %v has no state window", w, c.Key())
			}
		} else if o.windowLate(c, w) {
			continue
		}
		skipped = false
		if err := o.contents.setWindow(stateWindow); err != nil {
			return err
		}
		if err := o.contents.add(in); err != nil {
			return err
		}
		o.tctx.window = w
		r, err := o.trigger.OnElement(&o.tctx, ts)
		if err != nil {
			return err
		}
		if err := o.act(c, w, r); err != nil {
			return err
		}
		if err := o.registerCleanup(c, w); err != nil {
			return err
		}
	}
	if o.merging != nil {
		if err := o.merging.persist(); err != nil {
			return err
		}
	}
	if skipped && o.ws.assigner.EventTime() && addSat(ts, o.ws.lateness) <= c.CurrentWatermark() && o.ws.late != nil {
		return engine.EmitSide(c, *o.ws.late, in)
	}
	return nil
}

// merge is told by the merging set that merged became result: the trigger
// moves over, the merged windows' triggers and cleanup timers go, and
// their contents fold into the result's state window.
func (o *operator[K, IN, R, OUT]) merge(c *engine.Context[K, OUT], result Window, merged []Window, stateResult Window, mergedState []Window) error {
	if o.ws.assigner.EventTime() && addSat(MaxTimestamp(result), o.ws.lateness) <= c.CurrentWatermark() {
		return fmt.Errorf("window: merging into %v would end an event-time window before the watermark %d", result, c.CurrentWatermark())
	}
	if !o.ws.assigner.EventTime() && MaxTimestamp(result) <= c.CurrentProcessingTime() {
		return fmt.Errorf("window: merging into %v would end a processing-time window before the processing time %d", result, c.CurrentProcessingTime())
	}
	o.tctx.window = result
	if err := o.trigger.OnMerge(&o.tctx, merged); err != nil {
		return err
	}
	for _, m := range merged {
		o.tctx.window = m
		if err := o.trigger.Clear(&o.tctx); err != nil {
			return err
		}
		if err := o.deleteCleanup(c, m); err != nil {
			return err
		}
	}
	if err := o.contents.setWindow(stateResult); err != nil {
		return err
	}
	return o.contents.merge(mergedState)
}

// act applies a trigger's result to window w, whose contents are the
// current ones.
func (o *operator[K, IN, R, OUT]) act(c *engine.Context[K, OUT], w Window, r Result) error {
	if r.IsFire() {
		v, ok, err := o.contents.get()
		if err != nil {
			return err
		}
		if ok {
			o.wctx.c, o.wctx.w = c, w
			if err := o.fn(&o.wctx, v); err != nil {
				return err
			}
		}
	}
	if r.IsPurge() {
		return o.contents.clear()
	}
	return nil
}

func (o *operator[K, IN, R, OUT]) OnTimer(c *engine.Context[K, OUT], t engine.TimerInfo) error {
	w, ok := t.Namespace.(Window)
	if !ok {
		return fmt.Errorf("window: timer at %d has namespace %T, not a window", t.Timestamp, t.Namespace)
	}
	o.tctx.c, o.tctx.window = c, w
	stateWindow := w
	if o.merging != nil {
		if err := o.merging.load(); err != nil {
			return err
		}
		if stateWindow, ok = o.merging.stateWindow(w); !ok {
			// The window merged into another after the timer was set.
			return nil
		}
	}
	if err := o.contents.setWindow(stateWindow); err != nil {
		return err
	}
	var r Result
	var err error
	eventTime := t.Domain == engine.EventTime
	if eventTime {
		r, err = o.trigger.OnEventTime(&o.tctx, t.Timestamp)
	} else {
		r, err = o.trigger.OnProcessingTime(&o.tctx, t.Timestamp)
	}
	if err != nil {
		return err
	}
	if err := o.act(c, w, r); err != nil {
		return err
	}
	if eventTime == o.ws.assigner.EventTime() && t.Timestamp == o.cleanupTime(w) {
		if err := o.clearAll(w); err != nil {
			return err
		}
	}
	if o.merging != nil {
		return o.merging.persist()
	}
	return nil
}

// clearAll drops everything of window w: contents, trigger state and
// timers, and its place in the merging set.
func (o *operator[K, IN, R, OUT]) clearAll(w Window) error {
	if err := o.contents.clear(); err != nil {
		return err
	}
	o.tctx.window = w
	if err := o.trigger.Clear(&o.tctx); err != nil {
		return err
	}
	if o.merging != nil {
		o.merging.retire(w)
	}
	return nil
}

// Context is given to a window function: the key and window being
// emitted, and the output.
type Context[K, OUT any] struct {
	c *engine.Context[K, OUT]
	w Window
}

// Key is the window's key.
func (c *Context[K, OUT]) Key() K { return c.c.Key() }

// Window is the window being emitted.
func (c *Context[K, OUT]) Window() Window { return c.w }

// CurrentWatermark is the operator's event-time watermark.
func (c *Context[K, OUT]) CurrentWatermark() int64 { return c.c.CurrentWatermark() }

// CurrentProcessingTime is the subtask's processing time.
func (c *Context[K, OUT]) CurrentProcessingTime() int64 { return c.c.CurrentProcessingTime() }

// Emit sends v downstream with the window's maximum timestamp.
func (c *Context[K, OUT]) Emit(v OUT) error { return c.c.EmitAt(v, MaxTimestamp(c.w)) }
