package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/serializers"
)

// unboundedSource is testSource without an end: after its n events a split
// has nothing available, as a topic nobody writes to any more. Its splits
// read at uneven speeds, and read counts every event read.
type unboundedSource struct {
	testSource
	read *atomic.Int64
}

func (s unboundedSource) Open(ctx context.Context, split int, offset int64) (SplitReader[testEvent], error) {
	return &unboundedReader{testReader: testReader{s: s.testSource, split: split, i: int(offset)}, pace: 8 << (split % 3), read: s.read}, nil
}

type unboundedReader struct {
	testReader
	// pace is how many events the split reads per millisecond's pause.
	pace int
	read *atomic.Int64
}

func (r *unboundedReader) Next(ctx context.Context) (testEvent, int64, bool, error) {
	if r.i >= r.s.n {
		return testEvent{}, 0, false, ErrNothingAvailable
	}
	if r.i%r.pace == 0 {
		time.Sleep(time.Millisecond)
	}
	r.read.Add(1)
	return r.testReader.Next(context.Background())
}

// txnSink keeps every committed transaction apart, by subtask and
// sequence, so that a test can tell which of them a savepoint covers.
type txnSink[T any] struct {
	mu        sync.Mutex
	open      map[string][]T
	committed map[string][]T
}

func newTxnSink[T any]() *txnSink[T] {
	return &txnSink[T]{open: map[string][]T{}, committed: map[string][]T{}}
}

func (s *txnSink[T]) Recover(_ context.Context, pending [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range pending {
		s.commitLocked(string(p))
	}
	clear(s.open)
	return nil
}

func (s *txnSink[T]) commitLocked(id string) {
	if v, ok := s.open[id]; ok {
		s.committed[id] = v
		delete(s.open, id)
	}
}

func (s *txnSink[T]) NewWriter(_ context.Context, c WriterContext) (SinkWriter[T], error) {
	return &txnWriter[T]{s: s, subtask: c.Subtask, epoch: c.Epoch}, nil
}

// all returns every committed value.
func (s *txnSink[T]) all() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []T
	for _, v := range s.committed {
		out = append(out, v...)
	}
	return out
}

// coveredBy returns the committed values of epoch 0 that the savepoint sp
// covers: on each subtask, those of the transactions up to the one
// pre-committed at its barrier, which it lists among its pending ones.
func (s *txnSink[T]) coveredBy(t *testing.T, sp string) []T {
	t.Helper()
	r := sptest.Open(t, sp)
	op, ok := r.Metadata().Operator("sink")
	if !ok {
		t.Fatalf("%s has no sink", sp)
	}
	last := map[int]int{}
	for _, st := range op.OperatorStates {
		if st.Name != sinkStateName {
			continue
		}
		for _, sub := range st.Subtasks {
			for _, e := range sub {
				p, err := pendingTxnSerializer.Decode(e)
				if err != nil {
					t.Fatal(err)
				}
				var subtask, epoch, seq int
				if _, err := fmt.Sscanf(string(p.Txn), "%d/%d/%d", &subtask, &epoch, &seq); err != nil {
					t.Fatalf("transaction %q: %v", p.Txn, err)
				}
				if uint64(p.Checkpoint) == r.Metadata().ID {
					last[subtask] = seq
				}
			}
		}
	}
	if len(last) != op.Parallelism {
		t.Fatalf("%s: transactions pre-committed at its barrier on %d of %d subtasks", sp, len(last), op.Parallelism)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []T
	for id, vs := range s.committed {
		var subtask, epoch, seq int
		fmt.Sscanf(id, "%d/%d/%d", &subtask, &epoch, &seq)
		if epoch == 0 && seq <= last[subtask] {
			out = append(out, vs...)
		}
	}
	return out
}

type txnWriter[T any] struct {
	s            *txnSink[T]
	subtask, seq int
	epoch        uint64
	buf          []T
}

func (w *txnWriter[T]) Write(_ context.Context, v T, _ int64) error {
	w.buf = append(w.buf, v)
	return nil
}

func (w *txnWriter[T]) PreCommit(context.Context) ([]byte, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	id := fmt.Sprintf("%d/%d/%d", w.subtask, w.epoch, w.seq)
	w.seq++
	w.s.open[id] = w.buf
	w.buf = nil
	return []byte(id), nil
}

func (w *txnWriter[T]) Commit(_ context.Context, txn []byte) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.s.commitLocked(string(txn))
	return nil
}

func (w *txnWriter[T]) Close() error { return nil }

// splitOffsets returns the number of records the savepoint's source
// positions say were read.
func splitOffsets(t *testing.T, sp string) int64 {
	t.Helper()
	r := sptest.Open(t, sp)
	op, _ := r.Metadata().Operator("events")
	var n int64
	for _, st := range op.OperatorStates {
		if st.Name != sourceStateName {
			continue
		}
		seen := map[int32]bool{}
		for _, sub := range st.Subtasks {
			for _, e := range sub {
				p, err := splitPositionSerializer.Decode(e)
				if err != nil {
					t.Fatal(err)
				}
				if !seen[p.Split] {
					seen[p.Split] = true
					n += p.Offset
				}
			}
		}
	}
	return n
}

