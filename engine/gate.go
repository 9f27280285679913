package engine

import (
	"context"
	"reflect"
	"time"
)

// gate reads a subtask's input channels. It blocks a channel that has
// delivered the barrier of the checkpoint being aligned, so that the
// snapshot holds exactly the records before the barrier on every channel,
// and combines the channels' watermarks into the subtask's watermark.
type gate struct {
	ctx    context.Context
	chans  []gateChan
	cases  []reflect.SelectCase
	caseCh []int
	dirty  bool
	notify <-chan struct{}
	// tick, when set, wakes the subtask periodically whether or not input
	// arrives.
	tick <-chan time.Time
	// watermark is the minimum over the channels that have not ended.
	watermark int64
	aligning  *checkpoint
}

type gateChan struct {
	input     int
	ch        reflect.Value
	watermark int64
	blocked   bool
	ended     bool
}

const (
	notifyChannel = -1
	tickChannel   = -2
)

func newGate(ctx context.Context, notify <-chan struct{}) *gate {
	return &gate{ctx: ctx, notify: notify, watermark: MinWatermark, dirty: true}
}

// add registers a typed channel (chan *batch[T]) as belonging to input.
func (g *gate) add(input int, ch any) {
	g.chans = append(g.chans, gateChan{input: input, ch: reflect.ValueOf(ch), watermark: MinWatermark})
	g.dirty = true
}

func (g *gate) rebuild() {
	g.cases = g.cases[:0]
	g.caseCh = g.caseCh[:0]
	g.cases = append(g.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(g.ctx.Done())})
	g.caseCh = append(g.caseCh, 0)
	if g.notify != nil {
		g.cases = append(g.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(g.notify)})
		g.caseCh = append(g.caseCh, notifyChannel)
	}
	if g.tick != nil {
		g.cases = append(g.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(g.tick)})
		g.caseCh = append(g.caseCh, tickChannel)
	}
	for i, c := range g.chans {
		if !c.blocked && !c.ended {
			g.cases = append(g.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: c.ch})
			g.caseCh = append(g.caseCh, i)
		}
	}
	g.dirty = false
}

// setNotify replaces the notification channel (it is replaced after every
// notification, see coordinator.changed).
func (g *gate) setNotify(n <-chan struct{}) {
	g.notify = n
	g.dirty = true
}

// setTick makes next report tickChannel whenever tick delivers.
func (g *gate) setTick(tick <-chan time.Time) {
	g.tick = tick
	g.dirty = true
}

// done reports whether every channel has ended.
func (g *gate) done() bool {
	for _, c := range g.chans {
		if !c.ended {
			return false
		}
	}
	return true
}

// next waits for the next batch and returns its channel index and the batch
// (a *batch[T] for that channel's T), notifyChannel when the notification
// channel fired, or tickChannel when the tick did.
func (g *gate) next() (int, any, error) {
	if g.dirty {
		g.rebuild()
	}
	chosen, v, _ := reflect.Select(g.cases)
	if chosen == 0 {
		return 0, nil, context.Cause(g.ctx)
	}
	ch := g.caseCh[chosen]
	if ch == notifyChannel || ch == tickChannel {
		return ch, nil, nil
	}
	return ch, v.Interface(), nil
}

// gateResult says what a control event changed.
type gateResult struct {
	// watermarkAdvanced is set when the combined watermark moved forward.
	watermarkAdvanced bool
	// aligned is the checkpoint whose barrier has now arrived on every
	// channel still open.
	aligned *checkpoint
	// ended is set when the last channel ended.
	ended bool
}

// onControl applies a control event received on channel ch.
func (g *gate) onControl(ch int, c control) gateResult {
	var r gateResult
	gc := &g.chans[ch]
	switch c.kind {
	case watermarkControl:
		if c.watermark > gc.watermark {
			gc.watermark = c.watermark
			r.watermarkAdvanced = g.recombine()
		}
	case barrierControl:
		if g.aligning == nil {
			g.aligning = c.barrier
		}
		gc.blocked = true
		g.dirty = true
		r.aligned = g.checkAligned()
	case endControl:
		gc.ended = true
		g.dirty = true
		r.watermarkAdvanced = g.recombine()
		r.aligned = g.checkAligned()
		r.ended = g.done()
	}
	return r
}

// checkAligned completes the alignment when every open channel is blocked.
// A channel that ended counts as aligned: nothing more comes from it.
func (g *gate) checkAligned() *checkpoint {
	if g.aligning == nil {
		return nil
	}
	for _, c := range g.chans {
		if !c.blocked && !c.ended {
			return nil
		}
	}
	cp := g.aligning
	g.aligning = nil
	for i := range g.chans {
		g.chans[i].blocked = false
	}
	g.dirty = true
	return cp
}

func (g *gate) recombine() bool {
	w := int64(MaxWatermark)
	open := false
	for _, c := range g.chans {
		if c.ended {
			continue
		}
		open = true
		w = min(w, c.watermark)
	}
	if !open || w <= g.watermark {
		return false
	}
	g.watermark = w
	return true
}
