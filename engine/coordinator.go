package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// checkpoint is one checkpoint or savepoint in flight. Its barrier carries
// it through the graph; every subtask writes its part through writer and
// acknowledges.
type checkpoint struct {
	id uint64
	// time is the job clock at the barrier: the largest event time any
	// source had read. It is the savepoint's creation time and the "now" of
	// full-snapshot TTL cleanup, and it does not depend on scheduling.
	time int64
	// savepoint is set for a savepoint (a self-contained directory at the
	// requested place) as opposed to a periodic checkpoint.
	savepoint bool
	// final is set when the job stops after it.
	final   bool
	target  string
	meta    *savepoint.Metadata
	staging *countingStaging
	writer  *snapshotfmt.Writer

	mu     sync.Mutex
	acks   int
	bcast  map[int][]savepoint.BroadcastState
	opSubs map[int]map[string][][][]byte
	// incremental is set when Pebble subtasks write native checkpoints:
	// for the periodic checkpoints of a Pebble job, never for a savepoint,
	// which must be canonical and self-contained.
	incremental bool
	// native lists the Pebble subtasks' native checkpoints; shared counts
	// the bytes they added to shared/ and reused the bytes they found there.
	native         []nativeDB
	shared, reused int64
}

type msgKind uint8

const (
	preparedMsg msgKind = iota + 1
	atEndMsg
	ackMsg
)

// message goes from a subtask to the coordinator.
type message struct {
	kind  msgKind
	task  *task
	id    uint64
	maxTs int64
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
// reports the largest event time it has read; the coordinator takes the
// maximum as the checkpoint's time and releases them to inject barriers.
// This gives every barrier the same, schedule-independent time.
type coordinator struct {
	att     *attempt
	msgs    chan message
	sources []*task

	nextID    uint64
	preparing uint64
	prepared  map[*task]int64
	pending   *checkpoint
	atEnd     map[*task]int64
	finishing bool

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
		prepared: map[*task]int64{},
		atEnd:    map[*task]int64{},
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
		select {
		case <-ctx.Done():
			return nil
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

// abort discards the checkpoint in flight, if any. It runs once every
// subtask has stopped: the checkpoint's writer must not be aborted while a
// subtask still writes into it.
func (c *coordinator) abort() {
	if c.pending != nil {
		c.pending.writer.Abort()
		c.pending = nil
	}
}

func (c *coordinator) handle(ctx context.Context, m message) (bool, error) {
	switch m.kind {
	case preparedMsg:
		c.prepared[m.task] = m.maxTs
		if len(c.prepared) < len(c.sources) {
			return false, nil
		}
		cp, err := c.newCheckpoint(ctx, c.preparing, maxOf(c.prepared), false, false)
		if err != nil {
			return false, err
		}
		c.preparing = 0
		clear(c.prepared)
		return false, c.command(ctx, sourceCmd{kind: goCmd, cp: cp})
	case atEndMsg:
		c.atEnd[m.task] = m.maxTs
		return c.maybeFinish(ctx)
	case ackMsg:
		cp := c.pending
		if cp == nil || cp.id != m.id {
			return false, fmt.Errorf("engine: acknowledgement for checkpoint %d, which is not pending", m.id)
		}
		cp.acks++
		if cp.acks < len(c.att.tasks) {
			return false, nil
		}
		c.pending = nil
		if err := c.complete(ctx, cp); err != nil {
			return false, err
		}
		if cp.final {
			return true, nil
		}
		return c.maybeFinish(ctx)
	}
	return false, fmt.Errorf("engine: unknown message %d", m.kind)
}

func maxOf(m map[*task]int64) int64 {
	t := int64(0)
	first := true
	for _, v := range m {
		if v == MinWatermark {
			continue
		}
		if first || v > t {
			t, first = v, false
		}
	}
	return t
}

// maybePrepare starts a periodic checkpoint by pausing the sources, unless
// one is in flight or the job is finishing.
func (c *coordinator) maybePrepare(ctx context.Context) error {
	if c.pending != nil || c.preparing != 0 || c.finishing {
		return nil
	}
	c.preparing = c.nextID
	c.nextID++
	return c.command(ctx, sourceCmd{kind: prepareCmd, id: c.preparing})
}

// maybeFinish ends the job once every source has reached its end or stop
// position and no checkpoint is in flight: with a final savepoint if one
// was asked for.
func (c *coordinator) maybeFinish(ctx context.Context) (bool, error) {
	if c.finishing || c.pending != nil || c.preparing != 0 || len(c.atEnd) < len(c.sources) {
		return false, nil
	}
	c.finishing = true
	opts := c.att.opts
	cmd := sourceCmd{kind: finishCmd, drain: opts.Drain || opts.StopAfter == 0}
	if opts.SavepointDir != "" {
		id := c.nextID
		c.nextID++
		cp, err := c.newCheckpoint(ctx, id, maxOf(c.atEnd), true, true)
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

func (c *coordinator) newCheckpoint(ctx context.Context, id uint64, at int64, isSavepoint, final bool) (*checkpoint, error) {
	cp := &checkpoint{id: id, time: at, savepoint: isSavepoint, final: final, incremental: !isSavepoint && c.att.opts.Backend == Pebble,
		bcast: map[int][]savepoint.BroadcastState{}, opSubs: map[int]map[string][][][]byte{}}
	if isSavepoint {
		cp.target = c.att.opts.SavepointDir
	} else {
		cp.target = checkpointPath(c.att.opts.CheckpointDir, id)
	}
	cp.meta = c.att.metadata(id, at)
	if err := c.att.store.begin(ctx, cp); err != nil {
		return nil, fmt.Errorf("engine: checkpoint %d: %w", id, err)
	}
	c.pending = cp
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
	if err := cp.writeManifest(ctx); err != nil {
		return fmt.Errorf("engine: checkpoint %d: %w", cp.id, err)
	}
	if err := cp.writer.Finish(ctx); err != nil {
		return fmt.Errorf("engine: checkpoint %d: %w", cp.id, err)
	}
	if !cp.savepoint {
		if err := c.att.store.retain(c.att.opts.RetainCheckpoints); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.latest = completed{id: cp.id, path: cp.target}
	c.count++
	if !cp.savepoint {
		c.checkpoint = c.latest
		c.stats = append(c.stats, CheckpointStats{ID: cp.id, Path: cp.target, Written: cp.staging.written.Load() + cp.shared, Reused: cp.reused})
	}
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	return nil
}