// waitRead waits until the source has read at least n events.
func waitRead(t *testing.T, read *atomic.Int64, n int64, h *Handle) {
	t.Helper()
	for read.Load() < n {
		select {
		case <-h.Done():
			_, err := h.Wait()
			t.Fatalf("the job ended before reading %d events: %v", n, err)
		case <-time.After(time.Millisecond):
		}
	}
}

// An unbounded job at parallelism 2, with three splits per subtask read at
// uneven speeds and periodic checkpoints, takes two savepoints while it
// runs and stops with a third. Each, restored at parallelism 3 on Pebble
// and run to the end of the input, writes exactly what the first run had
// not covered by that savepoint, and ends with the state of a run that was
// never interrupted.
func TestSavepointsOfARunningJob(t *testing.T) {
	for _, pt := range []struct {
		name string
		mode ProcessingTimeMode
	}{{"wall", WallClock}, {"deterministic", DeterministicTime}} {
		t.Run(pt.name, func(t *testing.T) { savepointsOfARunningJob(t, pt.mode) })
	}
}

func savepointsOfARunningJob(t *testing.T, pt ProcessingTimeMode) {
	src := testSource{splits: 6, n: 3000, keys: 41}
	total := int64(src.splits * src.n)
	dir := t.TempDir()

	clean, cleanSP := NewCollectSink[windowResult](), filepath.Join(dir, "clean")
	if _, err := Run(context.Background(), countJob(src, 2, clean), RunOptions{StopAfter: total, SavepointDir: cleanSP, ProcessingTime: pt}); err != nil {
		t.Fatal(err)
	}
	want := sortResults(clean.Values())

	var read atomic.Int64
	unbounded := unboundedSource{testSource: src, read: &read}
	running := newTxnSink[windowResult]()
	h, err := Start(context.Background(), countJobOf(unbounded, 2, running), RunOptions{Backend: Heap, ProcessingTime: pt,
		CheckpointDir: filepath.Join(dir, "chk"), CheckpointInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var sps []string
	for i, at := range []int64{total / 4, total / 2} {
		waitRead(t, &read, at, h)
		sp, err := h.TriggerSavepoint(context.Background(), filepath.Join(dir, fmt.Sprintf("sp%d", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		sps = append(sps, sp)
	}
	waitRead(t, &read, 3*total/4, h)
	stop, err := h.StopWithSavepoint(context.Background(), filepath.Join(dir, "stop"), false)
	if err != nil {
		t.Fatal(err)
	}
	sps = append(sps, stop)
	res, err := h.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Savepoint != stop || h.LatestCheckpoint() == "" {
		t.Fatalf("result savepoint %q, want %q; latest checkpoint %q", res.Savepoint, stop, h.LatestCheckpoint())
	}
	// Nothing the stopped job wrote after its savepoint was committed.
	if got, covered := sortResults(running.all()), sortResults(running.coveredBy(t, stop)); !slices.Equal(got, covered) {
		t.Fatalf("the stopped job committed %d results, its savepoint covers %d", len(got), len(covered))
	}

	prev := int64(0)
	for i, sp := range sps {
		// The savepoints cut the input where the job stood, while it ran.
		at := splitOffsets(t, sp)
		if at <= prev || at >= total {
			t.Fatalf("%s: source positions at %d records; want between %d and %d", sp, at, prev, total)
		}
		prev = at
		a := sptest.Open(t, sp)
		if len(sptest.Timers(t, a, "count", EventTimeTimers)) == 0 {
			t.Fatalf("%s holds no event-time timer: a savepoint without drain keeps the open windows", sp)
		}

		restored, end := NewCollectSink[windowResult](), filepath.Join(dir, fmt.Sprintf("end%d", i+1))
		if _, err := Run(context.Background(), countJobOf(unboundedSource{testSource: src, read: new(atomic.Int64)}, 3, restored), RunOptions{
			Backend: Pebble, RestoreFrom: sp, StopAfter: total, SavepointDir: end, ProcessingTime: pt,
		}); err != nil {
			t.Fatal(err)
		}
		got := sortResults(append(running.coveredBy(t, sp), restored.Values()...))
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %d results before the savepoint and after the restore, want %d", sp, len(got), len(want))
		}
		sptest.EqualKeyedState(t, sptest.Open(t, cleanSP), sptest.Open(t, end))
	}
}

// countJobOf is countJob over any source of test events.
func countJobOf(src Source[testEvent], p int, sink Sink[windowResult]) *Job {
	j := NewJob("window-count", DefaultParallelism(p))
	events := FromSource(j, src, Watermarks{Every: 16}, UID("events"))
	keyed := KeyBy(events, func(e testEvent) string { return e.Key }, serializers.String())
	counts := Process(keyed, func() KeyedProcessFunction[string, testEvent, windowResult] { return &windowCount{} },
		UID("count"), WithState(countDesc), MaxParallelism(128))
	ToSink(counts, sink, UID("sink"))
	return j
}

// A stop with drain fires every event-time timer before its savepoint,
// which holds no timers and no open window; Cancel ends a job with
// ErrCancelled; a savepoint asked of an ended job fails with ErrJobEnded.
func TestStopWithDrainAndCancel(t *testing.T) {
	src := testSource{splits: 4, n: 2000, keys: 17}
	dir := t.TempDir()
	var read atomic.Int64
	sink := newTxnSink[windowResult]()
	h, err := Start(context.Background(), countJobOf(unboundedSource{testSource: src, read: &read}, 2, sink), RunOptions{Backend: Pebble})
	if err != nil {
		t.Fatal(err)
	}
	waitRead(t, &read, 1000, h)
	sp, err := h.StopWithSavepoint(context.Background(), filepath.Join(dir, "drained"), true)
	if err != nil {
		t.Fatal(err)
	}
	a := sptest.Open(t, sp)
	if n := len(sptest.Timers(t, a, "count", EventTimeTimers)); n != 0 {
		t.Fatalf("drained savepoint holds %d event-time timers", n)
	}
	if n := len(sptest.Entries(t, a, "count", countDesc.Spec().Name)); n != 0 {
		t.Fatalf("drained savepoint holds %d open windows", n)
	}
	var counted int64
	for _, r := range sink.all() {
		counted += r.Count
	}
	if at := splitOffsets(t, sp); counted != at || at == 0 {
		t.Fatalf("the drained job emitted counts of %d events, its savepoint says it read %d", counted, at)
	}
	if _, err := h.TriggerSavepoint(context.Background(), filepath.Join(dir, "late")); !errors.Is(err, ErrJobEnded) {
		t.Fatalf("savepoint of an ended job: %v, want ErrJobEnded", err)
	}

	h, err = Start(context.Background(), countJobOf(unboundedSource{testSource: src, read: new(atomic.Int64)}, 2, NewCollectSink[windowResult]()), RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.Cancel()
	if _, err := h.Wait(); !errors.Is(err, ErrCancelled) {
		t.Fatalf("cancelled job: %v, want ErrCancelled", err)
	}
}

// Under DeterministicTime a savepoint's barrier waits for the watermark to
// reach the savepoint's epoch, which a source that has nothing to read
// never sends. A job that has read all there is takes its savepoints all
// the same: one while it runs and the one it stops with, neither waiting
// for input; a restore from each writes exactly what the job had not
// committed by then.
func TestSavepointsOfAQuietJob(t *testing.T) {
	src := testSource{splits: 4, n: 500, keys: 13}
	total := int64(src.splits * src.n)
	dir := t.TempDir()
	clean, cleanSP := NewCollectSink[windowResult](), filepath.Join(dir, "clean")
	if _, err := Run(context.Background(), countJob(src, 2, clean), RunOptions{StopAfter: total, SavepointDir: cleanSP, ProcessingTime: DeterministicTime}); err != nil {
		t.Fatal(err)
	}
	want := sortResults(clean.Values())
	var read atomic.Int64
	running := newTxnSink[windowResult]()
	h, err := Start(context.Background(), countJobOf(unboundedSource{testSource: src, read: &read}, 2, running), RunOptions{ProcessingTime: DeterministicTime})
	if err != nil {
		t.Fatal(err)
	}
	waitRead(t, &read, total, h)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mid, err := h.TriggerSavepoint(ctx, filepath.Join(dir, "mid"))
	if err != nil {
		t.Fatalf("a savepoint of a job with nothing to read: %v", err)
	}
	stop, err := h.StopWithSavepoint(ctx, filepath.Join(dir, "stop"), false)
	if err != nil {
		t.Fatalf("stopping a job with nothing to read: %v", err)
	}
	if _, err := h.Wait(); err != nil {
		t.Fatal(err)
	}
	for i, sp := range []string{mid, stop} {
		if at := splitOffsets(t, sp); at <= 0 || at > total {
			t.Fatalf("%s: source positions at %d events, want some of the %d read", sp, at, total)
		}
		restored := NewCollectSink[windowResult]()
		if _, err := Run(context.Background(), countJobOf(unboundedSource{testSource: src, read: new(atomic.Int64)}, 3, restored), RunOptions{
			RestoreFrom: sp, StopAfter: total, SavepointDir: filepath.Join(dir, fmt.Sprintf("end%d", i)), ProcessingTime: DeterministicTime,
		}); err != nil {
			t.Fatal(err)
		}
		if got := sortResults(append(running.coveredBy(t, sp), restored.Values()...)); !slices.Equal(got, want) {
			t.Fatalf("%s: %d results before the savepoint and after the restore, want %d", sp, len(got), len(want))
		}
	}
}
