package engine

import (
	"context"

	"github.com/stateproc/stateproc/keygroup"
)

// batchSize is how many records a batch holds before it is sent.
const batchSize = 512

// output sends one subtask's records to every downstream edge.
type output[T any] struct {
	ctx    context.Context
	routes []*route[T]
	key    []byte
	// interrupt, when set, is read while a send waits, and what it
	// delivers handed to onInterrupt: a source obeys the coordinator even
	// while its outputs are full.
	interrupt   <-chan sourceCmd
	onInterrupt func(sourceCmd) error
	// sides are the subtask's side outputs that something reads, in tag
	// order.
	sides []namedSide
}

type route[T any] struct {
	kind     edgeKind
	chans    []chan *batch[T]
	pending  []*batch[T]
	keyBytes func(dst []byte, v T) ([]byte, error)
	maxP     int
	self     int
	next     int
}

func newOutput[T any](t *task) *output[T] {
	o := &output[T]{ctx: t.ctx, sides: newSideOutputs(t)}
	o.routes = newRoutes[T](t, "")
	return o
}

// newRoutes returns the routes of t's output edges that carry the side
// output side, or the main output when side is empty.
func newRoutes[T any](t *task, side string) []*route[T] {
	var routes []*route[T]
	for _, e := range t.n.outputs {
		if e.side != side {
			continue
		}
		chans := t.att.chans[e].([][]chan *batch[T])[t.subtask]
		r := &route[T]{kind: e.kind, chans: chans, pending: make([]*batch[T], len(chans)), maxP: e.to.maxParallelism, self: t.subtask}
		if e.kind == hashEdge {
			r.keyBytes = e.keyBytes.(func([]byte, T) ([]byte, error))
		}
		routes = append(routes, r)
	}
	return routes
}

// targets returns the downstream subtasks a control event goes to: the one
// a forward edge connects, or all of them.
func (r *route[T]) targets() (lo, hi int) {
	if r.kind == forwardEdge {
		return r.self, r.self + 1
	}
	return 0, len(r.chans)
}

func (o *output[T]) emit(v T, ts int64) error {
	for _, r := range o.routes {
		switch r.kind {
		case forwardEdge:
			if err := o.add(r, r.self, v, ts, nil); err != nil {
				return err
			}
		case rebalanceEdge:
			i := r.next
			r.next = (r.next + 1) % len(r.chans)
			if err := o.add(r, i, v, ts, nil); err != nil {
				return err
			}
		case broadcastEdge:
			for i := range r.chans {
				if err := o.add(r, i, v, ts, nil); err != nil {
					return err
				}
			}
		case hashEdge:
			k, err := r.keyBytes(o.key[:0], v)
			if err != nil {
				return err
			}
			o.key = k
			target := keygroup.Subtask(keygroup.Of(k, r.maxP), len(r.chans), r.maxP)
			if err := o.add(r, target, v, ts, k); err != nil {
				return err
			}
		}
	}
	return nil
}

func (o *output[T]) add(r *route[T], i int, v T, ts int64, key []byte) error {
	b := r.pending[i]
	if b == nil {
		b = &batch[T]{recs: make([]record[T], 0, batchSize)}
		r.pending[i] = b
	}
	rec := record[T]{v: v, ts: ts}
	if key != nil {
		start := len(b.arena)
		b.arena = append(b.arena, key...)
		rec.key = b.arena[start:len(b.arena):len(b.arena)]
	}
	b.recs = append(b.recs, rec)
	if len(b.recs) >= batchSize {
		r.pending[i] = nil
		return o.send(r.chans[i], b)
	}
	return nil
}

func (o *output[T]) send(ch chan *batch[T], b *batch[T]) error {
	for {
		select {
		case ch <- b:
			return nil
		case cmd := <-o.interrupt:
			if err := o.onInterrupt(cmd); err != nil {
				return err
			}
		case <-o.ctx.Done():
			return context.Cause(o.ctx)
		}
	}
}

// control flushes every pending batch and sends c after the records, in
// order, to every connected downstream subtask, side outputs included.
func (o *output[T]) control(c control) error {
	for _, s := range o.sides {
		if err := s.out.control(c); err != nil {
			return err
		}
	}
	for _, r := range o.routes {
		lo, hi := r.targets()
		for i := lo; i < hi; i++ {
			b := r.pending[i]
			r.pending[i] = nil
			if b == nil {
				b = &batch[T]{}
			}
			b.ctl = c
			if err := o.send(r.chans[i], b); err != nil {
				return err
			}
		}
	}
	return nil
}
