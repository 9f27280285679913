package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/stateproc/stateproc/engine/internal/coord"
	"github.com/stateproc/stateproc/engine/internal/flow"
)

// sourceRunner runs one source subtask: it reads its splits, lowest
// progress first, sends watermarks, and obeys the coordinator's commands,
// also while it waits to send, to align or for input.
type sourceRunner[T any] struct {
	t       *task
	src     Source[T]
	wm      Watermarks
	out     *output[T]
	cursors []*splitCursor[T]
	// ordered is set under DeterministicTime; priming until the first
	// watermark has gone out, which there comes before any record.
	ordered, priming bool
	group            *alignGroup
	status           flow.Status
	atEnd            bool

	// cuts holds, under DeterministicTime, where the subtask stood right
	// after each watermark it sent that a later checkpoint's epoch may
	// still fall at or below (see cutFor); frontier the watermarks of
	// every source subtask of the job, below which none can.
	cuts     []cutPoint
	frontier *alignGroup
	// stopHere is set once the subtask has sent a watermark at or above
	// RunOptions.StopAtWatermark.
	stopHere bool

	// awaiting is the checkpoint the subtask has prepared and waits for the
	// go-ahead of, owed whether it has held a watermark back meanwhile;
	// barrier is the checkpoint whose barrier it sends next, and cut, if
	// set, the positions its snapshot holds; finish the command that ends
	// the subtask.
	awaiting uint64
	owed     bool
	barrier  *checkpoint
	cut      []splitPosition
	finish   *sourceCmd
	// stopped is set once the barrier of a savepoint that stops the job
	// has gone out: the subtask reads no more and ends.
	stopped bool
	// starved is set while none of the subtask's splits has a record to
	// give now (each said ErrNothingAvailable and waits to be asked again).
	starved bool
}

