package engine

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/savepoint"
)

func fraudOpts(b BackendKind) RunOptions {
	return RunOptions{Backend: b, ProcessingTime: DeterministicTime}
}

var fraudSrc = txnSource{splits: 4, n: 1500, cards: 240}

// fraudStop is a stop in event time, 40 minutes into the transactions.
var fraudStop = fraudEpoch + 40*time.Minute.Milliseconds()

// Repeated runs of the same job over the same input, at parallelism 3 over
// 4 splits read at uneven and varying speeds, with every cleanup strategy
// on and, in half the runs, periodic checkpoints, give the same alerts and
// the same savepoint bytes.
func TestRepeatedRunsAgree(t *testing.T) {
	const runs = 10
	for _, backend := range []BackendKind{Heap, Pebble} {
		t.Run(string(backend), func(t *testing.T) {
			var first []string
			var firstSP string
			for run := range runs {
				sink := NewCollectSink[alert]()
				sp := filepath.Join(t.TempDir(), "sp")
				opts := fraudOpts(backend)
				opts.StopAfter = fraudSrc.total() * 2 / 3
				opts.SavepointDir = sp
				if run%2 == 1 {
					opts.CheckpointDir, opts.CheckpointInterval = filepath.Join(t.TempDir(), "chk"), 2*time.Millisecond
				}
				j := fraudJob(unevenSource{txnSource: fraudSrc, run: run}, fraudRules, 3, sink, nil)
				res, err := Run(context.Background(), j, opts)
				if err != nil {
					t.Fatal(err)
				}
				got := sortedAlerts(sink.Values())
				if run == 0 {
					first, firstSP = got, sp
					r := sptest.Open(t, sp)
					if len(got) == 0 || len(sptest.Entries(t, r, "fraud", recentDesc.Spec().Name)) == 0 ||
						len(sptest.Entries(t, r, "fraud", merchantDesc.Spec().Name)) == 0 || len(sptest.Timers(t, r, "fraud", EventTimeTimers)) == 0 {
						t.Fatal("no alerts, or a savepoint without TTL entries or timers: the comparison would check little")
					}
					continue
				}
				if d := diffCount(first, got); d != 0 {
					t.Errorf("run %d: %d of %d alert lines differ from run 0", run, d, len(first))
				}
				if run%2 == 0 {
					sptest.SameFiles(t, firstSP, sp)
					continue
				}
				// The savepoint's id follows the checkpoints before it.
				if len(res.CheckpointStats) == 0 {
					t.Errorf("run %d completed no periodic checkpoint", run)
				}
				sameButID(t, firstSP, sp)
			}
		})
	}
}

// unevenSource reads its splits at speeds that differ from split to split
// and from run to run: split s of run r pauses for a millisecond every
// 7+5*((r+s)%4) records.
type unevenSource struct {
	txnSource
	run int
}

func (s unevenSource) Open(ctx context.Context, split int, offset int64) (SplitReader[txn], error) {
	r, err := s.txnSource.Open(ctx, split, offset)
	return &unevenReader{SplitReader: r, every: 7 + 5*((s.run+split)%4)}, err
}

type unevenReader struct {
	SplitReader[txn]
	every, n int
}

func (r *unevenReader) Next(ctx context.Context) (txn, int64, bool, error) {
	if r.n++; r.n%r.every == 0 {
		time.Sleep(time.Millisecond)
	}
	return r.SplitReader.Next(ctx)
}

