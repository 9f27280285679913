package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/stateproc/stateproc/engine/internal/flow"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/serializers"
)

// sweepEvery is how many records a keyed subtask processes between two
// steps of a backend's background TTL sweeper.
const sweepEvery = 1024

// processingTimeTick is how often a keyed subtask on a clock that moves by
// itself checks its processing-time timers while no input arrives.
const processingTimeTick = 10 * time.Millisecond

// keyedRunner runs one subtask of a keyed operator, with an optional
// broadcast input of type B.
type keyedRunner[K, IN, B, OUT any] struct {
	keyOf       func(IN) K
	keySer      serializers.Of[K]
	fn          KeyedProcessFunction[K, IN, OUT]
	onBroadcast func(*BroadcastContext[OUT], B) error

	t       *task
	out     *output[OUT]
	ctx     *Context[K, OUT]
	bctx    *BroadcastContext[OUT]
	sweeper state.Sweeper
	count   int
}

func (k *keyedRunner[K, IN, B, OUT]) run(t *task) error {
	k.t = t
	k.out = newOutput[OUT](t)
	et, err := t.backend.Timers(EventTimeTimers, t.n.timerNamespace())
	if err != nil {
		return err
	}
	pt, err := t.backend.Timers(ProcessingTimeTimers, t.n.timerNamespace())
	if err != nil {
		return err
	}
	k.ctx = &Context[K, OUT]{Context: t.ctx, t: t, out: k.out, et: et, pt: pt}
	k.bctx = &BroadcastContext[OUT]{Context: t.ctx, t: t, out: k.out}
	k.sweeper, _ = t.backend.(state.Sweeper)
	if err := k.fn.Open(&OpenContext{Context: t.ctx, t: t}); err != nil {
		return t.errorf("open: %w", err)
	}
	t.snapshotOp = t.snapshotKeyedOperatorState
	if err := t.restoreKeyed(); err != nil {
		return err
	}
	g := t.newGate()
	addInputs[IN](t, g, 0)
	if k.onBroadcast != nil {
		addInputs[B](t, g, 1)
	}
	if t.att.opts.ProcessingTime.deterministic() {
		g.Order(t.att.coord.Pending)
	}
	g.RestoredAt(t.watermark)
	t.watermark = g.Watermark()
	if t.clock.ticks() {
		// A clock that moves by itself brings processing-time timers due
		// while the input is idle too. A deterministic clock moves only
		// with the watermark, when they are checked anyway.
		tick := time.NewTicker(processingTimeTick)
		defer tick.Stop()
		g.SetTick(tick.C)
	}
	status := flow.Active
	for {
		ch, v, err := g.Next()
		if err != nil {
			return err
		}
		if ch == flow.TickChannel {
			t.clock.sample()
			if err := k.firePending(); err != nil {
				return err
			}
			continue
		}
		if ch == flow.NotifyChannel {
			continue
		}
		if ch == flow.AlignedChannel {
			if err := k.aligned(g.TakeAligned()); err != nil {
				return err
			}
			continue
		}
		t.clock.sample()
		var ctl control
		if g.Input(ch) == 0 {
			b := v.(*batch[IN])
			if err := k.records(b.recs); err != nil {
				return err
			}
			ctl = b.ctl
		} else {
			b := v.(*batch[B])
			if err := k.broadcasts(b.recs); err != nil {
				return err
			}
			ctl = b.ctl
		}
		if t.clock.ticks() {
			if err := k.firePending(); err != nil {
				return err
			}
		}
		if ctl.Kind == flow.NoControl {
			continue
		}
		r := g.OnControl(ch, ctl)
		if r.WatermarkAdvanced {
			if err := k.advance(g.Watermark()); err != nil {
				return err
			}
		}
		if s := g.OutputStatus(); s != status && !r.Ended {
			status = s
			if err := k.out.control(control{Kind: flow.StatusControl, Status: s}); err != nil {
				return err
			}
		}
		if r.Aligned != nil {
			if err := k.aligned(r.Aligned); err != nil {
				return err
			}
		}
		if r.Ended {
			return k.out.control(control{Kind: flow.EndControl})
		}
	}
}

