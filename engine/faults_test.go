package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// flakySink is a file sink that fails once: in the n-th PreCommit, in the
// n-th Commit of a transaction, in the first Commit after the savepoint in
// commitAfter exists, or in the first Recover that has transactions to
// commit.
type flakySink[T any] struct {
	*FileSink[T]
	preCommitAt, commitAt int64
	commitAfter           string
	recoverOnce           bool

	preCommits, commits atomic.Int64
	recovered           atomic.Bool
	failed              atomic.Int64
}

func (s *flakySink[T]) Recover(ctx context.Context, pending [][]byte) error {
	if s.recoverOnce && len(pending) > 0 && !s.recovered.Swap(true) {
		s.failed.Add(1)
		return fmt.Errorf("recover with %d pending transactions: %w", len(pending), errInjected)
	}
	return s.FileSink.Recover(ctx, pending)
}

func (s *flakySink[T]) NewWriter(ctx context.Context, c WriterContext) (SinkWriter[T], error) {
	w, err := s.FileSink.NewWriter(ctx, c)
	return &flakyWriter[T]{SinkWriter: w, s: s}, err
}

type flakyWriter[T any] struct {
	SinkWriter[T]
	s *flakySink[T]
}

func (w *flakyWriter[T]) PreCommit(ctx context.Context) ([]byte, error) {
	if w.s.preCommits.Add(1) == w.s.preCommitAt {
		w.s.failed.Add(1)
		return nil, fmt.Errorf("pre-commit: %w", errInjected)
	}
	return w.SinkWriter.PreCommit(ctx)
}

func (w *flakyWriter[T]) Commit(ctx context.Context, txn []byte) error {
	if len(txn) > 0 && w.s.commits.Add(1) == w.s.commitAt || w.s.commitAfter != "" && exists(w.s.commitAfter) && w.s.failed.CompareAndSwap(0, 1) {
		w.s.failed.Store(1)
		return fmt.Errorf("commit of %s: %w", txn, errInjected)
	}
	return w.SinkWriter.Commit(ctx, txn)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// openLog wraps a source and records, in order, the offset at which every
// split was opened: each attempt of a run opens every split once.
type openLog[T any] struct {
	Source[T]
	mu      sync.Mutex
	offsets []splitPosition
}

func (o *openLog[T]) Open(ctx context.Context, split int, offset int64) (SplitReader[T], error) {
	o.mu.Lock()
	o.offsets = append(o.offsets, splitPosition{Split: int32(split), Offset: offset})
	o.mu.Unlock()
	return o.Source.Open(ctx, split, offset)
}

// last returns the offsets, split by split, at which the last attempt
// opened: an attempt that fails early may open only some splits, the last
// one opens them all.
func (o *openLog[T]) last() map[int32]int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[int32]int64{}
	for _, p := range o.offsets[max(0, len(o.offsets)-o.Splits()):] {
		out[p.Split] = p.Offset
	}
	return out
}

// injectAt fails once at point p, at the first checkpoint with an id of at
// least id (any, for faultRestore), counting what it injected.
type injectAt struct {
	p        faultPoint
	id       uint64
	fired    atomic.Bool
	failedAt atomic.Uint64
}

func (f *injectAt) inject(p faultPoint, _ *task, cp *checkpoint) error {
	if p != f.p || cp != nil && cp.ID < f.id || cp != nil && cp.Savepoint {
		return nil
	}
	if f.fired.Swap(true) {
		return nil
	}
	if cp != nil {
		f.failedAt.Store(cp.ID)
	}
	return errInjected
}

func formatAlert(a alert, _ int64) ([]byte, error) { return []byte(a.String()), nil }

// failure is one way for a run to break at checkpoint time.
type failure struct {
	name string
	// engine is the fault injected into the engine; sink configures the
	// flaky sink.
	engine      *injectAt
	sink        func(*flakySink[alert])
	restarts    int
	restoreFail bool
}

