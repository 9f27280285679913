package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/engine/internal/chkstore"
	"github.com/stateproc/stateproc/savepoint"
)

// checkpoint is one checkpoint or savepoint in flight. Its barrier carries
// it through the graph; every subtask writes its part through writer and
// acknowledges.
type checkpoint struct {
	id uint64
	// epoch is where the checkpoint cuts the input under DeterministicTime:
	// every source's part ends right after its first watermark at or above
	// epoch, before the records that watermark precedes, so that the cut
	// separates the records before the epoch from those after it on every
	// channel.
	epoch int64
	// savepoint is set for a savepoint (a self-contained directory at the
	// requested place) as opposed to a periodic checkpoint.
	savepoint bool
	// final is set when the job stops after it.
	final  bool
	target string
	// request is the savepoint request it answers, if any.
	request *savepointRequest
	meta    *savepoint.Metadata
	// files is what the subtasks have written into the checkpoint.
	files *chkstore.Pending

	mu     sync.Mutex
	acks   int
	times  checkpointTimes
	bcast  map[int][]savepoint.BroadcastState
	opSubs map[int]map[string][][][]byte
	// incremental is set when Pebble subtasks write native checkpoints:
	// for the periodic checkpoints of a Pebble job, never for a savepoint,
	// which must be canonical and self-contained.
	incremental bool
}

// CheckpointID and Epoch make the checkpoint a gate's barrier.
func (cp *checkpoint) CheckpointID() uint64 { return cp.id }
func (cp *checkpoint) Epoch() int64         { return cp.epoch }

type msgKind uint8

const (
	preparedMsg msgKind = iota + 1
	atEndMsg
	ackMsg
)

// message goes from a subtask to the coordinator.
type message struct {
	kind msgKind
	task *task
	id   uint64
	// watermark is the watermark a source has sent (preparedMsg) or a
	// subtask had at the barrier (ackMsg); now is its processing time there.
	watermark, now int64
	// atEnd is set by a source that has reached its stop position or the
	// end of its input.
	atEnd bool
}

// checkpointTimes gathers the subtasks' times at a checkpoint's barrier.
type checkpointTimes struct {
	keyed, any bool
	// latest is the highest processing time of the keyed subtasks (of any
	// subtask when there are none), oldest the lowest watermark.
	latest, latestAny, oldest int64
}

func (ct *checkpointTimes) add(m message) {
	if m.task.n.kind == sinkNode {
		// A sink keeps neither timers nor TTL state.
		return
	}
	if !ct.any {
		ct.latestAny, ct.oldest = m.now, m.watermark
	}
	ct.any = true
	ct.latestAny = max(ct.latestAny, m.now)
	ct.oldest = min(ct.oldest, m.watermark)
	if m.task.n.kind != keyedNode {
		return
	}
	if !ct.keyed {
		ct.latest = m.now
	}
	ct.keyed = true
	ct.latest = max(ct.latest, m.now)
}

// createdAt is the checkpoint's time: the latest processing time of a
// subtask that holds keyed state, so that no TTL entry it holds is
// expired at that time unless its subtask saw it expired.
func (ct *checkpointTimes) createdAt() int64 {
	if ct.keyed {
		return ct.latest
	}
	return ct.latestAny
}

type cmdKind uint8

const (
	prepareCmd cmdKind = iota + 1
	goCmd
	finishCmd
)

// sourceCmd goes from the coordinator to a source subtask.
type sourceCmd struct {
	kind  cmdKind
	id    uint64
	cp    *checkpoint
	drain bool
}

// completed is the latest completed checkpoint of a run.
type completed struct {
	id   uint64
	path string
}

