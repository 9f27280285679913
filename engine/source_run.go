package engine

import "fmt"

// sourceRunner runs one source subtask: it reads its splits round-robin,
// emits watermarks, and obeys the coordinator's commands.
type sourceRunner[T any] struct {
	t       *task
	src     Source[T]
	wm      Watermarks
	out     *output[T]
	cursors []*splitCursor[T]
	next    int
	emitted int64
	count   int
	atEnd   bool
}

func runSource[T any](t *task, src Source[T], wm Watermarks) error {
	r := &sourceRunner[T]{t: t, src: src, wm: wm, out: newOutput[T](t), emitted: MinWatermark}
	if err := r.open(); err != nil {
		return err
	}
	t.snapshotOp = r.snapshotState
	for {
		if r.atEnd {
			select {
			case cmd := <-t.control:
				if done, err := r.command(cmd); done || err != nil {
					return err
				}
			case <-t.ctx.Done():
				return nil
			}
			continue
		}
		select {
		case cmd := <-t.control:
			if done, err := r.command(cmd); done || err != nil {
				return err
			}
			continue
		case <-t.ctx.Done():
			return nil
		default:
		}
		if err := r.step(); err != nil {
			return err
		}
	}
}

// open assigns splits: those in the restored operator state, or split s to
// subtask s mod parallelism on a fresh start.
func (r *sourceRunner[T]) open() error {
	t := r.t
	var positions []splitPosition
	if saved, ok := t.restoredOp[sourceStateName]; ok {
		for _, e := range saved {
			p, err := splitPositionSerializer.Decode(e)
			if err != nil {
				return permanent(t.errorf("restored split position: %w", err))
			}
			if int(p.Split) < 0 || int(p.Split) >= r.src.Splits() {
				return permanent(t.errorf("restored split %d, but the source has %d splits", p.Split, r.src.Splits()))
			}
			positions = append(positions, p)
		}
	} else {
		for s := t.subtask; s < r.src.Splits(); s += t.n.parallelism {
			positions = append(positions, splitPosition{Split: int32(s), MaxEventTime: MinWatermark})
		}
	}
	for _, p := range positions {
		c := &splitCursor[T]{pos: p, limit: -1}
		if n := t.att.opts.StopAfter; n > 0 {
			c.limit = stopOffset(n, int(p.Split), r.src.Splits())
		}
		rd, err := r.src.Open(int(p.Split), p.Offset)
		if err != nil {
			return t.errorf("open split %d at %d: %w", p.Split, p.Offset, err)
		}
		c.reader = rd
		r.cursors = append(r.cursors, c)
	}
	return nil
}

// step reads one record from the next split that can be read, or reports
// the end when none can.
func (r *sourceRunner[T]) step() error {
	for i := 0; i < len(r.cursors); i++ {
		c := r.cursors[(r.next+i)%len(r.cursors)]
		if c.ended || c.paused() {
			continue
		}
		r.next = (r.next + i + 1) % len(r.cursors)
		v, ts, ok, err := c.reader.Next()
		if err != nil {
			return r.t.errorf("split %d at offset %d: %w", c.pos.Split, c.pos.Offset, err)
		}
		if !ok {
			c.ended = true
			return r.emitWatermark()
		}
		c.pos.Offset++
		c.pos.MaxEventTime = max(c.pos.MaxEventTime, ts)
		if err := r.out.emit(v, ts); err != nil {
			return err
		}
		r.count++
		if r.count%r.wm.Every == 0 {
			return r.emitWatermark()
		}
		return nil
	}
	r.atEnd = true
	if err := r.emitWatermark(); err != nil {
		return err
	}
	return r.t.att.coord.send(r.t.ctx, message{kind: atEndMsg, task: r.t, maxTs: r.maxEventTime()})
}

func (r *sourceRunner[T]) watermark() int64 {
	w := int64(MaxWatermark)
	for _, c := range r.cursors {
		w = min(w, c.watermark(r.wm.OutOfOrderness))
	}
	return w
}

func (r *sourceRunner[T]) emitWatermark() error {
	w := r.watermark()
	if w <= r.emitted {
		return nil
	}
	r.emitted = w
	return r.out.control(control{kind: watermarkControl, watermark: w})
}

func (r *sourceRunner[T]) maxEventTime() int64 {
	m := int64(MinWatermark)
	for _, c := range r.cursors {
		m = max(m, c.pos.MaxEventTime)
	}
	return m
}

// command obeys the coordinator; it reports true when the subtask is done.
func (r *sourceRunner[T]) command(cmd sourceCmd) (bool, error) {
	t := r.t
	switch cmd.kind {
	case prepareCmd:
		if err := t.att.coord.send(t.ctx, message{kind: preparedMsg, task: t, id: cmd.id, maxTs: r.maxEventTime()}); err != nil {
			return false, err
		}
		select {
		case next := <-t.control:
			if next.kind != goCmd || next.cp.id != cmd.id {
				return false, t.errorf("checkpoint %d: expected the go-ahead, got command %d", cmd.id, next.kind)
			}
			return false, r.barrier(next.cp)
		case <-t.ctx.Done():
			return true, nil
		}
	case finishCmd:
		if cmd.drain {
			if err := r.drain(); err != nil {
				return false, err
			}
		}
		if cmd.cp != nil {
			if err := r.barrier(cmd.cp); err != nil {
				return false, err
			}
		}
		return true, r.out.control(control{kind: endControl})
	}
	return false, fmt.Errorf("engine: source got unexpected command %d", cmd.kind)
}

// drain lets every event-time timer downstream fire: the input is over.
func (r *sourceRunner[T]) drain() error {
	if r.emitted == MaxWatermark {
		return nil
	}
	r.emitted = MaxWatermark
	return r.out.control(control{kind: watermarkControl, watermark: MaxWatermark})
}

func (r *sourceRunner[T]) barrier(cp *checkpoint) error {
	if err := r.t.snapshot(cp); err != nil {
		return err
	}
	return r.out.control(control{kind: barrierControl, barrier: cp})
}

func (r *sourceRunner[T]) snapshotState(*checkpoint) (map[string][][]byte, error) {
	var list [][]byte
	for _, c := range r.cursors {
		b, err := splitPositionSerializer.Append(nil, c.pos)
		if err != nil {
			return nil, err
		}
		list = append(list, b)
	}
	return map[string][][]byte{sourceStateName: list}, nil
}
