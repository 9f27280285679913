package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway"
	"github.com/stateproc/stateproc/examples/internal/jobruntest"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// The killed-job test with the checkpoint root and the final savepoint in
// a bucket of a versitygw: a process killed with SIGKILL while it uploads
// incremental checkpoints, restarted with -restore-latest from the bucket,
// writes exactly what an uninterrupted run writes, and its savepoint in
// the bucket holds the same keyed state as the uninterrupted run's on disk.
func TestKilledJobRestoresFromABucket(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the job three times, one of them in a child process")
	}
	srv := storetest.StartWithBucket(t, "state")
	events := "100000"
	if raceDetector {
		events = "20000"
	}
	dir := t.TempDir()
	clean, out := filepath.Join(dir, "clean"), filepath.Join(dir, "out")
	cleanSP := filepath.Join(dir, "clean-sp")
	chk := storetest.URL(srv.Endpoint(), "state", "gateway/chk")
	sp := storetest.URL(srv.Endpoint(), "state", "gateway/sp")
	common := []string{"-events", events, "-parallelism", "2", "-backend", "pebble"}
	if code, _, errOut := runCommand(t, append(common, "-out", clean, "-savepoint", cleanSP)...); code != 0 {
		t.Fatalf("uninterrupted run: exit %d: %s", code, errOut)
	}

	args := append(common, "-out", out, "-checkpoints", chk, "-checkpoint-interval", "50ms", "-checkpoint-lease", "3s")
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childArgs+"="+strings.Join(args, "\n"))
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		time.Sleep(20 * time.Millisecond)
		latest, err := engine.LatestCheckpoint(chk)
		if err == nil && checkpointID(t, latest) >= 2 && partsOfEpoch(t, filepath.Join(out, "request-records"), 0) > 0 {
			break
		}
		if time.Now().After(deadline) {
			child.Process.Kill()
			t.Fatal("the child completed no two checkpoints in the bucket within two minutes")
		}
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := child.Wait(); err == nil {
		t.Fatal("the child ended before it was killed: the test killed nothing")
	}
	killedParts := partsOfEpoch(t, filepath.Join(out, "request-records"), 0)

	latest, err := engine.LatestCheckpoint(chk)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := storage.OpenDir(ctx, latest, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := snapshotfmt.Open(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	id, read := r.Metadata().ID, jobruntest.SourceRead(t, r.Metadata(), gateway.EventsUID)
	r.Close()
	d.Close()
	if total, _ := strconv.ParseInt(events, 10, 64); read == 0 || read >= total {
		t.Fatalf("checkpoint %s holds the events source %d records in, of %d: not a checkpoint taken mid-run", latest, read, total)
	}

	// The killed run left its lease on the root, which the restored run
	// takes over once it has lapsed, and releases at its end.
	if !leaseThere(t, chk) {
		t.Error("the killed run left no lease on the checkpoint root")
	}
	if code, _, errOut := runCommand(t, append(args, "-restore-latest", "-savepoint", sp)...); code != 0 {
		t.Fatalf("restored run: exit %d: %s", code, errOut)
	}
	if leaseThere(t, chk) {
		t.Error("the restored run left its lease on the checkpoint root")
	}
	for _, sink := range []string{"request-records", "tenant-totals"} {
		want, got := jobruntest.CommittedLines(t, filepath.Join(clean, sink)), jobruntest.CommittedLines(t, filepath.Join(out, sink))
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: %d lines after the kill and restore, %d uninterrupted", sink, len(got), len(want))
		}
	}
	if partsOfEpoch(t, filepath.Join(out, "request-records"), id) == 0 || killedParts == 0 {
		t.Errorf("the output does not come from both runs: %d files committed before the kill, %d by the run restored from checkpoint %d",
			killedParts, partsOfEpoch(t, filepath.Join(out, "request-records"), id), id)
	}
	a, err := snapshotfmt.Open(ctx, storage.LocalDir(cleanSP))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	bd, err := storage.OpenDir(ctx, sp, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bd.Close()
	b, err := snapshotfmt.Open(ctx, bd)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if len(a.DataFiles()) == 0 || !slices.Equal(a.DataFiles(), b.DataFiles()) {
		t.Errorf("the savepoint in the bucket has data files %v, the uninterrupted run's %v", b.DataFiles(), a.DataFiles())
	}
	t.Logf("killed after committing %d request-record files; restored checkpoint %d from the bucket, %d events in", killedParts, id, read)
}

func checkpointID(t *testing.T, location string) uint64 {
	t.Helper()
	loc, err := storage.ParseLocation(location)
	if err != nil {
		t.Fatal(err)
	}
	id, err := strconv.ParseUint(strings.TrimPrefix(filepath.Base(loc.Prefix), "chk-"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// leaseThere reports whether a run's lease lies on the checkpoint root.
func leaseThere(t *testing.T, root string) bool {
	t.Helper()
	d, err := storage.OpenDir(context.Background(), root, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f, err := d.Open(context.Background(), engine.CheckpointRootHoldName)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	return true
}
