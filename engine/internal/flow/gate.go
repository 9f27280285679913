package flow

import (
	"context"
	"reflect"
	"time"
)

// Gate reads a subtask's input channels. It blocks a channel that has
// delivered the barrier of the checkpoint being aligned, so that the
// snapshot holds exactly the records before the barrier on every channel,
// and combines the channels' watermarks into the subtask's watermark.
//
// An ordered gate (DeterministicTime) also reads the channels in watermark
// order: a record belongs to the epoch of the watermark before it on its
// channel, and a channel whose watermark is ahead of the gate's epoch, the
// lowest watermark of the active channels, waits until the others catch
// up. So the watermark at every record is a function of the input, not of
// the scheduling, and only records of one epoch on different channels
// interleave freely. A checkpoint cuts that order at its epoch: every
// source's part of it ends with its first watermark at or above the epoch
// (see the engine's sourceRunner), so a channel is aligned once its
// watermark has reached the epoch, whether or not its barrier has come,
// and is not read again until the snapshot. A barrier that comes after that belongs to a
// checkpoint already taken and is passed over. A gate whose channels are
// all past the epoch when the checkpoint starts (one that reads only some
// of the sources, which were ahead) is aligned without reading anything
// more: Next reports it as AlignedChannel.
type Gate[B Barrier] struct {
	ctx    context.Context
	chans  []gateChan
	cases  []reflect.SelectCase
	caseCh []int
	dirty  bool
	notify <-chan struct{}
	// tick, when set, wakes the subtask periodically whether or not input
	// arrives.
	tick <-chan time.Time
	// watermark is the combined watermark: it never decreases.
	watermark int64
	aligning  B

	// ordered is set for DeterministicTime.
	ordered bool
	// epoch is the lowest watermark of the active channels that are not
	// blocked: the epoch of the records the gate reads now.
	epoch int64
	// pending returns the checkpoint whose barriers are on their way, if
	// any; done is the id of the last checkpoint this gate aligned.
	pending func() B
	done    uint64
	// ready is a checkpoint Next found aligned, for TakeAligned.
	ready B
}

type gateChan struct {
	input     int
	ch        reflect.Value
	watermark int64
	// stoppedAt is the watermark a stopped channel had when it stopped: it
	// holds the combined watermark until every channel ends its input
	// (MaxWatermark), so that the drain at the end, whose watermarks arrive
	// in any order, moves the combined watermark in one step.
	stoppedAt int64
	status    Status
	// behind is set on a channel that came back from idle behind the
	// combined watermark: it holds nothing back until it catches up.
	behind  bool
	blocked bool
	ended   bool
}

// What Next returns instead of an input channel's index when the
// notification channel, or the tick, fired, or when the gate found the
// checkpoint in flight aligned without reading (TakeAligned).
const (
	NotifyChannel  = -1
	TickChannel    = -2
	AlignedChannel = -3
)

// NewGate returns a gate with no channel yet; notify, when not nil, is the
// notification channel.
func NewGate[B Barrier](ctx context.Context, notify <-chan struct{}) *Gate[B] {
	return &Gate[B]{ctx: ctx, notify: notify, watermark: MinWatermark, epoch: MinWatermark, dirty: true}
}

// Order makes the gate read its channels in watermark order; pending tells
// it which checkpoint's barriers are on their way.
func (g *Gate[B]) Order(pending func() B) {
	g.ordered, g.pending, g.dirty = true, pending, true
}

// Add registers a typed channel (chan *batch[T]) as belonging to input,
// its watermark starting at from: the watermark its sender had when the
// checkpoint the run restores was taken, MinWatermark on a fresh start.
func (g *Gate[B]) Add(input int, ch any, from int64) {
	g.chans = append(g.chans, gateChan{input: input, ch: reflect.ValueOf(ch), watermark: from, stoppedAt: from})
	g.dirty = true
}

// RestoredAt starts the gate at the watermark w its subtask had when the
// checkpoint the run restores was taken: every event-time timer up to it
// has fired, and the records its channels deliver first belong to the
// epochs from w on.
func (g *Gate[B]) RestoredAt(w int64) {
	g.watermark, g.epoch = max(g.watermark, w), max(g.epoch, w)
	g.dirty = true
}

