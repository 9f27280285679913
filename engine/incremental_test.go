package engine

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// upsert is a record of the incremental checkpoint tests: it sets its key's
// value to the value of version, deletes the key, or, as a heartbeat,
// changes nothing.
type upsert struct {
	Key       string
	Version   int
	Delete    bool
	Heartbeat bool
}

var upsertState = state.NewValue("value", serializers.String())

type upserter struct {
	NoTimers[string, struct{}]
	v state.ValueState[string]
}

func (u *upserter) Open(ctx *OpenContext) (err error) {
	u.v, err = GetValue(ctx, upsertState)
	return err
}

func (u *upserter) ProcessElement(_ *Context[string, struct{}], r upsert) error {
	switch {
	case r.Heartbeat:
		return nil
	case r.Delete:
		return u.v.Clear()
	}
	return u.v.Update(upsertValue(r.Key, r.Version))
}

// upsertValue is key's value at version: 67 bytes or so that compress
// poorly, so that the state's size on disk is about its size in records.
func upsertValue(key string, version int) string {
	return fmt.Sprintf("v%d-%x", version, sha256.Sum256(fmt.Appendf(nil, "%s/%d", key, version)))
}

func upsertKey(i int) string { return fmt.Sprintf("key-%07d", i) }

func upsertJob(src Source[upsert], parallelism int) *Job {
	j := NewJob("upserts")
	records := FromSource(j, src, Watermarks{}, UID("records"))
	keyed := KeyBy(records, func(u upsert) string { return u.Key }, serializers.String())
	Process(keyed, func() KeyedProcessFunction[string, upsert, struct{}] { return &upserter{} },
		UID("upsert"), WithState(upsertState), Parallelism(parallelism), MaxParallelism(128))
	return j
}

// phasedSource has one split that emits its phases one after another.
// After each phase it has the run take a checkpoint and emits heartbeats
// until the checkpoint is complete, so that checkpoint i holds exactly the
// phases up to i. A reader resumed from a checkpoint has nothing left to
// emit: the tests restore only after the last phase.
type phasedSource struct {
	phases  [][]upsert
	trigger chan struct{}
	root    string
}

func newPhasedSource(root string, phases ...[]upsert) *phasedSource {
	return &phasedSource{phases: phases, trigger: make(chan struct{}, 1), root: root}
}

func (s *phasedSource) Splits() int { return 1 }

func (s *phasedSource) Open(ctx context.Context, _ int, offset int64) (SplitReader[upsert], error) {
	r := &phasedReader{s: s}
	if offset > 0 {
		r.phase = len(s.phases)
	}
	return r, nil
}

type phasedReader struct {
	s       *phasedSource
	phase   int
	i       int
	waiting bool
}

func (r *phasedReader) Next(ctx context.Context) (upsert, int64, bool, error) {
	for {
		if r.waiting {
			// The checkpoint directory appears when the checkpoint is
			// published, complete.
			if _, err := os.Stat(chkdir.Path(r.s.root, uint64(r.phase+1))); err != nil {
				time.Sleep(100 * time.Microsecond)
				return upsert{Heartbeat: true}, 0, true, nil
			}
			r.waiting, r.phase, r.i = false, r.phase+1, 0
		}
		if r.phase >= len(r.s.phases) {
			return upsert{}, 0, false, nil
		}
		if ph := r.s.phases[r.phase]; r.i < len(ph) {
			r.i++
			return ph[r.i-1], 0, true, nil
		}
		r.s.trigger <- struct{}{}
		r.waiting = true
	}
}

