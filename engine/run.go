package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stateproc/stateproc/engine/heapbackend"
	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/engine/internal/chkstore"
	"github.com/stateproc/stateproc/engine/internal/coord"
	"github.com/stateproc/stateproc/engine/internal/flow"
	"github.com/stateproc/stateproc/engine/pebblebackend"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/internal/workdir"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// BackendKind selects where keyed state lives.
type BackendKind string

const (
	// Heap keeps Go values in memory.
	Heap BackendKind = "heap"
	// Pebble keeps serialized bytes in a Pebble LSM per subtask.
	Pebble BackendKind = "pebble"
)

// RunOptions controls a run of a job.
type RunOptions struct {
	Backend BackendKind
	// WorkDir holds the Pebble databases; a temporary directory when empty.
	WorkDir string
	// ProcessingTime is where processing time, which TTL and
	// processing-time timers run on, comes from: WallClock (the default),
	// DeterministicTime, or ClockTime of a clock of the caller's.
	ProcessingTime ProcessingTimeMode

	// RestoreFrom is a savepoint or checkpoint directory to start from.
	RestoreFrom string
	// RestoreLatest starts from the latest complete checkpoint under
	// CheckpointDir, as after a crash, chosen once the run holds the root:
	// a checkpoint chosen before may be retained away, or superseded, by a
	// run that still held it (LatestCheckpoint is for looking only). It
	// fails when the root holds no checkpoint.
	RestoreLatest bool
	// AllowNonRestoredState drops state of the savepoint that no operator
	// of the job claims, instead of failing.
	AllowNonRestoredState bool

	// CheckpointDir is the checkpoint root; with CheckpointInterval > 0 the
	// job takes periodic checkpoints there and keeps the last
	// RetainCheckpoints of them (default 2). The package documentation
	// describes the layout; on Pebble the checkpoints are incremental.
	CheckpointDir      string
	CheckpointInterval time.Duration
	RetainCheckpoints  int
	// CheckpointLease is the term of the run's lease on a checkpoint root
	// in a bucket (see the package documentation): how long after its last
	// renewal a run that died without releasing it holds up the next run
	// into the root. The run renews it every sixth of the term and writes
	// nothing more under the root once half of it has passed since its
	// last renewal. 0 means DefaultCheckpointLease; it is at least
	// MinCheckpointLease. A root on disk is held by a lock that goes with
	// its process.
	CheckpointLease time.Duration
	// MaxRestarts is how many times a failed run restarts from its last
	// completed checkpoint. A failure that a restart cannot cure ends the
	// run at once: a checkpoint or savepoint that does not read or that the
	// job cannot take (a store that does not answer is one failed attempt).
	MaxRestarts int

	// StopAfter stops every source after that many records in all (dealt
	// round-robin over its splits) instead of at the end of its input: a
	// source position, so that a savepoint taken there is reproducible.
	// Each split stops at its own position, so where splits run apart in
	// event time the first to stop holds the watermark back while the
	// others read on.
	StopAfter int64
	// StopAtWatermark, when nonzero, stops every source subtask right after
	// the first watermark it sends at or above it (or at the end of its
	// input): a stop in event time. A savepoint taken there is a cut
	// through the order in which DeterministicTime processes records, so a
	// run restored from it goes on exactly as a run without the stop.
	StopAtWatermark int64
	// Drain lets every event-time timer fire before a stop at StopAfter or
	// StopAtWatermark. A job that reaches the end of its input always
	// drains.
	Drain bool
	// SavepointDir, when set, receives a savepoint when the job stops.
	SavepointDir string

	// Compression is the block compression of checkpoints and savepoints.
	Compression snapshotfmt.Codec
	// ChannelCapacity is the number of batches a channel buffers; 0 means 4.
	ChannelCapacity int

	// checkpointNow triggers a checkpoint, as the interval does, each time
	// it delivers (and no checkpoint is in flight): tests place checkpoints
	// where they need them.
	checkpointNow <-chan struct{}
	// inject, when set, is asked at each fault point whether to fail there:
	// tests break checkpoints and restores where they can break.
	inject func(p faultPoint, t *task, cp *checkpoint) error
}

// faultPoint is a place where tests inject failures.
type faultPoint uint8

const (
	// faultSnapshot: a keyed subtask at a checkpoint's barrier, before it
	// writes its part.
	faultSnapshot faultPoint = iota + 1
	// faultComplete: the coordinator, every subtask having acknowledged,
	// before it publishes the checkpoint.
	faultComplete
	// faultPublished: the coordinator, once the checkpoint is visible: the
	// publication is reported failed, as when the answer to its last write
	// is lost.
	faultPublished
	// faultRestore: a keyed subtask before it restores its key groups.
	faultRestore
)