// nextBarrier returns the checkpoint this gate is to align next, nil if
// none: the one whose barrier came first, or, in an ordered gate, the one
// the coordinator has started.
func (g *Gate[B]) nextBarrier() B {
	var none B
	if g.aligning != none {
		return g.aligning
	}
	if g.pending == nil {
		return none
	}
	if cp := g.pending(); cp != none && cp.CheckpointID() > g.done {
		return cp
	}
	return none
}

// aligned reports whether c has reached checkpoint cp (nil when none is
// pending): by its barrier, or, in an ordered gate, by its watermark. A
// checkpoint at the end of the input (epoch MaxWatermark) cuts nothing:
// every record comes before every barrier, and channels may have reached
// the end before the checkpoint started.
func (g *Gate[B]) aligned(c *gateChan, cp B) bool {
	var none B
	return c.blocked || g.ordered && cp != none && cp.Epoch() != MaxWatermark && c.watermark >= cp.Epoch()
}

func (g *Gate[B]) readable(c *gateChan, cp B) bool {
	if c.ended || g.aligned(c, cp) {
		return false
	}
	if !g.ordered || c.status != Active || c.watermark == MaxWatermark {
		// A stopped or idle channel sends no record until it changes
		// status, and one whose input has ended none at all: what it
		// sends (barriers, which its source sends on at every
		// checkpoint) can be read at any time.
		return true
	}
	return c.watermark <= g.epoch
}

// advanceEpoch moves the epoch to the lowest watermark of the channels
// whose records are still to be ordered.
func (g *Gate[B]) advanceEpoch() {
	if !g.ordered {
		return
	}
	cp := g.nextBarrier()
	e, found := int64(MaxWatermark), false
	for i := range g.chans {
		c := &g.chans[i]
		if c.ended || c.status != Active || g.aligned(c, cp) {
			continue
		}
		e, found = min(e, c.watermark), true
	}
	if found && e > g.epoch {
		g.epoch = e
	}
}

func (g *Gate[B]) rebuild() {
	g.advanceEpoch()
	cp := g.nextBarrier()
	g.cases = g.cases[:0]
	g.caseCh = g.caseCh[:0]
	g.cases = append(g.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(g.ctx.Done())})
	g.caseCh = append(g.caseCh, 0)
	if g.notify != nil {
		g.cases = append(g.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(g.notify)})
		g.caseCh = append(g.caseCh, NotifyChannel)
	}
	if g.tick != nil {
		g.cases = append(g.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(g.tick)})
		g.caseCh = append(g.caseCh, TickChannel)
	}
	for i := range g.chans {
		if g.readable(&g.chans[i], cp) {
			g.cases = append(g.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: g.chans[i].ch})
			g.caseCh = append(g.caseCh, i)
		}
	}
	g.dirty = false
}

// SetNotify replaces the notification channel (it is replaced after every
// notification, see coordinator.changed).
func (g *Gate[B]) SetNotify(n <-chan struct{}) {
	g.notify = n
	g.dirty = true
}

// SetTick makes Next report TickChannel whenever tick delivers.
func (g *Gate[B]) SetTick(tick <-chan time.Time) {
	g.tick = tick
	g.dirty = true
}

// allEnded reports whether every channel has ended.
func (g *Gate[B]) allEnded() bool {
	for _, c := range g.chans {
		if !c.ended {
			return false
		}
	}
	return true
}

// Next waits for the next batch and returns its channel index and the batch
// (of the type the channel carries), NotifyChannel when the notification
// channel fired, or TickChannel when the tick did.
func (g *Gate[B]) Next() (int, any, error) {
	if g.dirty {
		g.rebuild()
	}
	if g.ordered {
		// A channel may be aligned by a watermark it delivered before the
		// checkpoint started: that of a source already past the epoch,
		// which sends nothing more of it. A gate fed by such sources
		// alone (a stateless operator on some of a keyed operator's
		// sources) is aligned once the checkpoint starts, and would
		// otherwise wait on channels it no longer reads.
		var none B
		if cp := g.checkAligned(); cp != none {
			g.ready = cp
			return AlignedChannel, nil, nil
		}
	}
	chosen, v, _ := reflect.Select(g.cases)
	if chosen == 0 {
		return 0, nil, context.Cause(g.ctx)
	}
	ch := g.caseCh[chosen]
	if ch == NotifyChannel || ch == TickChannel {
		return ch, nil, nil
	}
	return ch, v.Interface(), nil
}