// coordinator triggers checkpoints, collects acknowledgements, completes
// checkpoints and decides how the job ends.
//
// A checkpoint starts with a rendezvous of the sources: each pauses and
// reports the watermark it has sent; the coordinator sets the checkpoint's
// epoch above all of them and releases them to inject barriers. Each
// subtask acknowledges with its watermark and processing time at the
// barrier, from which the checkpoint takes its creation time and
// watermark.
type coordinator struct {
	att     *attempt
	msgs    chan message
	sources []*task

	nextID    uint64
	preparing uint64
	prepared  map[*task]message
	pending   *checkpoint
	// inFlight is pending, for the gates: it is set before the sources may
	// send the watermark that announces its barrier.
	inFlight  atomic.Pointer[checkpoint]
	atEnd     map[*task]bool
	finishing bool
	// active is the savepoint request being served: queued until no
	// checkpoint is in flight, then its checkpoint's, until it completes.
	active        *savepointRequest
	activeStarted bool
	// final is the directory of the savepoint the job stopped with.
	final string

	mu     sync.Mutex
	latest completed
	// checkpoint is the latest completed periodic checkpoint: latest, unless
	// a savepoint completed after it.
	checkpoint completed
	count      int
	stats      []CheckpointStats
	changed    chan struct{}
}

func newCoordinator(att *attempt, firstID uint64) *coordinator {
	return &coordinator{
		att:      att,
		msgs:     make(chan message, 64),
		nextID:   firstID,
		prepared: map[*task]message{},
		atEnd:    map[*task]bool{},
		changed:  make(chan struct{}),
	}
}