// A run that breaks at checkpoint time restarts from the last checkpoint
// that completed before the failure, and ends with exactly the sink output
// and the state of a run that did not break: when a keyed subtask fails in
// its snapshot at a barrier; when the coordinator fails to publish a
// checkpoint every subtask has acknowledged; when it is told that the
// publication failed though the checkpoint became visible (the restart
// then takes that checkpoint: one before it would drop the transactions
// that the visible one holds pending); when the sink fails to
// pre-commit at a barrier; when it fails to commit after the checkpoint
// completed; and, after one of those, when the restore itself fails and
// when the sink's Recover fails with the pending transactions of the
// checkpoint. Each restart is shown to have restored: its sources open
// their splits at the positions the checkpoint recorded, not at zero.
func TestExactlyOnceAtCheckpointTime(t *testing.T) {
	failures := []failure{
		{name: "snapshot", engine: &injectAt{p: faultSnapshot, id: 3}, restarts: 1},
		{name: "publish", engine: &injectAt{p: faultComplete, id: 3}, restarts: 1},
		{name: "published", engine: &injectAt{p: faultPublished, id: 3}, restarts: 1},
		{name: "pre-commit", sink: func(s *flakySink[alert]) { s.preCommitAt = 7 }, restarts: 1},
		{name: "commit", sink: func(s *flakySink[alert]) { s.commitAt = 2 }, restarts: 1},
		{name: "commit-after-savepoint", sink: func(s *flakySink[alert]) { s.commitAfter = s.dir + "-sp" }, restarts: 1},
		{name: "restore", engine: &injectAt{p: faultSnapshot, id: 3}, restarts: 2, restoreFail: true},
		{name: "recover", engine: &injectAt{p: faultSnapshot, id: 3}, sink: func(s *flakySink[alert]) { s.recoverOnce = true }, restarts: 2},
	}
	injected := 0
	for _, backend := range []BackendKind{Heap, Pebble} {
		t.Run(string(backend), func(t *testing.T) {
			dir := t.TempDir()
			run := func(t *testing.T, name string, f *failure) (*Result, *openLog[txn], *flakySink[alert]) {
				src := &openLog[txn]{Source: unevenSource{txnSource: fraudSrc, run: 1}}
				sink := &flakySink[alert]{FileSink: NewFileSink(filepath.Join(dir, name), formatAlert)}
				opts := fraudOpts(backend)
				opts.StopAfter, opts.SavepointDir = fraudSrc.total()*3/4, filepath.Join(dir, name+"-sp")
				if f != nil {
					// Every checkpoint stays, for the restarts to be checked
					// against the one they restored.
					opts.CheckpointDir, opts.CheckpointInterval, opts.MaxRestarts = filepath.Join(dir, name+"-chk"), 3*time.Millisecond, 3
					opts.RetainCheckpoints = 1000
					var faults []*injectAt
					if f.engine != nil {
						faults = append(faults, f.engine)
					}
					if f.restoreFail {
						faults = append(faults, &injectAt{p: faultRestore})
					}
					opts.inject = func(p faultPoint, t *task, cp *checkpoint) error {
						for _, x := range faults {
							if err := x.inject(p, t, cp); err != nil {
								return err
							}
						}
						return nil
					}
					if f.sink != nil {
						f.sink(sink)
					}
				}
				res, err := Run(context.Background(), fraudJob(src, fraudRules, 3, sink, nil), opts)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				return res, src, sink
			}
			run(t, "clean", nil)
			want := readParts(t, filepath.Join(dir, "clean"))
			if len(want) == 0 {
				t.Fatal("the clean run wrote nothing")
			}
			for _, f := range failures {
				t.Run(f.name, func(t *testing.T) {
					f := f
					if f.engine != nil {
						f.engine = &injectAt{p: f.engine.p, id: f.engine.id}
					}
					res, src, sink := run(t, f.name, &f)
					if res.Restarts != f.restarts {
						t.Fatalf("%d restarts, want %d", res.Restarts, f.restarts)
					}
					injected += res.Restarts
					if f.engine != nil && !f.engine.fired.Load() || f.sink != nil && sink.failed.Load() == 0 {
						t.Fatal("the failure was not injected")
					}
					checkRestoredFromCheckpoints(t, res, src, f.engine, filepath.Join(dir, f.name+"-sp"))
					if got := readParts(t, filepath.Join(dir, f.name)); !slices.Equal(got, want) {
						t.Fatalf("output: %d lines, %d without failure; %d differ", len(got), len(want), diffCount(got, want))
					}
					sptest.EqualKeyedState(t, sptest.Open(t, filepath.Join(dir, "clean-sp")), sptest.Open(t, filepath.Join(dir, f.name+"-sp")))
				})
			}
		})
	}
	t.Logf("%d failures injected", injected)
}