// TakeAligned returns the checkpoint that Next reported aligned with
// AlignedChannel.
func (g *Gate[B]) TakeAligned() B {
	var none B
	cp := g.ready
	g.ready = none
	return cp
}

// Result says what a control event changed.
type Result[B Barrier] struct {
	// WatermarkAdvanced is set when the combined watermark moved forward.
	WatermarkAdvanced bool
	// Aligned is the checkpoint whose barrier has now arrived on every
	// channel still open.
	Aligned B
	// Ended is set when the last channel ended.
	Ended bool
}

// OnControl applies a control event received on channel ch.
func (g *Gate[B]) OnControl(ch int, c Control[B]) Result[B] {
	var r Result[B]
	gc := &g.chans[ch]
	switch c.Kind {
	case WatermarkControl:
		if c.Watermark > gc.watermark {
			gc.watermark = c.Watermark
			if gc.status != Stopped {
				gc.stoppedAt = c.Watermark
			}
			r.WatermarkAdvanced = g.recombine()
			if g.ordered {
				g.dirty = true
				r.Aligned = g.checkAligned()
			}
		}
	case StatusControl:
		if c.Status != gc.status {
			if gc.status == Idle && c.Status == Active {
				gc.behind = gc.watermark < g.watermark
			}
			gc.status = c.Status
			gc.stoppedAt = gc.watermark
			g.dirty = true
			r.WatermarkAdvanced = g.recombine()
		}
	case BarrierControl:
		if c.Barrier.CheckpointID() <= g.done {
			// The channel was aligned by its watermark.
			break
		}
		var none B
		if g.aligning == none {
			g.aligning = c.Barrier
		}
		gc.blocked = true
		g.dirty = true
		r.Aligned = g.checkAligned()
	case EndControl:
		// An end does not move the watermark: the channel's last watermark
		// stays what it promised, and a stop without draining must leave
		// the timers beyond it pending.
		gc.ended = true
		g.dirty = true
		r.Aligned = g.checkAligned()
		r.Ended = g.allEnded()
	}
	return r
}

// checkAligned completes the alignment when every open channel is aligned.
// A channel that ended counts as aligned: nothing more comes from it.
func (g *Gate[B]) checkAligned() B {
	var none B
	cp := g.nextBarrier()
	if cp == none {
		return none
	}
	for i := range g.chans {
		if c := &g.chans[i]; !c.ended && !g.aligned(c, cp) {
			return none
		}
	}
	g.aligning = none
	g.done = cp.CheckpointID()
	for i := range g.chans {
		g.chans[i].blocked = false
	}
	g.dirty = true
	return cp
}

// recombine recomputes the combined watermark, as Flink's status
// watermark valve does: the lowest watermark of the channels that are
// neither idle nor behind, never lower than before. A stopped channel
// holds it at the watermark it stopped at until every channel that holds
// it has reached the end (MaxWatermark); a channel that has ended holds it
// at its last watermark, which, unless its input was drained, is a
// promise about records that come after a restore.
func (g *Gate[B]) recombine() bool {
	w, holding, drained := int64(MaxWatermark), false, true
	for i := range g.chans {
		c := &g.chans[i]
		if c.status == Idle && !c.ended {
			continue
		}
		if c.behind {
			if c.watermark < g.watermark {
				continue
			}
			c.behind = false
		}
		holding = true
		cw := c.watermark
		if c.status == Stopped {
			cw = c.stoppedAt
		}
		drained = drained && c.watermark == MaxWatermark
		w = min(w, cw)
	}
	if !holding {
		return false
	}
	if drained {
		w = MaxWatermark
	}
	if w <= g.watermark {
		return false
	}
	g.watermark = w
	return true
}

// OutputStatus is the status a subtask's outputs have: active while any
// input is, stopped once every input has stopped or ended, idle when the
// inputs still open are all idle.
func (g *Gate[B]) OutputStatus() Status {
	s := Idle
	for _, c := range g.chans {
		switch {
		case c.ended:
		case c.status == Active:
			return Active
		case c.status == Stopped:
			s = Stopped
		}
	}
	return s
}

// Watermark is the combined watermark.
func (g *Gate[B]) Watermark() int64 { return g.watermark }

// Input is the input that channel ch belongs to.
func (g *Gate[B]) Input(ch int) int { return g.chans[ch].input }