// send delivers a message unless the run is being torn down.
func (c *coordinator) send(ctx context.Context, m message) error {
	select {
	case c.msgs <- m:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// lastCompleted returns the latest completed checkpoint and a channel that
// is closed when another one completes.
func (c *coordinator) lastCompleted() (completed, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.latest, c.changed
}

func (c *coordinator) run(ctx context.Context) error {
	var tick <-chan time.Time
	var now <-chan struct{}
	if c.att.opts.CheckpointDir != "" {
		if d := c.att.opts.CheckpointInterval; d > 0 {
			t := time.NewTicker(d)
			defer t.Stop()
			tick = t.C
		}
		now = c.att.opts.checkpointNow
	}
	for {
		var requests <-chan *savepointRequest
		if c.active == nil {
			requests = c.att.handle.requests
		}
		select {
		case <-ctx.Done():
			return nil
		case r := <-requests:
			c.active, c.activeStarted = r, false
			if err := c.maybeServe(ctx); err != nil {
				return err
			}
		case <-tick:
			if err := c.maybePrepare(ctx); err != nil {
				return err
			}
		case <-now:
			if err := c.maybePrepare(ctx); err != nil {
				return err
			}
		case m := <-c.msgs:
			done, err := c.handle(ctx, m)
			if err != nil || done {
				return err
			}
		}
	}
}

// pendingCheckpoint returns the checkpoint whose barriers are on their way,
// nil if none.
func (c *coordinator) pendingCheckpoint() *checkpoint { return c.inFlight.Load() }

// abort discards the checkpoint in flight, if any, and fails the
// savepoint request being served with the attempt's outcome err. It runs
// once every subtask has stopped: the checkpoint's writer must not be
// aborted while a subtask still writes into it.
func (c *coordinator) abort(err error) {
	if c.pending != nil {
		c.att.store.Discard(c.pending.files)
		c.pending = nil
		c.inFlight.Store(nil)
	}
	if r := c.active; r != nil {
		c.active = nil
		if err == nil {
			err = ErrJobEnded
		}
		r.reply <- fmt.Errorf("engine: savepoint %s: %w", r.dir, err)
	}
}

func (c *coordinator) handle(ctx context.Context, m message) (bool, error) {
	switch m.kind {
	case preparedMsg:
		c.prepared[m.task] = m
		if len(c.prepared) < len(c.sources) {
			return false, nil
		}
		var r *savepointRequest
		if c.activeStarted {
			r = c.active
		}
		cp, err := c.newCheckpoint(ctx, c.preparing, c.epochAbove(), r)
		if err != nil {
			return false, err
		}
		c.preparing = 0
		clear(c.prepared)
		return false, c.command(ctx, sourceCmd{kind: goCmd, cp: cp})
	case atEndMsg:
		c.atEnd[m.task] = true
		return c.maybeFinish(ctx)
	case ackMsg:
		cp := c.pending
		if cp == nil || cp.id != m.id {
			return false, fmt.Errorf("engine: acknowledgement for checkpoint %d, which is not pending", m.id)
		}
		cp.acks++
		cp.times.add(m)
		if cp.acks < len(c.att.tasks) {
			return false, nil
		}
		c.pending = nil
		if err := c.complete(ctx, cp); err != nil {
			return false, err
		}
		if cp.request != nil {
			c.active = nil
			cp.request.reply <- nil
		}
		if cp.final {
			c.final = cp.target
			return true, nil
		}
		if err := c.maybeServe(ctx); err != nil {
			return false, err
		}
		return c.maybeFinish(ctx)
	}
	return false, fmt.Errorf("engine: unknown message %d", m.kind)
}

// epochAbove returns the epoch of a checkpoint: just above the watermark
// that the keyed operators have read up to. A keyed subtask's gate reads no
// further than the lowest watermark of the sources upstream of it that are
// still reading, so the epoch goes above the highest such lowest watermark:
// no gate has yet read a record of the epoch or after it, and every gate
// still has an input below it, whose watermark completes its alignment.
// The sources already at or past the epoch cut their part where their
// watermark first reached it, those that read no more at their end; when
// no source upstream of a keyed operator reads any more, the cut is the end.
func (c *coordinator) epochAbove() int64 {
	e, reading := int64(MinWatermark), false
	for _, sources := range c.att.upstream {
		lowest, any := int64(MaxWatermark), false
		for _, t := range c.sources {
			if m := c.prepared[t]; sources[t.n] && !m.atEnd {
				lowest, any = min(lowest, m.watermark), true
			}
		}
		if any {
			e, reading = max(e, lowest), true
		}
	}
	if !reading || e == MaxWatermark {
		return MaxWatermark
	}
	return e + 1
}

// maybePrepare starts a periodic checkpoint by pausing the sources, unless
// one is in flight, a savepoint request waits, or the job is finishing.
func (c *coordinator) maybePrepare(ctx context.Context) error {
	if c.pending != nil || c.preparing != 0 || c.finishing || c.active != nil {
		return nil
	}
	c.preparing = c.nextID
	c.nextID++
	return c.command(ctx, sourceCmd{kind: prepareCmd, id: c.preparing})
}

// maybeServe starts the savepoint request that waits, once no checkpoint
// is in flight. A savepoint while the job runs, and a stop without drain,
// begin as a periodic checkpoint does, with the rendezvous that places
// their epoch; a stop with drain sends the largest watermark first, which
// leaves no epoch to place.
func (c *coordinator) maybeServe(ctx context.Context) error {
	r := c.active
	if r == nil || c.activeStarted || c.pending != nil || c.preparing != 0 {
		return nil
	}
	if c.finishing {
		c.active = nil
		r.reply <- fmt.Errorf("engine: savepoint %s: %w", r.dir, ErrJobEnded)
		return nil
	}
	if err := freeTarget(ctx, r.dir); err != nil {
		c.active = nil
		r.reply <- err
		return nil
	}
	c.activeStarted = true
	if r.stop {
		// No periodic checkpoint, and no end of the input, comes between
		// the stop and its savepoint.
		c.finishing = true
	}
	if r.stop && r.drain {
		id := c.nextID
		c.nextID++
		cp, err := c.newCheckpoint(ctx, id, MaxWatermark, r)
		if err != nil {
			return err
		}
		return c.command(ctx, sourceCmd{kind: finishCmd, drain: true, cp: cp})
	}
	c.preparing = c.nextID
	c.nextID++
	return c.command(ctx, sourceCmd{kind: prepareCmd, id: c.preparing})
}

// maybeFinish ends the job once every source has reached its end or stop
// position and no checkpoint is in flight: with a final savepoint if one
// was asked for.
func (c *coordinator) maybeFinish(ctx context.Context) (bool, error) {
	if c.finishing || c.pending != nil || c.preparing != 0 || c.active != nil || len(c.atEnd) < len(c.sources) {
		return false, nil
	}
	c.finishing = true
	opts := c.att.opts
	cmd := sourceCmd{kind: finishCmd, drain: opts.Drain || opts.StopAfter == 0 && opts.StopAtWatermark == 0}
	if opts.SavepointDir != "" {
		id := c.nextID
		c.nextID++
		// Every source is at its end: the drain's MaxWatermark, if any, is
		// the last watermark before the barrier.
		cp, err := c.newCheckpoint(ctx, id, MaxWatermark, &savepointRequest{dir: opts.SavepointDir, stop: true})
		if err != nil {
			return false, err
		}
		cmd.cp = cp
	}
	if err := c.command(ctx, cmd); err != nil {
		return false, err
	}
	return cmd.cp == nil, nil
}

func (c *coordinator) command(ctx context.Context, cmd sourceCmd) error {
	for _, s := range c.sources {
		select {
		case s.control <- cmd:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// newCheckpoint begins checkpoint id: the savepoint r asks for, a periodic
// checkpoint when r is nil.
func (c *coordinator) newCheckpoint(ctx context.Context, id uint64, epoch int64, r *savepointRequest) (*checkpoint, error) {
	isSavepoint := r != nil
	cp := &checkpoint{id: id, epoch: epoch, savepoint: isSavepoint, final: isSavepoint && r.stop, incremental: !isSavepoint && c.att.opts.Backend == Pebble,
		bcast: map[int][]savepoint.BroadcastState{}, opSubs: map[int]map[string][][][]byte{}}
	if isSavepoint {
		cp.target = r.dir
		if r.reply != nil {
			cp.request = r
		}
	} else {
		cp.target = chkdir.Path(c.att.opts.CheckpointDir, id)
	}
	cp.meta = c.att.metadata(id)
	files, err := c.att.store.Begin(ctx, id, cp.target, cp.meta, cp.savepoint, cp.incremental)
	if err != nil {
		return nil, fmt.Errorf("engine: checkpoint %d: %w", id, err)
	}
	cp.files = files
	c.pending = cp
	c.inFlight.Store(cp)
	return cp, nil
}

// complete writes the metadata that makes checkpoint cp whole and
// publishes it.
func (c *coordinator) complete(ctx context.Context, cp *checkpoint) error {
	for op, states := range cp.opSubs {
		o := &cp.meta.Operators[op]
		for i := range o.OperatorStates {
			subs := states[o.OperatorStates[i].Name]
			if len(subs) != o.Parallelism {
				return fmt.Errorf("engine: checkpoint %d: operator %q state %q has %d of %d subtasks", cp.id, o.UID, o.OperatorStates[i].Name, len(subs), o.Parallelism)
			}
			o.OperatorStates[i].Subtasks = subs
		}
	}
	for op, bs := range cp.bcast {
		cp.meta.Operators[op].BroadcastStates = bs
	}
	cp.meta.CreatedAt, cp.meta.Watermark = cp.times.createdAt(), cp.times.oldest
	if err := c.att.fault(faultComplete, nil, cp); err != nil {
		return fmt.Errorf("engine: checkpoint %d: %w", cp.id, err)
	}
	if err := c.att.store.Publish(ctx, cp.files); err != nil {
		return fmt.Errorf("engine: checkpoint %d: %w", cp.id, err)
	}
	c.inFlight.Store(nil)
	c.mu.Lock()
	c.latest = completed{id: cp.id, path: cp.target}
	c.count++
	if !cp.savepoint {
		c.att.handle.noteCheckpoint(cp.target)
		c.checkpoint = c.latest
		c.stats = append(c.stats, CheckpointStats{ID: cp.id, Path: cp.target, Written: cp.files.Written(), Reused: cp.files.Reused()})
	}
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	// Retention comes after the checkpoint is recorded as the one to
	// restart from: a failure while it deletes old checkpoints (which takes
	// requests on a bucket) must not leave a published checkpoint that the
	// restart does not know of.
	if !cp.savepoint {
		return c.att.store.Retain(ctx, c.att.opts.RetainCheckpoints)
	}
	return nil
}
