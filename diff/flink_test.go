package diff_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stateproc/stateproc/diff"
	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/flinkrewrite"
	"github.com/stateproc/stateproc/internal/flinkgen"
	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/storage"
)

// flinkSavepoint writes a small Flink savepoint of the sessions shape.
func flinkSavepoint(t *testing.T, c flinkgen.Config) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "flink")
	if _, err := flinkgen.WriteDir(context.Background(), dir, false, c); err != nil {
		t.Fatal(err)
	}
	return dir
}

// flinkRewrite runs do on the Flink savepoint at in and returns where its
// output went.
func flinkRewrite(t *testing.T, in string, do func(*flinkfmt.Reader, storage.Target) error) string {
	t.Helper()
	r, err := flinkfmt.Open(context.Background(), storage.LocalDir(in), flinkfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	st, err := storage.Stage(out, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := do(r, st); err != nil {
		t.Fatal(err)
	}
	if err := st.Publish(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

// A Flink savepoint and its copy at another max parallelism compare
// unchanged whichever side is re-bucketed: B moves to A's key groups by
// Flink's hash, not stateproc's, so every key meets itself. Pruning B then
// shows exactly the entries the prune dropped as only in A.
func TestFlinkAtAnotherMaxParallelism(t *testing.T) {
	ctx := context.Background()
	cfg := flinkgen.Config{Seed: 5, Users: 600, Categories: 40, OpenPercent: 30,
		Now: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixMilli(), Span: 14 * 24 * time.Hour,
		Parallelism: 2, MaxParallelism: 128}
	sp := flinkSavepoint(t, cfg)
	at720 := flinkRewrite(t, sp, func(r *flinkfmt.Reader, st storage.Target) error {
		_, err := flinkrewrite.Rescale(ctx, r, st, flinkrewrite.RescaleOptions{MaxParallelism: 720, Parallelism: 3})
		return err
	})
	for _, dirs := range [][2]string{{sp, at720}, {at720, sp}} {
		temp := t.TempDir()
		rep := compare(t, dirs[0], dirs[1], diff.Options{TempDir: temp})
		assertUnchanged(t, rep)
		rebucketed := 0
		for _, op := range rep.Operators {
			if op.Rebucketed {
				rebucketed++
			}
		}
		if rebucketed != 1 {
			t.Errorf("%d operators re-bucketed, want the keyed one", rebucketed)
		}
		if s := flinkState(t, rep, flinkgen.CountsState); s.Entries.Unchanged == 0 {
			t.Errorf("no %s entry compared", flinkgen.CountsState)
		}
	}

	// The generated savepoint records no uid (metadata before version 5):
	// its operator goes by its hex ID.
	id := flinkState(t, compare(t, sp, sp, diff.Options{}), flinkgen.CountsState).Operator
	var dropped uint64
	pruned := flinkRewrite(t, at720, func(r *flinkfmt.Reader, st storage.Target) error {
		rep, err := flinkrewrite.PruneTTL(ctx, r, st, flinkrewrite.PruneOptions{Now: cfg.Now,
			TTL: map[string]time.Duration{id + "/" + flinkgen.CountsState: 5 * 24 * time.Hour}})
		for _, s := range rep.States {
			dropped += s.Dropped
		}
		return err
	})
	if dropped == 0 {
		t.Fatal("the prune dropped nothing: the test needs entries older than the TTL")
	}
	rep := compare(t, sp, pruned, diff.Options{})
	s := flinkState(t, rep, flinkgen.CountsState)
	if !rep.Differ || s.Entries.OnlyA != dropped || s.Entries.OnlyB != 0 || s.Entries.Changed != 0 {
		t.Errorf("pruned %d entries; diff says %+v", dropped, s.Entries)
	}
	if s.Entries.OnlyA+s.Entries.Unchanged != s.A.Entries {
		t.Errorf("entries %+v do not add up to A's %d", s.Entries, s.A.Entries)
	}
}

// flinkState is the keyed state of that name in a report of one keyed
// operator.
func flinkState(t *testing.T, rep *diff.Report, name string) *diff.StateDiff {
	t.Helper()
	for i := range rep.States {
		if s := &rep.States[i]; s.Name == name {
			return s
		}
	}
	t.Fatalf("no state %s in the diff", name)
	return nil
}

// Every savepoint of Flink's own tests that stateproc reads compares
// unchanged against itself, and a heap snapshot against its copy at
// another max parallelism. Flink's heap backend writes keys in hash table
// order and timers in heap order, which the merge sorts first.
func TestFlinkFixturesAgainstThemselves(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "shared", "flink-savepoints")
	b, err := os.ReadFile(filepath.Join(root, "inventory.tsv"))
	if err != nil {
		t.Skipf("Flink savepoints not found at %s (../shared/flink-savepoints from the module root): %v", root, err)
	}
	ctx := context.Background()
	compared, heap := 0, 0
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if i == 0 || len(f) < 15 {
			continue
		}
		dir := filepath.Join(root, strings.TrimSuffix(f[0], "/_metadata"))
		src, err := layouts.Open(ctx, dir)
		if err != nil {
			continue // a layout not read, such as the changelog's
		}
		src.Close()
		rep := compare(t, dir, dir, diff.Options{TempDir: t.TempDir()})
		if rep.Differ {
			t.Errorf("%s differs from itself", f[0])
		}
		var entries uint64
		for _, s := range rep.States {
			if s.A == nil || s.B == nil || s.Entries != (diff.Counts{Unchanged: s.A.Entries}) {
				t.Errorf("%s: %s/%s: %+v", f[0], s.Operator, s.Name, s.Entries)
				continue
			}
			entries += s.A.Entries
		}
		compared++
		if !strings.Contains(f[14], "heap") || entries == 0 {
			continue
		}
		heap++
		if heap > 3 {
			continue
		}
		// A heap snapshot against its rescaled copy (canonical, in
		// RocksDB's order): the merge meets both orders at once.
		r, err := flinkfmt.Open(ctx, storage.LocalDir(dir), flinkfmt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		maxP := r.Metadata().Operators[0].MaxParallelism
		rescaled := flinkRewrite(t, dir, func(r *flinkfmt.Reader, st storage.Target) error {
			_, err := flinkrewrite.Rescale(ctx, r, st, flinkrewrite.RescaleOptions{MaxParallelism: maxP + 3})
			return err
		})
		rep = compare(t, dir, rescaled, diff.Options{TempDir: t.TempDir()})
		if rep.Differ {
			t.Errorf("%s differs from its copy at max parallelism %d", f[0], maxP+3)
		}
	}
	if compared < 100 || heap == 0 {
		t.Fatalf("%d fixtures compared, %d of them heap snapshots with keyed entries", compared, heap)
	}
}