func (a *attempt) fault(p faultPoint, t *task, cp *checkpoint) error {
	if a.opts.inject == nil {
		return nil
	}
	return a.opts.inject(p, t, cp)
}

// Result summarizes a run.
type Result struct {
	// Savepoint is the final savepoint's directory, if one was taken.
	Savepoint string
	// Checkpoints counts the checkpoints completed in the last attempt.
	Checkpoints int
	// LastCheckpoint is the directory of the latest completed periodic
	// checkpoint, whichever attempt took it.
	LastCheckpoint string
	// Restarts counts the restarts after failures.
	Restarts int
	// Restored lists, per attempt, the savepoint or checkpoint it started
	// from, "" for a fresh start.
	Restored []string
	// CheckpointStats describes the periodic checkpoints completed in every
	// attempt, in order.
	CheckpointStats []CheckpointStats
}

// CheckpointStats says what one periodic checkpoint wrote.
type CheckpointStats struct {
	ID   uint64
	Path string
	// Written is the bytes the checkpoint added to the checkpoint root:
	// every file in its directory and the shared files it added, whether
	// hard linked from a database or copied.
	Written int64
	// Reused is the bytes of the shared files it references that earlier
	// checkpoints had written.
	Reused int64
}

// DefaultCheckpointLease is RunOptions.CheckpointLease's default: the
// next run into a bucket root waits at most that long for a killed run's
// lease, and a run tolerates up to half of it of a store that does not
// answer its renewals, and the other half of clock skew between hosts.
const DefaultCheckpointLease = 30 * time.Second

// MinCheckpointLease is the shortest RunOptions.CheckpointLease.
const MinCheckpointLease = storage.MinHoldTerm

// errPermanent marks failures a restart cannot cure, such as a savepoint
// the job cannot restore.
type errPermanent struct{ error }

func (e errPermanent) Unwrap() error { return e.error }

func permanent(err error) error { return errPermanent{err} }

// Run starts the job and waits for it: the convenience for a bounded job,
// which runs until its sources end or stop, restarting from the last
// completed checkpoint after a failure. Start returns a handle instead, for
// a job that runs until it is stopped.
func Run(ctx context.Context, j *Job, opts RunOptions) (*Result, error) {
	h, err := Start(ctx, j, opts)
	if err != nil {
		return nil, err
	}
	return h.Wait()
}

// prepare validates the job and the options and fills in the defaults.
func prepare(ctx context.Context, j *Job, opts *RunOptions) error {
	if err := j.Validate(); err != nil {
		return err
	}
	if opts.Backend == "" {
		opts.Backend = Heap
	}
	if opts.Backend != Heap && opts.Backend != Pebble {
		return fmt.Errorf("engine: unknown backend %q", opts.Backend)
	}
	if err := opts.ProcessingTime.validate(); err != nil {
		return err
	}
	if opts.StopAfter != 0 && opts.StopAtWatermark != 0 {
		return fmt.Errorf("engine: StopAfter and StopAtWatermark both set")
	}
	if opts.RestoreLatest && (opts.CheckpointDir == "" || opts.RestoreFrom != "") {
		return fmt.Errorf("engine: RestoreLatest needs a CheckpointDir and no RestoreFrom")
	}
	if opts.CheckpointLease == 0 {
		opts.CheckpointLease = DefaultCheckpointLease
	}
	if opts.CheckpointLease < MinCheckpointLease {
		return fmt.Errorf("engine: CheckpointLease %v: at least %v", opts.CheckpointLease, MinCheckpointLease)
	}
	if opts.RetainCheckpoints <= 0 {
		opts.RetainCheckpoints = 2
	}
	if opts.ChannelCapacity <= 0 {
		opts.ChannelCapacity = 4
	}
	// The locations are checked before the run: a file:// URL is the local
	// path it names, and a location that does not parse is an error now,
	// not a directory of its spelling under the working directory, nor a
	// failure at the end of the run.
	for _, l := range []struct {
		what string
		dir  *string
	}{{"checkpoint root", &opts.CheckpointDir}, {"savepoint target", &opts.SavepointDir}, {"restore from", &opts.RestoreFrom}} {
		if *l.dir == "" {
			continue
		}
		loc, err := storage.ParseLocation(*l.dir)
		if err != nil {
			return fmt.Errorf("engine: %s: %w", l.what, err)
		}
		if !loc.IsBucket() {
			*l.dir = loc.Path
		}
	}
	if opts.SavepointDir != "" {
		if err := coord.FreeTarget(ctx, opts.SavepointDir); err != nil {
			return err
		}
	}
	return nil
}

