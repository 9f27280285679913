package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// failingCount fails once, when the shared counter reaches failAt.
type failingCount struct {
	windowCount
	seen   *atomic.Int64
	failAt int64
}

var errInjected = errors.New("injected failure")

func (f *failingCount) ProcessElement(ctx *Context[string, windowResult], e testEvent) error {
	if f.seen.Add(1) == f.failAt {
		return errInjected
	}
	return f.windowCount.ProcessElement(ctx, e)
}

func failingJob(src testSource, p int, sink Sink[windowResult], seen *atomic.Int64, failAt int64) *Job {
	j := NewJob("window-count", DefaultParallelism(p))
	events := FromSource(j, slowSource{src}, Watermarks{Every: 16}, UID("events"))
	keyed := KeyBy(events, func(e testEvent) string { return e.Key }, serializers.String())
	counts := Process(keyed, func() KeyedProcessFunction[string, testEvent, windowResult] {
		return &failingCount{seen: seen, failAt: failAt}
	}, UID("count"), WithState(countDesc), MaxParallelism(128))
	ToSink(counts, sink, UID("sink"))
	return j
}

// slowSource sleeps now and then so that periodic checkpoints complete
// while the job runs.
type slowSource struct{ testSource }

func (s slowSource) Open(ctx context.Context, split int, offset int64) (SplitReader[testEvent], error) {
	r, err := s.testSource.Open(ctx, split, offset)
	return &slowReader{r}, err
}

type slowReader struct{ SplitReader[testEvent] }

func (r *slowReader) Next(ctx context.Context) (testEvent, int64, bool, error) {
	e, ts, ok, err := r.SplitReader.Next(ctx)
	if ok && e.TS%500 == 0 {
		time.Sleep(time.Millisecond)
	}
	return e, ts, ok, err
}

func readParts(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), partPrefix) {
			if !e.IsDir() {
				t.Errorf("uncommitted file %s left in the sink directory", e.Name())
			}
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		f.Close()
	}
	slices.Sort(lines)
	return lines
}

func formatResult(r windowResult, _ int64) ([]byte, error) {
	return fmt.Appendf(nil, "%s,%d,%d", r.Key, r.End, r.Count), nil
}

// A run with periodic checkpoints and a failure writes what a run without
// failure writes and ends with the same state. Both stop at the end of the
// input without draining, so that their savepoints hold the open windows
// and their timers.
func TestExactlyOnceAcrossFailure(t *testing.T) {
	src := testSource{splits: 4, n: 20000, keys: 53}
	stop := int64(src.splits * src.n)
	for _, backend := range []BackendKind{Heap, Pebble} {
		t.Run(string(backend), func(t *testing.T) {
			dir := t.TempDir()
			var seen atomic.Int64
			cleanOut, cleanSP := filepath.Join(dir, "clean"), filepath.Join(dir, "clean-sp")
			if _, err := Run(context.Background(), failingJob(src, 2, NewFileSink(cleanOut, formatResult), &seen, -1), RunOptions{
				Backend: backend, StopAfter: stop, SavepointDir: cleanSP,
			}); err != nil {
				t.Fatal(err)
			}
			seen.Store(0)
			failOut, failSP := filepath.Join(dir, "failing"), filepath.Join(dir, "failing-sp")
			res, err := Run(context.Background(), failingJob(src, 2, NewFileSink(failOut, formatResult), &seen, 60000), RunOptions{
				Backend: backend, CheckpointDir: filepath.Join(dir, "chk"), CheckpointInterval: 5 * time.Millisecond, MaxRestarts: 2,
				StopAfter: stop, SavepointDir: failSP,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Restarts != 1 {
				t.Fatalf("restarts = %d, want 1", res.Restarts)
			}
			if res.LastCheckpoint == "" {
				t.Fatal("no checkpoint completed, so the restart did not exercise recovery from one")
			}
			if res.Savepoint != failSP {
				t.Fatalf("savepoint %q, want %q", res.Savepoint, failSP)
			}
			// Retention deletes what the restarted run's checkpoints replace.
			if _, err := os.Stat(filepath.Join(res.LastCheckpoint, snapshotfmt.MetadataName)); err != nil {
				t.Fatalf("the last checkpoint: %v", err)
			}
			if _, err := os.Stat(filepath.Join(res.LastCheckpoint, chkdir.ManifestName)); (err == nil) != (backend == Pebble) {
				t.Fatalf("checkpoint %s: incremental manifest: %v; want one exactly on Pebble", res.LastCheckpoint, err)
			}
			clean, failing := readParts(t, cleanOut), readParts(t, failOut)
			if len(clean) == 0 || !slices.Equal(clean, failing) {
				t.Fatalf("outputs differ: %d lines without failure, %d with", len(clean), len(failing))
			}
			a, b := sptest.Open(t, cleanSP), sptest.Open(t, failSP)
			if len(sptest.Entries(t, a, "count", countDesc.Spec().Name)) == 0 || len(sptest.Timers(t, a, "count", EventTimeTimers)) == 0 {
				t.Fatal("the savepoint holds no open window: comparing the states would check nothing")
			}
			sptest.EqualKeyedState(t, a, b)
		})
	}
}

func TestFailureWithoutRestartsIsReported(t *testing.T) {
	var seen atomic.Int64
	_, err := Run(context.Background(), failingJob(testSource{splits: 2, n: 1000, keys: 5}, 1, NewCollectSink[windowResult](), &seen, 10), RunOptions{})
	if !errors.Is(err, errInjected) {
		t.Fatalf("err = %v, want the injected failure", err)
	}
}

// A bounded job with a checkpoint root ends with a final checkpoint, and
// its sinks commit what they wrote once that completes: a restart from
// the root's latest checkpoint (a process killed after the end, or run
// again) starts where the job ended and writes nothing twice. Without it,
// the restart went back to the last periodic checkpoint and wrote what
// followed it a second time.
func TestRestartAfterTheEndWritesNothingTwice(t *testing.T) {
	src := testSource{splits: 2, n: 20000, keys: 31}
	stop := int64(src.splits * src.n)
	for _, backend := range []BackendKind{Heap, Pebble} {
		dir := t.TempDir()
		want := runUnbroken(t, src, filepath.Join(dir, "clean"))
		root, out := filepath.Join(dir, "chk"), filepath.Join(dir, "out")
		var seen atomic.Int64
		opts := RunOptions{Backend: backend, CheckpointDir: root, CheckpointInterval: 3 * time.Millisecond, StopAfter: stop}
		res, err := Run(context.Background(), failingJob(src, 2, NewFileSink(out, formatResult), &seen, -1), opts)
		if err != nil {
			t.Fatalf("%s: %v", backend, err)
		}
		if latest, err := LatestCheckpoint(root); err != nil || latest != res.LastCheckpoint || res.Savepoint != "" {
			t.Errorf("%s: latest checkpoint %q (%v), the run's last %q, savepoint %q; want the run's last, and no savepoint", backend, latest, err, res.LastCheckpoint, res.Savepoint)
		}
		opts.RestoreLatest = true
		seen.Store(0)
		if _, err := Run(context.Background(), failingJob(src, 2, NewFileSink(out, formatResult), &seen, -1), opts); err != nil {
			t.Fatalf("%s: the run again from the latest checkpoint: %v", backend, err)
		}
		if n := seen.Load(); n != 0 {
			t.Errorf("%s: the run again read %d records, want none", backend, n)
		}
		if got := readParts(t, out); !slices.Equal(got, want) {
			t.Errorf("%s: %d lines after the run and its restart, %d from an unbroken run", backend, len(got), len(want))
		}
	}
}
