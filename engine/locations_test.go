package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/storage"
)

// A checkpoint root, savepoint target or restore point given as a
// file:// URL is the local path it names, wherever the run starts; one
// that does not parse fails the run before it reads a record.
func TestRunLocations(t *testing.T) {
	src := testSource{splits: 2, n: 2000, keys: 7}
	var seen atomic.Int64
	dir := t.TempDir()
	wd := t.TempDir()
	t.Chdir(wd)
	res, err := Run(context.Background(), failingJob(src, 2, NewCollectSink[windowResult](), &seen, -1), RunOptions{
		CheckpointDir: "file://" + filepath.Join(dir, "chk"), CheckpointInterval: time.Millisecond,
		SavepointDir: "file://" + filepath.Join(dir, "sp")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Checkpoints == 0 || !strings.HasPrefix(res.LastCheckpoint, filepath.Join(dir, "chk")+string(filepath.Separator)) {
		t.Errorf("%d checkpoints, the last %q; want them under %s", res.Checkpoints, res.LastCheckpoint, filepath.Join(dir, "chk"))
	}
	if _, err := os.Stat(filepath.Join(dir, "sp", "_metadata")); err != nil {
		t.Errorf("no savepoint at the file:// target: %v", err)
	}
	if entries, _ := os.ReadDir(wd); len(entries) != 0 {
		t.Errorf("the run wrote %s under the working directory", entries[0].Name())
	}
	if _, err := Run(context.Background(), failingJob(src, 2, NewCollectSink[windowResult](), &seen, -1), RunOptions{
		RestoreFrom: "file://" + filepath.Join(dir, "sp")}); err != nil {
		t.Errorf("restore from a file:// URL: %v", err)
	}
	for _, opts := range []RunOptions{{CheckpointDir: "ftp://host/chk"}, {SavepointDir: "ftp://host/sp"}, {RestoreFrom: "ftp://host/sp"}} {
		seen.Store(0)
		_, err := Run(context.Background(), failingJob(src, 2, NewCollectSink[windowResult](), &seen, -1), opts)
		if err == nil || !strings.Contains(err.Error(), "unsupported scheme") || seen.Load() != 0 {
			t.Errorf("%+v: %v after %d records; want the scheme refused before any record", opts, err, seen.Load())
		}
	}
	if entries, _ := os.ReadDir(wd); len(entries) != 0 {
		t.Errorf("a refused run wrote %s under the working directory", entries[0].Name())
	}
}

// A checkpoint root records the name of the job whose checkpoints it
// holds; a run of another job into it fails at once, on disk and in a
// bucket, and deletes nothing there, where its retention used to delete
// the other job's checkpoints.
func TestRootOfAnotherJobIsRefused(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	for _, root := range []string{filepath.Join(t.TempDir(), "chk"), storetest.URL(srv.Endpoint(), "state", "chk")} {
		src := testSource{splits: 2, n: 2000, keys: 7}
		var seen atomic.Int64
		res, err := Run(context.Background(), failingJob(src, 2, NewCollectSink[windowResult](), &seen, -1), RunOptions{
			CheckpointDir: root, CheckpointInterval: time.Millisecond, CheckpointLease: testLease})
		if err != nil {
			t.Fatal(err)
		}
		var writeErrors []error
		_, err = Run(context.Background(), broadcastJob(2, NewCollectSink[int64](), &writeErrors), RunOptions{
			CheckpointDir: root, CheckpointInterval: time.Millisecond, CheckpointLease: testLease})
		if !errors.Is(err, ErrCheckpointRootOfAnotherJob) || !strings.Contains(err.Error(), `"window-count"`) {
			t.Errorf("%s: the other job's run: %v; want ErrCheckpointRootOfAnotherJob naming the job", storage.Shown(root), err)
		}
		if latest, err := LatestCheckpoint(root); err != nil || storage.Shown(latest) != storage.Shown(res.LastCheckpoint) {
			t.Errorf("%s: latest checkpoint %s (%v) after the refused run, want the first job's %s", storage.Shown(root), storage.Shown(latest), err, storage.Shown(res.LastCheckpoint))
		}
		// The job itself runs there again.
		if _, err := Run(context.Background(), failingJob(src, 2, NewCollectSink[windowResult](), &seen, -1), RunOptions{
			CheckpointDir: root, CheckpointInterval: time.Millisecond, CheckpointLease: testLease, RestoreLatest: true}); err != nil {
			t.Errorf("%s: the job again: %v", storage.Shown(root), err)
		}
	}
}