func runSource[T any](t *task, src Source[T], wm Watermarks) error {
	r := &sourceRunner[T]{t: t, src: src, wm: wm, out: newOutput[T](t), ordered: t.att.opts.ProcessingTime.deterministic(),
		group: t.att.groups[wm.AlignmentGroup], frontier: t.att.frontier}
	t.watermark = MinWatermark
	r.out.interrupt, r.out.onInterrupt = t.control, r.command
	if err := r.open(); err != nil {
		return err
	}
	t.snapshotOp = r.snapshotState
	if r.ordered {
		r.priming = r.unread()
	}
	if !r.priming {
		// A restored subtask says where it stands before anything else.
		if err := r.emitWatermark(); err != nil {
			return err
		}
	}
	for {
		select {
		case cmd := <-t.control:
			if err := r.command(cmd); err != nil {
				return err
			}
			continue
		case <-t.ctx.Done():
			return nil
		default:
		}
		if r.stopped {
			return r.out.control(control{Kind: flow.EndControl})
		}
		if r.finish != nil {
			return r.finishUp(*r.finish)
		}
		if r.owed && r.awaiting == 0 {
			r.owed = false
			if err := r.emitWatermark(); err != nil {
				return err
			}
			continue
		}
		if r.barrier != nil && r.barrierDue() {
			if err := r.sendBarrier(); err != nil {
				return err
			}
			continue
		}
		var err error
		switch {
		case r.awaiting != 0 || r.atEnd:
			err = r.waitFor(nil, nil)
		case r.mustAlign():
			_, changed := r.group.Lowest()
			err = r.waitFor(changed, nil)
		default:
			err = r.step()
		}
		if errors.Is(err, errStopped) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// errStopped ends the subtask quietly: the run is being torn down.
var errStopped = errors.New("engine: stopped")

// open assigns splits, split s to subtask s mod parallelism, at the
// positions of the restored operator state, which holds every split's
// (whatever distribution a savepoint names), or at their start.
func (r *sourceRunner[T]) open() error {
	t := r.t
	if err := r.checkIdentities(); err != nil {
		return err
	}
	saved := map[int32]splitPosition{}
	if elems, ok := t.restoredOp[sourceStateName]; ok {
		for _, e := range elems {
			p, err := splitPositionSerializer.Decode(e)
			if err != nil {
				return permanent(t.errorf("restored split position: %w", err))
			}
			if int(p.Split) < 0 || int(p.Split) >= r.src.Splits() {
				return permanent(t.errorf("restored split %d, but the source has %d splits", p.Split, r.src.Splits()))
			}
			if _, dup := saved[p.Split]; dup {
				return permanent(t.errorf("restored split %d twice", p.Split))
			}
			saved[p.Split] = p
		}
		if len(saved) != r.src.Splits() {
			return permanent(t.errorf("restored %d split positions, but the source has %d splits", len(saved), r.src.Splits()))
		}
	}
	var positions []splitPosition
	for s := t.subtask; s < r.src.Splits(); s += t.n.parallelism {
		p, ok := saved[int32(s)]
		if !ok {
			p = splitPosition{Split: int32(s), MaxEventTime: MinWatermark}
		}
		positions = append(positions, p)
	}
	for _, p := range positions {
		c := &splitCursor[T]{pos: p, limit: -1}
		if n := t.att.opts.StopAfter; n > 0 {
			c.limit = stopOffset(n, int(p.Split), r.src.Splits())
		}
		rd, err := r.src.Open(t.ctx, int(p.Split), p.Offset)
		if err != nil {
			return t.errorf("open split %d at %d: %w", p.Split, p.Offset, err)
		}
		c.reader = rd
		if c.positioned, _ = rd.(PositionReader); c.positioned == nil {
			c.read = p.Offset
		}
		r.cursors = append(r.cursors, c)
	}
	return nil
}

// checkIdentities compares the split identities the restored operator
// state holds with the source's, when it has them.
func (r *sourceRunner[T]) checkIdentities() error {
	t := r.t
	ider, ok := r.src.(SplitIdentifier)
	elems, saved := t.restoredOp[splitIdentityStateName]
	if !ok || !saved {
		return nil
	}
	for _, e := range elems {
		id, err := splitIdentitySerializer.Decode(e)
		if err != nil {
			return permanent(t.errorf("restored split identity: %w", err))
		}
		s := int(id.Split)
		if s < 0 || s >= r.src.Splits() {
			return permanent(t.errorf("restored split %d (%s), but the source has %d splits: its input changed since the snapshot", s, id.Identity, r.src.Splits()))
		}
		if now := ider.SplitIdentity(s); now != id.Identity {
			return permanent(t.errorf("restored split %d was %s, but is now %s: the source's input changed since the snapshot", s, id.Identity, now))
		}
	}
	if len(elems) != r.src.Splits() {
		return permanent(t.errorf("restored %d split identities, but the source has %d splits: its input changed since the snapshot", len(elems), r.src.Splits()))
	}
	return nil
}

// unread reports whether a split that can still be read has not yielded a
// record yet: until then the subtask has no watermark.
func (r *sourceRunner[T]) unread() bool {
	for _, c := range r.cursors {
		if !c.ended && !c.paused() && !c.idle && c.held == nil && c.pos.MaxEventTime == MinWatermark {
			return true
		}
	}
	return false
}

// choose returns the split to read next: of those that can be read now,
// the one with the lowest progress, then the lowest index, so that the
// order depends only on the splits' positions, which a checkpoint keeps.
// When none can be read now but some may soon, wait says for how long.
func (r *sourceRunner[T]) choose(now time.Time) (c *splitCursor[T], wait time.Duration) {
	for _, x := range r.cursors {
		if x.ended || x.paused() {
			continue
		}
		if x.retry.After(now) {
			if d := x.retry.Sub(now); wait == 0 || d < wait {
				wait = d
			}
			continue
		}
		if c == nil || x.pos.MaxEventTime < c.pos.MaxEventTime || x.pos.MaxEventTime == c.pos.MaxEventTime && x.pos.Split < c.pos.Split {
			c = x
		}
	}
	return c, wait
}

// step reads one record, or notes that there is none yet, or that the
// subtask has reached its end.
func (r *sourceRunner[T]) step() error {
	now := time.Now()
	c, wait := r.choose(now)
	if r.stopHere {
		c, wait = nil, 0
	}
	r.starved = c == nil && wait > 0
	if c == nil {
		if wait > 0 {
			return r.waitFor(nil, time.After(wait))
		}
		return r.reachEnd()
	}
	var v T
	var ts int64
	pos := c.pos.Offset + 1
	if h := c.held; h != nil {
		v, ts, pos, c.held = h.v, h.ts, h.pos, nil
	} else {
		var ok bool
		var err error
		v, ts, ok, err = c.reader.Next(r.t.ctx)
		switch {
		case errors.Is(err, ErrNothingAvailable):
			if c.nothing(now, r.wm.IdleTimeout) {
				return r.idleChanged()
			}
			return nil
		case err != nil:
			return r.t.errorf("split %d at offset %d: %w", c.pos.Split, c.pos.Offset, err)
		case !ok:
			c.ended = true
			return r.emitWatermark()
		}
		if c.positioned != nil {
			pos = c.positioned.Position()
		}
		c.observe(ts, r.wm.MaxAdvance.Milliseconds())
		c.since, c.retry = time.Time{}, time.Time{}
		if c.idle {
			c.idle = false
			if err := r.idleChanged(); err != nil {
				return err
			}
		}
		if r.priming {
			c.held = &heldRecord[T]{v: v, ts: ts, pos: pos}
			if r.priming = r.unread(); !r.priming {
				return r.emitWatermark()
			}
			return nil
		}
	}
	c.pos.Offset = pos
	c.read++
	if err := r.out.emit(v, ts); err != nil {
		return err
	}
	if c.read%int64(r.wm.Every) == 0 || c.paused() {
		return r.emitWatermark()
	}
	return nil
}

// watermark is the lowest of the splits' that are neither finished nor
// idle; with only idle ones left, it stays where it is.
func (r *sourceRunner[T]) watermark() int64 {
	w, holding, idling := int64(MaxWatermark), false, false
	for _, c := range r.cursors {
		switch {
		case c.ended:
		case c.idle:
			idling = true
		default:
			holding = true
			w = min(w, c.watermark(r.wm.OutOfOrderness.Milliseconds()))
		}
	}
	if !holding && idling {
		return r.t.watermark
	}
	return w
}

// emitWatermark sends the subtask's watermark if it has advanced, and
// then, under DeterministicTime, the barrier it announces. Between
// reporting its watermark for a checkpoint and the go-ahead, the subtask
// owes it instead: the checkpoint's epoch must stay above what it sent.
func (r *sourceRunner[T]) emitWatermark() error {
	t := r.t
	if r.awaiting != 0 {
		r.owed = true
		return nil
	}
	w := r.watermark()
	if w <= t.watermark {
		return nil
	}
	t.watermark = w
	t.clock.follow(w)
	if err := r.out.control(control{Kind: flow.WatermarkControl, Watermark: w}); err != nil {
		return err
	}
	r.publish()
	if r.ordered {
		r.cuts = append(r.cuts, cutPoint{watermark: w, positions: r.positions()})
		r.pruneCuts()
	}
	if r.ordered && r.barrier != nil && w >= r.barrier.Epoch() {
		if err := r.sendBarrier(); err != nil {
			return err
		}
	}
	if at := t.att.opts.StopAtWatermark; at != 0 && w >= at {
		r.stopHere = true
	}
	return nil
}

// publish tells the alignment group, and the job's frontier, where the
// subtask stands.
func (r *sourceRunner[T]) publish() {
	out := r.atEnd || r.status == flow.Idle
	if r.group != nil {
		r.group.Update(r.t, r.t.watermark, out)
	}
	if r.frontier != nil {
		r.frontier.Update(r.t, r.t.watermark, out)
	}
}

// cutPoint is where a source subtask stood right after sending a
// watermark.
type cutPoint struct {
	watermark int64
	positions []splitPosition
}

func (r *sourceRunner[T]) positions() []splitPosition {
	ps := make([]splitPosition, len(r.cursors))
	for i, c := range r.cursors {
		ps[i] = c.pos
	}
	return ps
}

// pruneCuts drops the cut points no checkpoint can use: a checkpoint's
// epoch is above the lowest watermark of the sources still reading when it
// starts, so it is above the lowest of them now.
func (r *sourceRunner[T]) pruneCuts() {
	if r.awaiting != 0 || r.barrier != nil {
		// The epoch of the checkpoint under way is where the job's lowest
		// watermark stood when it started, not where it stands now.
		return
	}
	lowest, _ := r.frontier.Lowest()
	i := 0
	for i < len(r.cuts) && r.cuts[i].watermark <= lowest {
		i++
	}
	r.cuts = r.cuts[i:]
}

// cutFor returns the positions at which checkpoint cp cuts the subtask's
// part: right after its first watermark at or above the epoch. Whatever it
// sent after that watermark, the checkpoint's gates leave for after the
// snapshot, and a restore reads again. Nil when it sent no such watermark,
// as it reads no more: the cut is where it stands.
func (r *sourceRunner[T]) cutFor(cp *checkpoint) []splitPosition {
	for i, c := range r.cuts {
		if c.watermark >= cp.Epoch() {
			// The next checkpoint's epoch is higher, and may still be at
			// or below this watermark.
			r.cuts = r.cuts[i:]
			return c.positions
		}
	}
	r.cuts = r.cuts[:0]
	return nil
}

// mustAlign reports whether the subtask is too far ahead of its alignment
// group to read on.
func (r *sourceRunner[T]) mustAlign() bool {
	if r.group == nil || r.t.watermark == MinWatermark || r.status == flow.Idle {
		return false
	}
	lowest, _ := r.group.Lowest()
	return r.t.watermark > addSat(lowest, r.wm.MaxDrift.Milliseconds())
}

// idleChanged updates the watermark and the outputs' status after a split
// went idle or came back.
func (r *sourceRunner[T]) idleChanged() error {
	if err := r.emitWatermark(); err != nil {
		return err
	}
	s := flow.Active
	if !r.atEnd {
		s = flow.Idle
		for _, c := range r.cursors {
			if !c.ended && !c.paused() && !c.idle {
				s = flow.Active
			}
		}
	}
	return r.setStatus(s)
}

func (r *sourceRunner[T]) setStatus(s flow.Status) error {
	if s == r.status {
		return nil
	}
	r.status = s
	if err := r.out.control(control{Kind: flow.StatusControl, Status: s}); err != nil {
		return err
	}
	r.publish()
	return nil
}

// reachEnd is called when every split has ended or stopped.
func (r *sourceRunner[T]) reachEnd() error {
	if err := r.emitWatermark(); err != nil {
		return err
	}
	r.atEnd = true
	if err := r.setStatus(flow.Stopped); err != nil {
		return err
	}
	r.publish()
	if r.barrier != nil {
		if err := r.sendBarrier(); err != nil {
			return err
		}
		if r.stopped {
			return nil
		}
	}
	return r.t.att.coord.Send(r.t.ctx, message{Kind: coord.AtEndMsg, Task: r.t})
}

// waitFor waits for a command, for the channel wake, or for the timer to
// deliver.
func (r *sourceRunner[T]) waitFor(wake <-chan struct{}, timer <-chan time.Time) error {
	select {
	case cmd := <-r.t.control:
		return r.command(cmd)
	case <-wake:
		return nil
	case <-timer:
		return nil
	case <-r.t.ctx.Done():
		return errStopped
	}
}

// command takes a command of the coordinator. It may come while the
// subtask waits to send, so it sends nothing downstream itself.
func (r *sourceRunner[T]) command(cmd sourceCmd) error {
	t := r.t
	switch cmd.Kind {
	case coord.PrepareCmd:
		r.awaiting = cmd.ID
		return t.att.coord.Send(t.ctx, message{Kind: coord.PreparedMsg, Task: t, ID: cmd.ID, Watermark: t.watermark, AtEnd: r.atEnd || r.status == flow.Idle})
	case coord.GoCmd:
		if cmd.Checkpoint.ID != r.awaiting {
			return t.errorf("checkpoint %d: go-ahead while preparing %d", cmd.Checkpoint.ID, r.awaiting)
		}
		r.awaiting, r.barrier = 0, cmd.Checkpoint
		return nil
	case coord.FinishCmd:
		r.finish = &cmd
		return nil
	}
	return fmt.Errorf("engine: source got unexpected command %d", cmd.Kind)
}

// barrierDue reports whether the pending barrier goes out now. Under
// DeterministicTime it goes out with the snapshot of the cut: right after
// the first watermark at or above the checkpoint's epoch, or at once when
// that watermark has gone out already or the subtask reads nothing more,
// for good or for now. A subtask that has nothing to read may never send
// that watermark, and the checkpoint (a savepoint that stops the job, too)
// would wait for input that need not come. Its cut is where it stands, as
// an idle subtask's is: every record it sent comes before its barrier, and
// the gates downstream read them all before they align on it.
func (r *sourceRunner[T]) barrierDue() bool {
	return !r.ordered || r.atEnd || r.status == flow.Idle || r.starved || r.t.watermark >= r.barrier.Epoch()
}

func (r *sourceRunner[T]) sendBarrier() error {
	cp := r.barrier
	r.barrier = nil
	if r.ordered {
		r.cut = r.cutFor(cp)
	}
	err := r.t.snapshot(cp)
	r.cut = nil
	if err != nil {
		return err
	}
	r.stopped = cp.Final
	return r.out.control(control{Kind: flow.BarrierControl, Barrier: cp})
}

// finishUp ends the subtask: the input is over, so a drain lets every
// event-time timer downstream fire; then the final savepoint's barrier,
// if any, and the end.
func (r *sourceRunner[T]) finishUp(cmd sourceCmd) error {
	if cmd.Drain && r.t.watermark != MaxWatermark {
		r.t.watermark = MaxWatermark
		if err := r.out.control(control{Kind: flow.WatermarkControl, Watermark: MaxWatermark}); err != nil {
			return err
		}
	}
	if cmd.Checkpoint != nil {
		r.barrier = cmd.Checkpoint
		if err := r.sendBarrier(); err != nil {
			return err
		}
	}
	return r.out.control(control{Kind: flow.EndControl})
}

func (r *sourceRunner[T]) snapshotState(*checkpoint) (map[string][][]byte, error) {
	ps := r.cut
	if ps == nil {
		ps = r.positions()
	}
	var list [][]byte
	for _, p := range ps {
		b, err := splitPositionSerializer.Append(nil, p)
		if err != nil {
			return nil, err
		}
		list = append(list, b)
	}
	states := map[string][][]byte{sourceStateName: list}
	if ider, ok := r.src.(SplitIdentifier); ok {
		var ids [][]byte
		for _, p := range ps {
			b, err := splitIdentitySerializer.Append(nil, splitIdentity{Split: p.Split, Identity: ider.SplitIdentity(int(p.Split))})
			if err != nil {
				return nil, err
			}
			ids = append(ids, b)
		}
		states[splitIdentityStateName] = ids
	}
	return states, nil
}
