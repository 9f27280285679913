package coord

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/engine/internal/chkstore"
	"github.com/stateproc/stateproc/engine/internal/flow"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// Checkpoint is one checkpoint or savepoint in flight. Its barrier carries
// it through the graph; every subtask writes its part through Files and
// acknowledges.
type Checkpoint struct {
	ID uint64
	// epoch is where the checkpoint cuts the input under DeterministicTime:
	// every source's part ends right after its first watermark at or above
	// epoch, before the records that watermark precedes, so that the cut
	// separates the records before the epoch from those after it on every
	// channel.
	epoch int64
	// Savepoint is set for a savepoint (a self-contained directory at the
	// requested place) as opposed to a periodic checkpoint.
	Savepoint bool
	// Final is set when the job stops after it: the savepoint it stops
	// with, or the checkpoint it ends with where it stops without one.
	Final  bool
	Target string
	// request is the savepoint request it answers, if any.
	request *Request
	Meta    *savepoint.Metadata
	// Files is what the subtasks have written into the checkpoint.
	Files *chkstore.Pending

	mu     sync.Mutex
	acks   int
	times  checkpointTimes
	bcast  map[int][]savepoint.BroadcastState
	opSubs map[int]map[string][][][]byte
	// Incremental is set when Pebble subtasks write native checkpoints:
	// for the periodic checkpoints of a Pebble job, never for a savepoint,
	// which must be canonical and self-contained.
	Incremental bool
}

// CheckpointID and Epoch make the checkpoint a gate's barrier.
func (cp *Checkpoint) CheckpointID() uint64 { return cp.ID }
func (cp *Checkpoint) Epoch() int64         { return cp.epoch }

// PutOperatorState records subtask's operator list states (by name, for
// the names given, of an operator of the given parallelism) and, when not
// nil, the operator's broadcast states, for the checkpoint's metadata.
func (cp *Checkpoint) PutOperatorState(op, parallelism, subtask int, names []string, lists map[string][][]byte, bcast []savepoint.BroadcastState) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if len(names) > 0 {
		subs := cp.opSubs[op]
		if subs == nil {
			subs = map[string][][][]byte{}
			cp.opSubs[op] = subs
		}
		for _, name := range names {
			s := subs[name]
			if s == nil {
				s = make([][][]byte, parallelism)
				subs[name] = s
			}
			s[subtask] = lists[name]
		}
	}
	if bcast != nil {
		cp.bcast[op] = bcast
	}
}

// MsgKind says what a message tells the coordinator.
type MsgKind uint8

// A source has paused for a checkpoint, a source has reached its end or
// stop position, a subtask has written its part of a checkpoint.
const (
	PreparedMsg MsgKind = iota + 1
	AtEndMsg
	AckMsg
)

// Role is what a subtask is, as far as the coordinator cares.
type Role uint8

// The roles of subtasks.
const (
	SourceRole Role = iota + 1
	KeyedRole
	SinkRole
	OtherRole
)

// Subtask is a subtask as the coordinator knows it: the engine's own.
type Subtask interface {
	comparable
	Role() Role
	// Commands is where a source subtask receives the coordinator's
	// commands.
	Commands() chan<- Command
}

// Message goes from a subtask to the coordinator.
type Message[S Subtask] struct {
	Kind MsgKind
	Task S
	ID   uint64
	// Watermark is the watermark a source has sent (PreparedMsg) or a
	// subtask had at the barrier (AckMsg); Now is its processing time there.
	Watermark, Now int64
	// AtEnd is set by a source that has reached its stop position or the
	// end of its input.
	AtEnd bool
}

// checkpointTimes gathers the subtasks' times at a checkpoint's barrier.
type checkpointTimes struct {
	keyed, any bool
	// latest is the highest processing time of the keyed subtasks (of any
	// subtask when there are none), oldest the lowest watermark.
	latest, latestAny, oldest int64
}