// run runs the job's attempts until one ends without failing, a failure
// cannot be cured by a restart, or the restarts are used up.
func (h *Handle) run(ctx context.Context, j *Job, opts RunOptions) (res *Result, err error) {
	if opts.WorkDir == "" {
		work, err := workdir.Create("", "stateproc-run-")
		if err != nil {
			return nil, err
		}
		defer work.Remove()
		opts.WorkDir = work.Path
	}
	if opts.CheckpointDir != "" {
		hold, err := chkstore.HoldRoot(ctx, opts.CheckpointDir, opts.CheckpointLease)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("engine: taking the checkpoint root: %w", context.Cause(ctx))
			}
			return nil, err
		}
		defer func() {
			// A hold not released lapses, and holds up the next run
			// meanwhile: the run's error.
			err = errors.Join(err, hold.Release(ctx))
		}()
		h.hold = hold
		if err := hold.ClaimRoot(ctx, opts.CheckpointDir, j.Name()); err != nil {
			return nil, err
		}
	}
	res = &Result{}
	restoreFrom := opts.RestoreFrom
	if opts.RestoreLatest {
		if restoreFrom, err = chkstore.Latest(opts.CheckpointDir); err != nil {
			return nil, err
		}
	}
	for attemptNo := 0; ; attemptNo++ {
		att := &attempt{job: j, opts: &opts, number: attemptNo, handle: h}
		res.Restored = append(res.Restored, restoreFrom)
		err := att.run(ctx, restoreFrom)
		if err == nil && ctx.Err() != nil {
			// The subtasks stopped quietly because the job was cancelled.
			err = context.Cause(ctx)
		}
		if att.coord != nil && att.coord.Final() != "" {
			res.Savepoint = att.coord.Final()
		}
		// Not latest: after a final savepoint, that is the savepoint, and
		// the checkpoints before it have replaced the earlier attempts'.
		if cp := att.lastCheckpoint(); cp != "" {
			res.LastCheckpoint = cp
		}
		res.Checkpoints = att.completedCount()
		res.CheckpointStats = append(res.CheckpointStats, att.checkpointStats()...)
		if err == nil {
			return res, nil
		}
		var perm errPermanent
		if ctx.Err() != nil || errors.As(err, &perm) || attemptNo >= opts.MaxRestarts {
			return res, err
		}
		if h.hold != nil {
			// Whatever failed the attempt, a run that lost its
			// checkpoint root to another must write no more there, and a
			// restart would; one whose renewals failed takes the root
			// back if no other run took it.
			if herr := h.hold.Check(ctx); herr != nil {
				if !chkstore.Lapsed(herr) {
					if errors.Is(err, ErrCheckpointRootHeld) {
						return res, err
					}
					return res, errors.Join(err, herr)
				}
				if rerr := h.hold.Retake(ctx); rerr != nil {
					return res, errors.Join(err, rerr)
				}
			}
		}
		res.Restarts++
		if res.Savepoint != "" {
			// The job's work is done: the failure came after its final
			// savepoint, committing what the sinks had written. A rerun
			// would take the savepoint again; recovering the sinks from it
			// commits what it recorded.
			for {
				res.Restored = append(res.Restored, res.Savepoint)
				attemptNo++
				err := recoverSinks(ctx, j, res.Savepoint)
				if err == nil || ctx.Err() != nil || attemptNo >= opts.MaxRestarts {
					return res, err
				}
				res.Restarts++
			}
		}
		if u := att.undecided(); u != "" {
			// Whether the checkpoint whose publication failed is there
			// decides where the restart starts: from it, or from the one
			// before, whose restore drops what it holds pending.
			visible, err := chkstore.Exists(ctx, u)
			if err != nil {
				return res, fmt.Errorf("engine: checkpoint %s: its publication failed and the store cannot tell whether it took effect (%w); restart from the latest checkpoint under the root once it answers", storage.Shown(u), err)
			}
			if visible {
				res.LastCheckpoint = u
			}
		}
		if res.LastCheckpoint != "" {
			restoreFrom = res.LastCheckpoint
		}
	}
}