// checkRestoredFromCheckpoints checks that every restart of res started
// from a periodic checkpoint taken before the failure (before the
// checkpoint that failed, if one did), and that its sources opened their
// splits where that checkpoint had them: past the start of the input. Only
// a failure after the final savepoint sp restarts from sp itself, to
// recover the sinks.
func checkRestoredFromCheckpoints(t *testing.T, res *Result, src *openLog[txn], failed *injectAt, sp string) {
	t.Helper()
	for i := 1; i < len(res.Restored); i++ {
		from := res.Restored[i]
		if from == sp && i == len(res.Restored)-1 {
			continue
		}
		if !strings.HasPrefix(filepath.Base(from), "chk-") {
			t.Fatalf("attempt %d started from %q, not a checkpoint", i, from)
		}
		r, err := snapshotfmt.Open(context.Background(), storage.LocalDir(from))
		if err != nil {
			t.Fatalf("attempt %d: its checkpoint %s: %v", i, from, err)
		}
		id := r.Metadata().ID
		positions := splitPositions(t, r.Metadata(), "transactions")
		r.Close()
		switch {
		case failed != nil && failed.p == faultPublished && i == 1:
			// The checkpoint was visible though its publication failed:
			// the restart takes it, not the one before.
			if id != failed.failedAt.Load() {
				t.Fatalf("attempt %d restored checkpoint %d, not the visible checkpoint %d whose publication failed", i, id, failed.failedAt.Load())
			}
		case failed != nil && failed.p != faultPublished && failed.failedAt.Load() != 0 && id >= failed.failedAt.Load():
			t.Fatalf("attempt %d restored checkpoint %d, not one before the failed checkpoint %d", i, id, failed.failedAt.Load())
		}
		read := int64(0)
		for _, p := range positions {
			read += p.Offset
		}
		if read == 0 {
			t.Fatalf("attempt %d restored checkpoint %d, which is at the start of the input", i, id)
		}
		if i < len(res.Restored)-1 {
			continue
		}
		opened := src.last()
		for _, p := range positions {
			if opened[p.Split] != p.Offset {
				t.Fatalf("the last attempt opened split %d at %d, its checkpoint %d has it at %d", p.Split, opened[p.Split], id, p.Offset)
			}
		}
	}
}

// A job whose restore cannot succeed, because the checkpoint holds state
// the job does not declare, fails at once instead of restarting.
func TestUnrestorableCheckpointIsPermanent(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", ErrCorruptCheckpoint)
	if !unrestorable(err) || unrestorable(errors.New("read: connection reset")) {
		t.Fatal("unrestorable does not tell a bad checkpoint from a failed read")
	}
}

// Stateless operators between the sources and KeyBy (a Filter, then a Map)
// pass checkpoints on under DeterministicTime at parallelism above 1: each
// of their subtasks reads a few of the keyed operator's sources, which may
// be past a checkpoint's epoch when it starts, so that their gates are
// aligned before any barrier comes. A run with periodic checkpoints and a
// failure at a snapshot writes what a run without them writes.
func TestCheckpointsThroughStatelessOperators(t *testing.T) {
	job := func(p int, sink Sink[alert]) *Job {
		j := NewJob("card-fraud", DefaultParallelism(p))
		txns := FromSource(j, unevenSource{txnSource: fraudSrc, run: p}, Watermarks{OutOfOrderness: 5 * time.Second, Every: 32}, UID("transactions"))
		txns = Filter(txns, func(_ context.Context, t txn) (bool, error) { return t.Amount >= 0, nil })
		txns = Map(txns, func(_ context.Context, t txn) (txn, error) { return t, nil })
		rs := FromSource(j, fraudRules, Watermarks{Every: 1}, UID("rules"), Parallelism(1))
		alerts := ProcessBroadcast(KeyBy(txns, func(t txn) cardKey { return t.Card }, cardKeySerializer), Broadcast(rs, rulesDesc),
			func() KeyedBroadcastProcessFunction[cardKey, txn, rule, alert] { return &fraudCheck{} },
			UID("fraud"), WithState(merchantDesc, recentDesc), MaxParallelism(128))
		ToSink(alerts, sink, UID("alerts"))
		return j
	}
	for _, backend := range []BackendKind{Heap, Pebble} {
		for _, p := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s-p%d", backend, p), func(t *testing.T) {
				dir := t.TempDir()
				run := func(name string, checkpoints bool) (*Result, []string) {
					opts := fraudOpts(backend)
					fail := &injectAt{p: faultSnapshot, id: 3}
					if checkpoints {
						opts.CheckpointDir, opts.CheckpointInterval, opts.MaxRestarts = filepath.Join(dir, name+"-chk"), 2*time.Millisecond, 1
						opts.inject = func(p faultPoint, t *task, cp *checkpoint) error { return fail.inject(p, t, cp) }
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					res, err := Run(ctx, job(p, NewFileSink(filepath.Join(dir, name), formatAlert)), opts)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					return res, readParts(t, filepath.Join(dir, name))
				}
				_, want := run("clean", false)
				res, got := run("checkpointed", true)
				if res.Restarts != 1 || res.Checkpoints == 0 {
					t.Fatalf("%d restarts, %d checkpoints in the last attempt; want a restart and checkpoints after it", res.Restarts, res.Checkpoints)
				}
				if len(want) == 0 || !slices.Equal(got, want) {
					t.Fatalf("output: %d lines, %d without checkpoints; %d differ", len(got), len(want), diffCount(got, want))
				}
			})
		}
	}
}