func (ct *checkpointTimes) add(role Role, now, watermark int64) {
	if role == SinkRole {
		// A sink keeps neither timers nor TTL state.
		return
	}
	if !ct.any {
		ct.latestAny, ct.oldest = now, watermark
	}
	ct.any = true
	ct.latestAny = max(ct.latestAny, now)
	ct.oldest = min(ct.oldest, watermark)
	if role != KeyedRole {
		return
	}
	if !ct.keyed {
		ct.latest = now
	}
	ct.keyed = true
	ct.latest = max(ct.latest, now)
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

// CmdKind says what a command asks of a source.
type CmdKind uint8

// Pause and report the watermark sent, for checkpoint ID; go on and send
// the barrier of Checkpoint; finish (draining, and with the barrier of
// Checkpoint, if set).
const (
	PrepareCmd CmdKind = iota + 1
	GoCmd
	FinishCmd
)

// Command goes from the coordinator to a source subtask.
type Command struct {
	Kind       CmdKind
	ID         uint64
	Checkpoint *Checkpoint
	Drain      bool
}

// Request asks the coordinator of the running attempt for a savepoint into
// Dir; Stop ends the job at it, after draining the event-time timers if
// Drain is set.
type Request struct {
	Dir         string
	Stop, Drain bool
	// Reply receives the outcome once, from the coordinator.
	Reply chan error
}

// Stats says what one periodic checkpoint wrote (the engine's
// CheckpointStats).
type Stats struct {
	ID      uint64
	Path    string
	Written int64
	Reused  int64
}

// ErrJobEnded is returned for a savepoint asked of a job that ended, or
// failed past its restarts, before it could take it.
var ErrJobEnded = errors.New("engine: the job has ended")

// Config is what the coordinator of one attempt runs with.
type Config[S Subtask] struct {
	// CheckpointDir is the checkpoint root, "" for none; Interval, when
	// positive, triggers a periodic checkpoint, and so does each delivery
	// of Now; Retain is how many to keep.
	CheckpointDir string
	Interval      time.Duration
	Now           <-chan struct{}
	Retain        int
	// Incremental makes periodic checkpoints incremental (Pebble).
	Incremental bool
	// StopAfter and StopAtWatermark are the sources' stop positions,
	// Drain whether the timers fire before a stop there; SavepointDir
	// receives a savepoint when the job stops.
	StopAfter, StopAtWatermark int64
	Drain                      bool
	SavepointDir               string

	// Sources are the source subtasks; Tasks counts every subtask, all of
	// which acknowledge a checkpoint; Upstream holds, for every keyed
	// operator, the source subtasks it reads from.
	Sources  []S
	Tasks    int
	Upstream []map[S]bool

	Store *chkstore.Store
	// Requests delivers the savepoint requests of the job's handle.
	Requests <-chan *Request
	// Metadata describes the job's operators for checkpoint id.
	Metadata func(id uint64) *savepoint.Metadata
	// Completed is told of every completed periodic checkpoint's
	// location.
	Completed func(target string)
	// BeforePublish, when set, runs once every subtask has acknowledged,
	// before the checkpoint is published: tests fail there.
	BeforePublish func(*Checkpoint) error
	// AfterPublish, when set, runs once the checkpoint is visible, before
	// it is recorded: tests report the publication failed there.
	AfterPublish func(*Checkpoint) error
}

// completed is the latest completed checkpoint of a run.
type completed struct {
	id   uint64
	path string
}

// Coordinator triggers checkpoints, collects acknowledgements, completes
// checkpoints and decides how the job ends.
//
// A checkpoint starts with a rendezvous of the sources: each pauses and
// reports the watermark it has sent; the coordinator sets the checkpoint's
// epoch above all of them and releases them to inject barriers. Each
// subtask acknowledges with its watermark and processing time at the
// barrier, from which the checkpoint takes its creation time and
// watermark.
type Coordinator[S Subtask] struct {
	cfg  Config[S]
	msgs chan Message[S]

	nextID    uint64
	preparing uint64
	prepared  map[S]Message[S]
	pending   *Checkpoint
	// unsettled is the periodic checkpoint whose publication failed, which
	// may nevertheless be visible (see settle); undecided is its location
	// when settle could not tell, under mu.
	unsettled *Checkpoint
	undecided string
	// inFlight is pending, for the gates: it is set before the sources may
	// send the watermark that announces its barrier.
	inFlight  atomic.Pointer[Checkpoint]
	atEnd     map[S]bool
	finishing bool
	// active is the savepoint request being served: queued until no
	// checkpoint is in flight, then its checkpoint's, until it completes.
	active        *Request
	activeStarted bool
	// final is the directory of the savepoint the job stopped with.
	final string

	mu     sync.Mutex
	latest completed
	// checkpoint is the latest completed periodic checkpoint: latest, unless
	// a savepoint completed after it.
	checkpoint completed
	count      int
	stats      []Stats
	changed    chan struct{}
}

// New returns the coordinator of an attempt whose first checkpoint is
// firstID.
func New[S Subtask](cfg Config[S], firstID uint64) *Coordinator[S] {
	return &Coordinator[S]{
		cfg:      cfg,
		msgs:     make(chan Message[S], 64),
		nextID:   firstID,
		prepared: map[S]Message[S]{},
		atEnd:    map[S]bool{},
		changed:  make(chan struct{}),
	}
}

// Send delivers a message unless the run is being torn down.
func (c *Coordinator[S]) Send(ctx context.Context, m Message[S]) error {
	select {
	case c.msgs <- m:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// LastCompleted returns the id of the latest completed checkpoint and a
// channel that is closed when another one completes.
func (c *Coordinator[S]) LastCompleted() (uint64, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.latest.id, c.changed
}

// LastCheckpoint returns the location of the latest completed periodic
// checkpoint, "" if none completed.
func (c *Coordinator[S]) LastCheckpoint() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checkpoint.path
}

// Completed returns how many checkpoints and savepoints completed, and the
// figures of the periodic ones.
func (c *Coordinator[S]) Completed() (int, []Stats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count, c.stats
}

// Final is the location of the savepoint the job stopped with, "" if none.
// It is read once Run has returned.
func (c *Coordinator[S]) Final() string { return c.final }

// Run runs the coordinator until the job ends or ctx is done.
func (c *Coordinator[S]) Run(ctx context.Context) error {
	var tick <-chan time.Time
	var now <-chan struct{}
	if c.cfg.CheckpointDir != "" {
		if d := c.cfg.Interval; d > 0 {
			t := time.NewTicker(d)
			defer t.Stop()
			tick = t.C
		}
		now = c.cfg.Now
	}
	for {
		var requests <-chan *Request
		if c.active == nil {
			requests = c.cfg.Requests
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

// Pending returns the checkpoint whose barriers are on their way, nil if
// none.
func (c *Coordinator[S]) Pending() *Checkpoint { return c.inFlight.Load() }

// Abort settles a checkpoint whose publication failed (see settle),
// discards the checkpoint in flight, if any, and fails the savepoint
// request being served with the attempt's outcome err. It runs
// once every subtask has stopped: the checkpoint's writer must not be
// aborted while a subtask still writes into it.
func (c *Coordinator[S]) Abort(err error) {
	c.settle()
	if c.pending != nil {
		c.cfg.Store.Discard(c.pending.Files)
		c.pending = nil
		c.inFlight.Store(nil)
	}
	if r := c.active; r != nil {
		c.active = nil
		if err == nil {
			err = ErrJobEnded
		}
		r.Reply <- fmt.Errorf("engine: savepoint %s: %w", r.Dir, err)
	}
}

func (c *Coordinator[S]) handle(ctx context.Context, m Message[S]) (bool, error) {
	switch m.Kind {
	case PreparedMsg:
		c.prepared[m.Task] = m
		if len(c.prepared) < len(c.cfg.Sources) {
			return false, nil
		}
		var r *Request
		if c.activeStarted {
			r = c.active
		}
		cp, err := c.newCheckpoint(ctx, c.preparing, c.epochAbove(), r)
		if err != nil {
			return false, err
		}
		c.preparing = 0
		clear(c.prepared)
		return false, c.command(ctx, Command{Kind: GoCmd, Checkpoint: cp})
	case AtEndMsg:
		c.atEnd[m.Task] = true
		return c.maybeFinish(ctx)
	case AckMsg:
		cp := c.pending
		if cp == nil || cp.ID != m.ID {
			return false, fmt.Errorf("engine: acknowledgement for checkpoint %d, which is not pending", m.ID)
		}
		cp.acks++
		cp.times.add(m.Task.Role(), m.Now, m.Watermark)
		if cp.acks < c.cfg.Tasks {
			return false, nil
		}
		c.pending = nil
		if err := c.complete(ctx, cp); err != nil {
			return false, err
		}
		if cp.request != nil {
			c.active = nil
			cp.request.Reply <- nil
		}
		if cp.Final {
			if cp.Savepoint {
				c.final = cp.Target
			}
			return true, nil
		}
		if err := c.maybeServe(ctx); err != nil {
			return false, err
		}
		return c.maybeFinish(ctx)
	}
	return false, fmt.Errorf("engine: unknown message %d", m.Kind)
}

// epochAbove returns the epoch of a checkpoint: just above the watermark
// that the keyed operators have read up to. A keyed subtask's gate reads no
// further than the lowest watermark of the sources upstream of it that are
// still reading, so the epoch goes above the highest such lowest watermark:
// no keyed gate has yet read a record of the epoch or after it, and every
// keyed gate still has an input below it, whose watermark completes its
// alignment. A stateless operator's gate reads only some of those sources,
// which may all be past the epoch already: it is aligned as soon as the
// checkpoint starts (flow.Gate.Next reports it), and what it passed on
// after their watermarks reached the epoch lies after the cut downstream.
// The sources already at or past the epoch cut their part where their
// watermark first reached it, those that read no more at their end; when
// no source upstream of a keyed operator reads any more, the cut is the end.
func (c *Coordinator[S]) epochAbove() int64 {
	e, reading := int64(flow.MinWatermark), false
	for _, sources := range c.cfg.Upstream {
		lowest, any := int64(flow.MaxWatermark), false
		for _, t := range c.cfg.Sources {
			if m := c.prepared[t]; sources[t] && !m.AtEnd {
				lowest, any = min(lowest, m.Watermark), true
			}
		}
		if any {
			e, reading = max(e, lowest), true
		}
	}
	if !reading || e == flow.MaxWatermark {
		return flow.MaxWatermark
	}
	return e + 1
}

// maybePrepare starts a periodic checkpoint by pausing the sources, unless
// one is in flight, a savepoint request waits, or the job is finishing.
func (c *Coordinator[S]) maybePrepare(ctx context.Context) error {
	if c.pending != nil || c.preparing != 0 || c.finishing || c.active != nil {
		return nil
	}
	c.preparing = c.nextID
	c.nextID++
	return c.command(ctx, Command{Kind: PrepareCmd, ID: c.preparing})
}

// maybeServe starts the savepoint request that waits, once no checkpoint
// is in flight. A savepoint while the job runs, and a stop without drain,
// begin as a periodic checkpoint does, with the rendezvous that places
// their epoch; a stop with drain sends the largest watermark first, which
// leaves no epoch to place.
func (c *Coordinator[S]) maybeServe(ctx context.Context) error {
	r := c.active
	if r == nil || c.activeStarted || c.pending != nil || c.preparing != 0 {
		return nil
	}
	if c.finishing {
		c.active = nil
		r.Reply <- fmt.Errorf("engine: savepoint %s: %w", r.Dir, ErrJobEnded)
		return nil
	}
	if err := FreeTarget(ctx, r.Dir); err != nil {
		c.active = nil
		r.Reply <- err
		return nil
	}
	c.activeStarted = true
	if r.Stop {
		// No periodic checkpoint, and no end of the input, comes between
		// the stop and its savepoint.
		c.finishing = true
	}
	if r.Stop && r.Drain {
		id := c.nextID
		c.nextID++
		cp, err := c.newCheckpoint(ctx, id, flow.MaxWatermark, r)
		if err != nil {
			return err
		}
		return c.command(ctx, Command{Kind: FinishCmd, Drain: true, Checkpoint: cp})
	}
	c.preparing = c.nextID
	c.nextID++
	return c.command(ctx, Command{Kind: PrepareCmd, ID: c.preparing})
}

// maybeFinish ends the job once every source has reached its end or stop
// position and no checkpoint is in flight: with a final savepoint if one
// was asked for, else with a final checkpoint where there is a checkpoint
// root. The sinks commit what they wrote once it completes, as after any
// checkpoint, so that a restart from the root's latest checkpoint (a
// process killed at the end, or run again) starts where the job ended and
// writes nothing twice.
func (c *Coordinator[S]) maybeFinish(ctx context.Context) (bool, error) {
	if c.finishing || c.pending != nil || c.preparing != 0 || c.active != nil || len(c.atEnd) < len(c.cfg.Sources) {
		return false, nil
	}
	c.finishing = true
	opts := &c.cfg
	cmd := Command{Kind: FinishCmd, Drain: opts.Drain || opts.StopAfter == 0 && opts.StopAtWatermark == 0}
	if opts.SavepointDir != "" {
		id := c.nextID
		c.nextID++
		// Every source is at its end: the drain's MaxWatermark, if any, is
		// the last watermark before the barrier.
		cp, err := c.newCheckpoint(ctx, id, flow.MaxWatermark, &Request{Dir: opts.SavepointDir, Stop: true})
		if err != nil {
			return false, err
		}
		cmd.Checkpoint = cp
	} else if opts.CheckpointDir != "" {
		id := c.nextID
		c.nextID++
		cp, err := c.newCheckpoint(ctx, id, flow.MaxWatermark, nil)
		if err != nil {
			return false, err
		}
		cp.Final = true
		cmd.Checkpoint = cp
	}
	if err := c.command(ctx, cmd); err != nil {
		return false, err
	}
	return cmd.Checkpoint == nil, nil
}

func (c *Coordinator[S]) command(ctx context.Context, cmd Command) error {
	for _, s := range c.cfg.Sources {
		select {
		case s.Commands() <- cmd:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// newCheckpoint begins checkpoint id: the savepoint r asks for, a periodic
// checkpoint when r is nil.
func (c *Coordinator[S]) newCheckpoint(ctx context.Context, id uint64, epoch int64, r *Request) (*Checkpoint, error) {
	isSavepoint := r != nil
	cp := &Checkpoint{ID: id, epoch: epoch, Savepoint: isSavepoint, Final: isSavepoint && r.Stop, Incremental: !isSavepoint && c.cfg.Incremental,
		bcast: map[int][]savepoint.BroadcastState{}, opSubs: map[int]map[string][][][]byte{}}
	if isSavepoint {
		cp.Target = r.Dir
		if r.Reply != nil {
			cp.request = r
		}
	} else {
		cp.Target = chkdir.Path(c.cfg.CheckpointDir, id)
	}
	cp.Meta = c.cfg.Metadata(id)
	files, err := c.cfg.Store.Begin(ctx, id, cp.Target, cp.Meta, cp.Savepoint, cp.Incremental)
	if err != nil {
		return nil, fmt.Errorf("engine: checkpoint %d: %w", id, err)
	}
	cp.Files = files
	c.pending = cp
	c.inFlight.Store(cp)
	return cp, nil
}

// complete writes the metadata that makes checkpoint cp whole and
// publishes it.
func (c *Coordinator[S]) complete(ctx context.Context, cp *Checkpoint) error {
	// A checkpoint that fails before its publication is discarded here: it
	// is no longer the one pending that Abort would discard.
	unpublished := func(err error) error {
		c.cfg.Store.Discard(cp.Files)
		return err
	}
	for op, states := range cp.opSubs {
		o := &cp.Meta.Operators[op]
		for i := range o.OperatorStates {
			subs := states[o.OperatorStates[i].Name]
			if len(subs) != o.Parallelism {
				return unpublished(fmt.Errorf("engine: checkpoint %d: operator %q state %q has %d of %d subtasks", cp.ID, o.UID, o.OperatorStates[i].Name, len(subs), o.Parallelism))
			}
			o.OperatorStates[i].Subtasks = subs
		}
	}
	for op, bs := range cp.bcast {
		cp.Meta.Operators[op].BroadcastStates = bs
	}
	cp.Meta.CreatedAt, cp.Meta.Watermark = cp.times.createdAt(), cp.times.oldest
	if c.cfg.BeforePublish != nil {
		if err := c.cfg.BeforePublish(cp); err != nil {
			return unpublished(fmt.Errorf("engine: checkpoint %d: %w", cp.ID, err))
		}
	}
	err := c.cfg.Store.Publish(ctx, cp.Files)
	if err == nil && c.cfg.AfterPublish != nil {
		err = c.cfg.AfterPublish(cp)
	}
	if err != nil {
		// A checkpoint not published for want of the root's hold is
		// settled already: a _metadata of its number there is another
		// run's.
		if !cp.Savepoint && !chkstore.Withheld(err) {
			c.unsettled = cp
		}
		return fmt.Errorf("engine: checkpoint %d: %w", cp.ID, err)
	}
	c.record(cp)
	// Retention comes after the checkpoint is recorded as the one to
	// restart from: a failure while it deletes old checkpoints (which takes
	// requests on a bucket) must not leave a published checkpoint that the
	// restart does not know of.
	if !cp.Savepoint {
		return c.cfg.Store.Retain(ctx, c.cfg.Retain)
	}
	return nil
}

// record makes cp the latest completed checkpoint.
func (c *Coordinator[S]) record(cp *Checkpoint) {
	c.inFlight.Store(nil)
	c.mu.Lock()
	c.latest = completed{id: cp.ID, path: cp.Target}
	c.count++
	if !cp.Savepoint {
		c.cfg.Completed(cp.Target)
		c.checkpoint = c.latest
		c.stats = append(c.stats, Stats{ID: cp.ID, Path: cp.Target, Written: cp.Files.Written(), Reused: cp.Files.Reused()})
	}
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// settleTimeout bounds the look at a checkpoint whose publication failed,
// which runs when the attempt's context may be done.
const settleTimeout = time.Minute

// settle decides the checkpoint whose publication failed, if any. A failed
// publication may still have made the checkpoint visible (in a bucket, the
// answer to the PUT of _metadata can be lost after the server stored it,
// or the run can be cancelled while the request is on its way), and a
// restart from the checkpoint before it would then drop the transactions
// that the visible one holds pending and take its number again. Begin made
// sure that nothing held the checkpoint's number, one attempt writes its
// checkpoints one at a time, and the run holds the root (settle takes a
// lapsed lease back first, and settles nothing if another run took it), so
// whatever _metadata is there now is the attempt's own: the checkpoint is
// recorded as completed.
func (c *Coordinator[S]) settle() {
	cp := c.unsettled
	if cp == nil {
		return
	}
	c.unsettled = nil
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	// What is there is the attempt's own only while the run holds the
	// root: one that lost it to another settles nothing, and stops; one
	// whose store cannot tell leaves the checkpoint undecided, for the
	// restart to look at once it holds the root again.
	if err := c.cfg.Store.Reclaim(ctx); err != nil {
		if !chkstore.Taken(err) {
			c.mu.Lock()
			c.undecided = cp.Target
			c.mu.Unlock()
		}
		return
	}
	visible, err := chkstore.Exists(ctx, cp.Target)
	switch {
	case err != nil:
		c.mu.Lock()
		c.undecided = cp.Target
		c.mu.Unlock()
	case visible:
		c.record(cp)
	}
}

// Undecided returns the location of the checkpoint whose publication
// failed and which settle could not tell visible or not, or "". A restart
// must not take the checkpoint before it until that is told: were this one
// visible, the restart would drop the transactions it holds pending.
func (c *Coordinator[S]) Undecided() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.undecided
}

// FreeTarget refuses a savepoint target that exists, a directory or a
// bucket prefix with a _metadata: a savepoint never replaces anything.
func FreeTarget(ctx context.Context, dir string) error {
	if exists, err := chkstore.Exists(ctx, dir); err != nil {
		return fmt.Errorf("engine: savepoint target: %w", err)
	} else if exists {
		return fmt.Errorf("engine: savepoint target %s already exists", storage.Shown(dir))
	}
	return nil
}