// recoverSinks hands every sink of j the transactions that the savepoint in
// dir recorded, for Recover to commit them.
func recoverSinks(ctx context.Context, j *Job, dir string) error {
	r, closeAll, err := openCanonical(ctx, dir)
	if err != nil {
		return err
	}
	defer closeAll()
	for _, n := range j.nodes {
		if n.recover == nil {
			continue
		}
		var pending [][]byte
		if op, ok := r.Metadata().Operator(n.uid); ok {
			for _, s := range op.OperatorStates {
				if s.Name == sinkStateName {
					for _, l := range s.Subtasks {
						pending = append(pending, l...)
					}
				}
			}
		}
		if err := n.recover(ctx, pending); err != nil {
			return err
		}
	}
	return nil
}

// attempt is one execution of the job graph.
type attempt struct {
	job     *Job
	opts    *RunOptions
	number  int
	handle  *Handle
	chans   map[*edge]any
	tasks   []*task
	coord   *coordinator
	restore *restoreSource
	store   *chkstore.Store
	// ops lists the operators that savepoints hold, in job order.
	ops []*node
	// times holds where the restored keyed operators' subtasks start.
	times map[*node]restoredTime
	// groups holds the watermark alignment groups of the sources;
	// frontier, under DeterministicTime, every source subtask.
	groups   map[string]*alignGroup
	frontier *alignGroup
}

// lastCheckpoint returns the directory of the attempt's latest completed
// periodic checkpoint, "" if none completed.
func (a *attempt) undecided() string {
	if a.coord == nil {
		return ""
	}
	return a.coord.Undecided()
}

func (a *attempt) lastCheckpoint() string {
	if a.coord == nil {
		return ""
	}
	return a.coord.LastCheckpoint()
}

func (a *attempt) completedCount() int {
	if a.coord == nil {
		return 0
	}
	n, _ := a.coord.Completed()
	return n
}

func (a *attempt) checkpointStats() []CheckpointStats {
	if a.coord == nil {
		return nil
	}
	_, stats := a.coord.Completed()
	var out []CheckpointStats
	for _, s := range stats {
		out = append(out, CheckpointStats(s))
	}
	return out
}

