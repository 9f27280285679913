package engine

import (
	"context"

	"github.com/stateproc/stateproc/engine/internal/flow"
)

// Map applies fn to every record of s; the result keeps the record's event
// time. The operator holds no state, so it needs no UID; its subtasks
// take part in checkpoints only by passing the barriers on.
func Map[T, U any](s Stream[T], fn func(ctx context.Context, v T) (U, error), opts ...OperatorOption) Stream[U] {
	return stateless[T, U](s.job, "map", []Stream[T]{s}, opts, func(ctx context.Context, v T, ts int64, out *output[U]) error {
		u, err := fn(ctx, v)
		if err != nil {
			return err
		}
		return out.emit(u, ts)
	})
}

// Filter keeps the records of s for which keep returns true.
func Filter[T any](s Stream[T], keep func(ctx context.Context, v T) (bool, error), opts ...OperatorOption) Stream[T] {
	return stateless[T, T](s.job, "filter", []Stream[T]{s}, opts, func(ctx context.Context, v T, ts int64, out *output[T]) error {
		ok, err := keep(ctx, v)
		if err != nil || !ok {
			return err
		}
		return out.emit(v, ts)
	})
}

// FlatMap calls fn for every record of s; what fn passes to emit goes
// downstream with the record's event time.
func FlatMap[T, U any](s Stream[T], fn func(ctx context.Context, v T, emit func(U) error) error, opts ...OperatorOption) Stream[U] {
	return stateless[T, U](s.job, "flat-map", []Stream[T]{s}, opts, func(ctx context.Context, v T, ts int64, out *output[U]) error {
		return fn(ctx, v, func(u U) error { return out.emit(u, ts) })
	})
}

// Union merges streams of one type into one: every record of each, in no
// order between them; its watermark is the lowest of theirs.
func Union[T any](s Stream[T], others ...Stream[T]) Stream[T] {
	return stateless[T, T](s.job, "union", append([]Stream[T]{s}, others...), nil, func(_ context.Context, v T, ts int64, out *output[T]) error {
		return out.emit(v, ts)
	})
}

func stateless[T, U any](j *Job, name string, ins []Stream[T], opts []OperatorOption, apply func(context.Context, T, int64, *output[U]) error) Stream[U] {
	n := j.addNode(statelessNode, name, opts)
	for i, s := range ins {
		connect(s, n, forwardEdgeFor(s.node, n), i, nil)
	}
	n.run = func(t *task) error { return runStateless(t, len(ins), apply) }
	return Stream[U]{job: j, node: n}
}

// runStateless runs one subtask of a stateless operator: records through
// apply, watermarks, status and barriers on as a keyed subtask passes
// them. Under DeterministicTime its gate reads in watermark order too, so
// that the records it sends after a watermark are those of its epoch.
func runStateless[T, U any](t *task, inputs int, apply func(context.Context, T, int64, *output[U]) error) error {
	out := newOutput[U](t)
	g := t.newGate()
	for i := range inputs {
		addInputs[T](t, g, i)
	}
	if t.att.opts.ProcessingTime.deterministic() {
		g.Order(t.att.coord.Pending)
	}
	status := flow.Active
	for {
		ch, v, err := g.Next()
		if err != nil {
			return err
		}
		if ch == flow.AlignedChannel {
			if err := passAligned(t, out, g.TakeAligned()); err != nil {
				return err
			}
			continue
		}
		b := v.(*batch[T])
		for i := range b.recs {
			if err := apply(t.ctx, b.recs[i].v, b.recs[i].ts, out); err != nil {
				return t.errorf("%s: %w", t.n.name, err)
			}
		}
		if b.ctl.Kind == flow.NoControl {
			continue
		}
		r := g.OnControl(ch, b.ctl)
		if r.WatermarkAdvanced {
			t.watermark = g.Watermark()
			t.clock.follow(g.Watermark())
			if err := out.control(control{Kind: flow.WatermarkControl, Watermark: g.Watermark()}); err != nil {
				return err
			}
		}
		if s := g.OutputStatus(); s != status && !r.Ended {
			status = s
			if err := out.control(control{Kind: flow.StatusControl, Status: s}); err != nil {
				return err
			}
		}
		if r.Aligned != nil {
			if err := passAligned(t, out, r.Aligned); err != nil {
				return err
			}
		}
		if r.Ended {
			return out.control(control{Kind: flow.EndControl})
		}
	}
}

// passAligned takes a stateless subtask's part of checkpoint cp, whose
// alignment is complete, and passes its barrier on.
func passAligned[U any](t *task, out *output[U], cp *checkpoint) error {
	if err := t.snapshot(cp); err != nil {
		return err
	}
	return out.control(control{Kind: flow.BarrierControl, Barrier: cp})
}
