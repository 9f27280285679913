package gateway

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/internal/sptest"
)

var errInjected = errors.New("injected failure")

// failingEvents wraps the event source: it fails once, when the events read
// by all its readers, over all attempts, reach failAt, and it sleeps now
// and then so that periodic checkpoints complete while the job runs.
type failingEvents struct {
	engine.Source[Event]
	read   *atomic.Int64
	failAt int64
}

func (f failingEvents) Open(ctx context.Context, split int, offset int64) (engine.SplitReader[Event], error) {
	r, err := f.Source.Open(ctx, split, offset)
	return &failingReader{SplitReader: r, f: f}, err
}

type failingReader struct {
	engine.SplitReader[Event]
	f failingEvents
}

func (r *failingReader) Next(ctx context.Context) (Event, int64, bool, error) {
	n := r.f.read.Add(1)
	if n == r.f.failAt {
		return Event{}, 0, false, errInjected
	}
	if n%500 == 0 {
		time.Sleep(time.Millisecond)
	}
	return r.SplitReader.Next(ctx)
}

func readParts(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "part-") {
			t.Errorf("uncommitted file %s left in the sink directory", e.Name())
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

// A run with periodic checkpoints and a failure mid-stream writes through
// its file sink exactly what a run without failure writes, and its final
// savepoint holds the same state.
func TestExactlyOnceAcrossAFailure(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Seed: 13, Events: 30000, Parallelism: 2}
	src, err := NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runWith := func(out string, failAt int64, opts engine.RunOptions) *engine.Result {
		var read atomic.Int64
		j, err := Build(cfg, failingEvents{Source: src, read: &read, failAt: failAt}, src.Prices(),
			Sinks{Totals: engine.NewFileSink(out, FormatTotal)})
		if err != nil {
			t.Fatal(err)
		}
		opts.Backend = engine.Pebble
		opts.ProcessingTime = engine.DeterministicTime
		opts.SavepointDir = out + "-sp"
		res, err := engine.Run(context.Background(), j, opts)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	clean := filepath.Join(dir, "clean")
	runWith(clean, -1, engine.RunOptions{})
	failing := filepath.Join(dir, "failing")
	res := runWith(failing, src.Events()*2/3, engine.RunOptions{
		CheckpointDir: filepath.Join(dir, "chk"), CheckpointInterval: 5 * time.Millisecond, MaxRestarts: 2,
	})
	if res.Restarts != 1 {
		t.Fatalf("restarts = %d, want 1", res.Restarts)
	}
	if res.LastCheckpoint == "" {
		t.Fatal("no checkpoint completed, so the restart did not exercise recovery from one")
	}
	want, got := readParts(t, clean), readParts(t, failing)
	if int64(len(want)) != src.Requests() || !slices.Equal(got, want) {
		t.Fatalf("outputs differ: %d lines without failure (for %d requests), %d with", len(want), src.Requests(), len(got))
	}
	a, b := sptest.Open(t, clean+"-sp"), sptest.Open(t, failing+"-sp")
	if len(sptest.Entries(t, a, TenantCostUID, USDTotalState)) == 0 {
		t.Fatal("the savepoint holds no tenant total: comparing the states would check nothing")
	}
	sptest.EqualKeyedState(t, a, b)
}