// A broadcast stream dated hours ahead of the transactions moves neither
// the savepoint's time nor full-snapshot cleanup: the savepoint keeps the
// live entries, and a run stopped there and restored emits exactly the
// alerts of an uninterrupted run.
func TestFutureDatedBroadcastDoesNotMoveTheClock(t *testing.T) {
	for _, backend := range []BackendKind{Heap, Pebble} {
		t.Run(string(backend), func(t *testing.T) {
			dir := t.TempDir()
			whole := NewCollectSink[alert]()
			opts := fraudOpts(backend)
			if _, err := Run(context.Background(), fraudJob(fraudSrc, fraudRules, 2, whole, nil), opts); err != nil {
				t.Fatal(err)
			}
			first, second := NewCollectSink[alert](), NewCollectSink[alert]()
			sp := filepath.Join(dir, "sp")
			opts = fraudOpts(backend)
			opts.StopAtWatermark, opts.SavepointDir = fraudStop, sp
			if _, err := Run(context.Background(), fraudJob(fraudSrc, fraudRules, 2, first, nil), opts); err != nil {
				t.Fatal(err)
			}
			r := sptest.Open(t, sp)
			// The latest transaction read is at most this far in event time.
			var latest int64
			for _, p := range splitPositions(t, r.Metadata(), "transactions") {
				rd := &txnReader{s: fraudSrc, split: int(p.Split)}
				for range p.Offset {
					_, ts, _, _ := rd.Next(context.Background())
					latest = max(latest, ts)
				}
			}
			if at := r.Metadata().CreatedAt; at > latest {
				t.Errorf("the savepoint is dated %d, %v after the latest transaction read", at, msDuration(at-latest))
			}
			if n := len(sptest.Entries(t, r, "fraud", recentDesc.Spec().Name)); n == 0 {
				t.Error("the savepoint holds no recent-transaction entries: full-snapshot cleanup dropped live state")
			}
			opts = fraudOpts(backend)
			opts.RestoreFrom = sp
			if _, err := Run(context.Background(), fraudJob(fraudSrc, fraudRules, 2, second, nil), opts); err != nil {
				t.Fatal(err)
			}
			want, got := sortedAlerts(whole.Values()), sortedAlerts(append(first.Values(), second.Values()...))
			if d := diffCount(want, got); d != 0 || len(want) == 0 {
				t.Errorf("stop and restore: %d alerts, uninterrupted %d; %d lines differ", len(got), len(want), d)
			}
		})
	}
}

// Within a subtask, processing time never runs backwards: not from a record
// to a timer, nor from one input to another.
func TestProcessingTimeNeverRunsBackwards(t *testing.T) {
	for _, backend := range []BackendKind{Heap, Pebble} {
		t.Run(string(backend), func(t *testing.T) {
			var mu sync.Mutex
			last := map[int]int64{}
			var backwards []string
			calls := 0
			observe := func(subtask int, what string, now int64) {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if prev, ok := last[subtask]; ok && now < prev {
					backwards = append(backwards, fmt.Sprintf("subtask %d: %s at %d after %d (%v back)", subtask, what, now, prev, msDuration(prev-now)))
				}
				last[subtask] = max(last[subtask], now)
			}
			if _, err := Run(context.Background(), fraudJob(fraudSrc, fraudRules, 3, NewCollectSink[alert](), observe), fraudOpts(backend)); err != nil {
				t.Fatal(err)
			}
			if calls == 0 {
				t.Fatal("nothing observed")
			}
			if len(backwards) > 0 {
				t.Errorf("processing time ran backwards %d times in %d calls, first: %s", len(backwards), calls, backwards[:min(3, len(backwards))])
			}
		})
	}
}

func msDuration(ms int64) string { return fmt.Sprint(slices.Max([]int64{ms, 0})) + "ms" }

// splitPositions decodes where the savepoint's source uid stood.
func splitPositions(t testing.TB, m *savepoint.Metadata, uid string) []splitPosition {
	t.Helper()
	op, ok := m.Operator(uid)
	if !ok {
		t.Fatalf("no operator %q", uid)
	}
	var out []splitPosition
	for _, s := range op.OperatorStates {
		if s.Name != sourceStateName {
			continue
		}
		for _, sub := range s.Subtasks {
			for _, e := range sub {
				p, err := splitPositionSerializer.Decode(e)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, p)
			}
		}
	}
	return out
}

// sameButID fails unless the savepoints in a and b have the same data
// files and the same metadata but for what the checkpoints before them
// name: their ids and the sinks' pending transactions.
func sameButID(t *testing.T, a, b string) {
	t.Helper()
	if !maps.EqualFunc(sptest.DataFiles(t, a), sptest.DataFiles(t, b), bytes.Equal) {
		t.Errorf("the data files of %s and %s differ", a, b)
	}
	ma, mb := *sptest.Open(t, a).Metadata(), *sptest.Open(t, b).Metadata()
	for _, m := range []*savepoint.Metadata{&ma, &mb} {
		m.ID = 0
		for i := range m.Operators {
			m.Operators[i].OperatorStates = slices.DeleteFunc(m.Operators[i].OperatorStates, func(s savepoint.OperatorState) bool {
				return s.Name == sinkStateName
			})
		}
	}
	if !reflect.DeepEqual(ma, mb) {
		t.Errorf("the metadata of %s and %s differ beyond their ids and transactions", a, b)
	}
}