// runPhases runs the upsert job over phases on the Pebble backend, with a
// checkpoint after each phase under root and the final one at the end,
// and returns the result.
func runPhases(t *testing.T, root string, parallelism, retain int, phases ...[]upsert) *Result {
	t.Helper()
	src := newPhasedSource(root, phases...)
	res, err := Run(context.Background(), upsertJob(src, parallelism), RunOptions{
		Backend: Pebble, CheckpointDir: root, RetainCheckpoints: retain, checkpointNow: src.trigger,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.CheckpointStats) != len(phases)+1 {
		t.Fatalf("%d checkpoints completed, want one per phase and the final one, %d", len(res.CheckpointStats), len(phases)+1)
	}
	return res
}

// upserts returns the records that give keys from..to-1 version v; with
// every > 1, only every every-th of them.
func upserts(from, to, every, v int) []upsert {
	var out []upsert
	for i := from; i < to; i += every {
		out = append(out, upsert{Key: upsertKey(i), Version: v})
	}
	return out
}

// applied returns the state that phases leave.
func applied(phases ...[]upsert) map[string]string {
	want := map[string]string{}
	for _, ph := range phases {
		for _, r := range ph {
			if r.Delete {
				delete(want, r.Key)
			} else {
				want[r.Key] = upsertValue(r.Key, r.Version)
			}
		}
	}
	return want
}

// TestIncrementalCheckpointWritesLittle is the acceptance test of
// incremental checkpoints: after a change to 1% of a large Pebble state,
// the next checkpoint writes a small fraction of what the first one wrote.
func TestIncrementalCheckpointWritesLittle(t *testing.T) {
	const keys = 200_000
	root := filepath.Join(t.TempDir(), "chk")
	res := runPhases(t, root, 2, 2, upserts(0, keys, 1, 0), upserts(0, keys, 100, 1))
	first, second := res.CheckpointStats[0], res.CheckpointStats[1]
	t.Logf("first checkpoint wrote %d bytes; after 1%% of %d keys changed, the second wrote %d bytes (%.2f%%) and reused %d",
		first.Written, keys, second.Written, 100*float64(second.Written)/float64(first.Written), second.Reused)
	if first.Written < 5<<20 {
		t.Fatalf("the first checkpoint wrote %d bytes; the test needs a state of several MB", first.Written)
	}
	if second.Written*10 > first.Written {
		t.Fatalf("the second checkpoint wrote %d bytes, more than a tenth of the first one's %d", second.Written, first.Written)
	}
	if second.Reused < first.Written*8/10 {
		t.Fatalf("the second checkpoint reused %d bytes of shared files, want most of the first one's %d", second.Reused, first.Written)
	}
	checkSharedFiles(t, root)
}

// checkSharedFiles checks that shared/ holds exactly the files that the
// checkpoints in root reference, and returns how many there are.
func checkSharedFiles(t *testing.T, root string) int {
	t.Helper()
	ids, err := chkdir.List(root)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, id := range ids {
		m, ok, err := chkdir.ReadManifest(chkdir.Path(root, id))
		if err != nil || !ok {
			t.Fatalf("checkpoint %d: manifest %v, %v", id, ok, err)
		}
		for _, db := range m.Databases {
			for _, f := range db.Files {
				if strings.HasPrefix(f.Path, chkdir.SharedDir+"/") {
					want = append(want, strings.TrimPrefix(f.Path, chkdir.SharedDir+"/"))
				}
			}
		}
	}
	slices.Sort(want)
	want = slices.Compact(want)
	entries, err := os.ReadDir(filepath.Join(root, chkdir.SharedDir))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("shared/ holds %v; the checkpoints reference %v", got, want)
	}
	return len(got)
}

// readSavepointState returns the upsert operator's state in the savepoint
// in dir, failing on a key that appears twice.
func readSavepointState(t *testing.T, dir string) map[string]string {
	t.Helper()
	r, err := snapshotfmt.Open(context.Background(), storage.LocalDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	op, ok := r.Metadata().Operator("upsert")
	if !ok {
		t.Fatal("no upsert operator in the savepoint")
	}
	opIndex, err := r.Metadata().FindOperator("upsert")
	if err != nil {
		t.Fatal(err)
	}
	ref, ok := state.Ref(opIndex, op, upsertState.Spec().Name)
	if !ok {
		t.Fatal("no value state in the savepoint")
	}
	it := r.Entries(context.Background(), ref, keygroup.All(op.MaxParallelism))
	defer it.Close()
	got := map[string]string{}
	for it.Next() {
		e := it.Entry()
		v, err := serializers.String().Decode(e.Value)
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := got[string(e.Key)]; dup {
			t.Fatalf("key %q appears twice", e.Key)
		}
		got[string(e.Key)] = v
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// sameState fails the test unless got and want hold the same keys with the
// same values.
func sameState(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d keys restored, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %s: %q, want %q", k, got[k], v)
		}
	}
}

// restoreToSavepoint restores the checkpoint in dir into the upsert job at
// parallelism p on backend, which ends at once with a savepoint, and
// returns the savepoint's directory. It checks that the run leaves nothing
// of the restore in its work directory.
func restoreToSavepoint(t *testing.T, dir string, backend BackendKind, p int) (string, error) {
	t.Helper()
	sp := filepath.Join(t.TempDir(), "sp")
	work := t.TempDir()
	_, err := Run(context.Background(), upsertJob(newPhasedSource(""), p), RunOptions{Backend: backend, RestoreFrom: dir, SavepointDir: sp, WorkDir: work})
	if _, serr := os.Stat(filepath.Join(work, "attempt-0", "restore")); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("the restored checkpoint's databases are still in the work directory: %v", serr)
	}
	return sp, err
}