// aligned takes the subtask's part of checkpoint cp, whose alignment is
// complete, and passes its barrier on.
func (k *keyedRunner[K, IN, B, OUT]) aligned(cp *checkpoint) error {
	if err := k.t.snapshot(cp); err != nil {
		return err
	}
	return k.out.control(control{Kind: flow.BarrierControl, Barrier: cp})
}

// advance moves the subtask to the combined watermark w: a deterministic
// clock follows it, the timers it brings due fire, and it goes downstream
// after what they emit, so that none of that is late there.
func (k *keyedRunner[K, IN, B, OUT]) advance(w int64) error {
	k.t.watermark = w
	k.t.clock.follow(w)
	if err := k.fireEventTimers(w); err != nil {
		return err
	}
	if err := k.firePending(); err != nil {
		return err
	}
	return k.out.control(control{Kind: flow.WatermarkControl, Watermark: w})
}

func (k *keyedRunner[K, IN, B, OUT]) records(recs []record[IN]) error {
	for i := range recs {
		r := &recs[i]
		if err := k.t.backend.SetCurrentKey(r.key); err != nil {
			return k.t.errorf("%w", err)
		}
		k.ctx.key = k.keyOf(r.v)
		k.ctx.ts = r.ts
		if err := k.fn.ProcessElement(k.ctx, r.v); err != nil {
			return k.t.errorf("process element: %w", err)
		}
		k.count++
		if k.sweeper != nil && k.count%sweepEvery == 0 {
			if _, err := k.sweeper.Sweep(k.t.clock.Now()); err != nil {
				return k.t.errorf("ttl sweep: %w", err)
			}
		}
	}
	return nil
}

func (k *keyedRunner[K, IN, B, OUT]) broadcasts(recs []record[B]) error {
	k.t.inBroadcast = true
	defer func() { k.t.inBroadcast = false }()
	// A broadcast element belongs to no key: keyed state and timers fail
	// there, as in Flink, rather than act for the key processed last.
	k.t.backend.ClearCurrentKey()
	for i := range recs {
		k.bctx.ts = recs[i].ts
		if err := k.onBroadcast(k.bctx, recs[i].v); err != nil {
			if errors.Is(err, state.ErrNoCurrentKey) {
				err = fmt.Errorf("keyed state and timers have no key in ProcessBroadcastElement: %w", err)
			}
			return k.t.errorf("process broadcast element: %w", err)
		}
	}
	return nil
}

// fireEventTimers fires, in (time, key) order, every event-time timer up to
// the watermark, including timers that the fired ones register.
func (k *keyedRunner[K, IN, B, OUT]) fireEventTimers(upTo int64) error {
	return k.fire(k.ctx.et, upTo, EventTime)
}

// firePending fires the processing-time timers that the subtask's clock
// has passed: when the watermark advances, and, on a clock that moves by
// itself, after every input batch and on every tick.
func (k *keyedRunner[K, IN, B, OUT]) firePending() error {
	return k.fire(k.ctx.pt, k.t.clock.Now(), ProcessingTime)
}

func (k *keyedRunner[K, IN, B, OUT]) fire(ts state.Timers, upTo int64, domain TimeDomain) error {
	for {
		tm, ok, err := ts.Pop(upTo)
		if err != nil || !ok {
			return err
		}
		if err := k.t.backend.SetCurrentKey(tm.Key); err != nil {
			return k.t.errorf("timer: %w", err)
		}
		key, err := k.keySer.Decode(tm.Key)
		if err != nil {
			return k.t.errorf("timer key: %w", err)
		}
		k.ctx.key = key
		k.ctx.ts = tm.Timestamp
		info := TimerInfo{Timestamp: tm.Timestamp, Domain: domain}
		if info.Namespace, err = k.t.n.timerNamespaceOf(tm.Namespace); err != nil {
			return k.t.errorf("timer namespace: %w", err)
		}
		if err := k.fn.OnTimer(k.ctx, info); err != nil {
			return k.t.errorf("on timer: %w", err)
		}
	}
}

// addInputs adds to g the channels feeding input of t's subtask, each
// starting at the watermark its sender was restored with.
func addInputs[T any](t *task, g *gate, input int) {
	e := t.n.inputs[input]
	chans := t.att.chans[e].([][]chan *batch[T])
	for from := range chans {
		if e.kind == forwardEdge && from != t.subtask {
			continue
		}
		g.Add(input, chans[from][t.subtask], t.att.restoredWatermark(e.from))
	}
}