func (a *attempt) run(ctx context.Context, restoreFrom string) error {
	for _, n := range a.job.nodes {
		if n.uid != "" {
			a.ops = append(a.ops, n)
		}
	}
	firstID := uint64(1)
	if restoreFrom != "" {
		r, err := openRestore(ctx, a, restoreFrom)
		if err != nil {
			// A checkpoint that does not read, or that the job cannot
			// take, stays so; a store that did not answer may answer the
			// next attempt.
			if savepoint.BadInput(err) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrRestore) {
				return permanent(err)
			}
			return err
		}
		defer r.close()
		a.restore = r
		firstID = r.src.Metadata().ID + 1
		if a.times, err = r.restoredTimes(a.job.nodes); err != nil {
			return err
		}
	}
	a.groups = alignGroups(a.job.nodes)
	if a.opts.ProcessingTime.deterministic() {
		a.frontier = flow.NewAlignGroup[*task]()
	}
	a.store = chkstore.NewStore(a.opts.CheckpointDir, a.handle.hold, a.dir(), a.opts.Compression)
	if a.opts.CheckpointDir != "" {
		next, err := a.store.NextID(ctx)
		if err != nil {
			return fmt.Errorf("engine: checkpoint root: %w", err)
		}
		firstID = max(firstID, next)
	}
	a.chans = map[*edge]any{}
	for _, n := range a.job.nodes {
		for _, e := range n.outputs {
			a.chans[e] = e.channels(a.opts.ChannelCapacity)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	var backends []state.Backend
	var sources []*task
	defer func() {
		for _, b := range backends {
			b.Close()
		}
	}()
	for _, n := range a.job.nodes {
		if n.recover != nil {
			if err := n.recover(ctx, a.restore.operatorStateOf(n, sinkStateName)); err != nil {
				return err
			}
		}
		for i := 0; i < n.parallelism; i++ {
			t := &task{ctx: gctx, att: a, n: n, subtask: i, op: a.opIndex(n), clock: newSubtaskClock(a.opts.ProcessingTime, a.startTime(n)),
				watermark: a.restoredWatermark(n), opened: map[state.Descriptor]bool{}, bcast: map[string]*broadcastStore{},
				opLists: map[string]operatorList{}}
			if n.kind == sourceNode {
				t.control = make(chan sourceCmd, 4)
				sources = append(sources, t)
				if g := a.groups[n.watermarks.AlignmentGroup]; g != nil {
					g.Join(t)
				}
				if a.frontier != nil {
					a.frontier.Join(t)
				}
			}
			if n.kind == keyedNode {
				b, err := a.newBackend(n, i)
				if err != nil {
					return err
				}
				backends = append(backends, b)
				t.backend = b
				if a.restore != nil {
					a.restore.restoring++
				}
			}
			if err := a.restore.operatorState(t); err != nil {
				return err
			}
			a.tasks = append(a.tasks, t)
		}
	}
	a.coord = a.newCoordinator(sources, firstID)
	g.Go(func() error { return a.coord.Run(gctx) })
	for _, t := range a.tasks {
		g.Go(func() error { return t.n.run(t) })
	}
	err := g.Wait()
	a.coord.Abort(err)
	return errors.Join(err, a.store.Close())
}

// newCoordinator returns the coordinator of the attempt's checkpoints, whose
// first is firstID, over its subtasks.
func (a *attempt) newCoordinator(sources []*task, firstID uint64) *coordinator {
	var upstream []map[*task]bool
	for _, of := range upstreamSources(a.job.nodes) {
		m := map[*task]bool{}
		for _, t := range sources {
			if of[t.n] {
				m[t] = true
			}
		}
		upstream = append(upstream, m)
	}
	o := a.opts
	cfg := coord.Config[*task]{
		CheckpointDir: o.CheckpointDir, Interval: o.CheckpointInterval, Now: o.checkpointNow, Retain: o.RetainCheckpoints,
		Incremental: o.Backend == Pebble, StopAfter: o.StopAfter, StopAtWatermark: o.StopAtWatermark, Drain: o.Drain, SavepointDir: o.SavepointDir,
		Sources: sources, Tasks: len(a.tasks), Upstream: upstream,
		Store: a.store, Requests: a.handle.requests, Metadata: a.metadata, Completed: a.handle.noteCheckpoint,
		BeforePublish: func(cp *checkpoint) error { return a.fault(faultComplete, nil, cp) },
		AfterPublish:  func(cp *checkpoint) error { return a.fault(faultPublished, nil, cp) },
	}
	return coord.New(cfg, firstID)
}

// upstreamSources maps every keyed operator to the sources it reads from.
func upstreamSources(nodes []*node) map[*node]map[*node]bool {
	var of func(n *node) map[*node]bool
	memo := map[*node]map[*node]bool{}
	of = func(n *node) map[*node]bool {
		if s, ok := memo[n]; ok {
			return s
		}
		s := map[*node]bool{}
		if n.kind == sourceNode {
			s[n] = true
		}
		for _, e := range n.inputs {
			for src := range of(e.from) {
				s[src] = true
			}
		}
		memo[n] = s
		return s
	}
	up := map[*node]map[*node]bool{}
	for _, n := range nodes {
		if n.kind == keyedNode {
			up[n] = of(n)
		}
	}
	return up
}

// alignGroups makes the groups the job's sources name, each with every
// subtask of its sources as a member at MinWatermark.
func alignGroups(nodes []*node) map[string]*alignGroup {
	groups := map[string]*alignGroup{}
	for _, n := range nodes {
		name := n.watermarks.AlignmentGroup
		if n.kind != sourceNode || name == "" {
			continue
		}
		if groups[name] == nil {
			groups[name] = flow.NewAlignGroup[*task]()
		}
	}
	return groups
}

// dir is the attempt's directory in the work directory: its databases,
// the native checkpoints it makes of them, and the checkpoint it restores
// from.
func (a *attempt) dir() string {
	return filepath.Join(a.opts.WorkDir, fmt.Sprintf("attempt-%d", a.number))
}

func (a *attempt) opIndex(n *node) int {
	for i, o := range a.ops {
		if o == n {
			return i
		}
	}
	return -1
}

func (a *attempt) newBackend(n *node, subtask int) (state.Backend, error) {
	kgs := keygroup.ForSubtask(subtask, n.parallelism, n.maxParallelism)
	switch a.opts.Backend {
	case Pebble:
		dir := filepath.Join(a.dir(), fmt.Sprintf("%s-%d", chkdir.Sanitize(n.uid), subtask))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		return pebblebackend.New(pebblebackend.Options{Dir: dir, MaxParallelism: n.maxParallelism, KeyGroups: kgs})
	default:
		return heapbackend.New(heapbackend.Options{MaxParallelism: n.maxParallelism, KeyGroups: kgs})
	}
}

// metadata describes the job's operators as savepoint id; the operator and
// broadcast state contents and the times are filled in as subtasks
// acknowledge.
func (a *attempt) metadata(id uint64) *savepoint.Metadata {
	m := &savepoint.Metadata{ID: id}
	for _, n := range a.ops {
		m.Operators = append(m.Operators, n.model())
	}
	return m
}