func TestRestoreIncrementalCheckpoint(t *testing.T) {
	const keys = 20_000
	var changes []upsert
	for i := 0; i < keys; i += 3 {
		changes = append(changes, upsert{Key: upsertKey(i), Version: 1})
	}
	for i := 1; i < keys; i += 7 {
		changes = append(changes, upsert{Key: upsertKey(i), Delete: true})
	}
	phases := [][]upsert{upserts(0, keys, 1, 0), changes, upserts(keys, keys+500, 1, 2)}
	root := filepath.Join(t.TempDir(), "chk")
	res := runPhases(t, root, 2, 2, phases...)
	if want := chkdir.Path(root, 4); res.LastCheckpoint != want {
		t.Fatalf("last checkpoint %s, want %s", res.LastCheckpoint, want)
	}
	want := applied(phases...)
	for _, c := range []struct {
		backend BackendKind
		p       int
	}{{Heap, 3}, {Pebble, 1}, {Pebble, 2}} {
		t.Run(fmt.Sprintf("%s/p%d", c.backend, c.p), func(t *testing.T) {
			sp, err := restoreToSavepoint(t, res.LastCheckpoint, c.backend, c.p)
			if err != nil {
				t.Fatal(err)
			}
			sameState(t, readSavepointState(t, sp), want)
			if _, err := os.Stat(filepath.Join(sp, chkdir.ManifestName)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the savepoint has %s: savepoints must be canonical", chkdir.ManifestName)
			}
		})
	}
}

// TestRetentionKeepsReferencedSharedFiles runs more checkpoints than are
// retained: the old ones go, and with them the shared files that only they
// referenced, among them one that an aborted checkpoint left behind.
func TestRetentionKeepsReferencedSharedFiles(t *testing.T) {
	root := filepath.Join(t.TempDir(), "chk")
	orphan := filepath.Join(root, chkdir.SharedDir, "upsert-0-0000000000000000-000001.sst")
	if err := os.MkdirAll(filepath.Dir(orphan), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(orphan, []byte("left by an aborted checkpoint"), 0o644); err != nil {
		t.Fatal(err)
	}
	const keys = 5000
	phases := [][]upsert{upserts(0, keys, 1, 0)}
	for v := 1; v <= 5; v++ {
		phases = append(phases, upserts(v, keys, 10, v))
	}
	runPhases(t, root, 2, 3, phases...)
	ids, err := chkdir.List(root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []uint64{5, 6, 7}) {
		t.Fatalf("checkpoints %v remain, want the last three, [5 6 7]", ids)
	}
	if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the unreferenced %s survived retention", orphan)
	}
	if n := checkSharedFiles(t, root); n == 0 {
		t.Fatal("no shared files remain")
	}
	sp, err := restoreToSavepoint(t, chkdir.Path(root, 5), Heap, 1)
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, readSavepointState(t, sp), applied(phases[:5]...))
}

// TestRestoreFromDamagedCheckpoint checks that a missing, truncated or
// corrupt shared file fails the restore with an error that names it.
func TestRestoreFromDamagedCheckpoint(t *testing.T) {
	damage := map[string]func(path string) error{
		"Missing": os.Remove,
		"Truncated": func(p string) error {
			info, err := os.Stat(p)
			if err != nil {
				return err
			}
			return os.Truncate(p, info.Size()-1)
		},
		"Corrupt": func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 0x40
			return os.WriteFile(p, b, 0o644)
		},
	}
	for name, hurt := range damage {
		t.Run(name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "chk")
			runPhases(t, root, 1, 2, upserts(0, 3000, 1, 0))
			entries, err := os.ReadDir(filepath.Join(root, chkdir.SharedDir))
			if err != nil || len(entries) == 0 {
				t.Fatalf("no shared files: %v", err)
			}
			victim := filepath.Join(root, chkdir.SharedDir, entries[0].Name())
			if err := hurt(victim); err != nil {
				t.Fatal(err)
			}
			_, err = restoreToSavepoint(t, chkdir.Path(root, 1), Heap, 1)
			if !errors.Is(err, ErrCorruptCheckpoint) || !strings.Contains(err.Error(), victim) {
				t.Fatalf("restore = %v, want ErrCorruptCheckpoint naming %s", err, victim)
			}
			t.Log(err)
		})
	}
}
