package main

import (
	"context"
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
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// childArgs, when set in the environment, makes the test binary run the
// command with these arguments (separated by newlines) instead of the
// tests: the process that TestKilledJobRestoresItsLatestCheckpoint kills.
const childArgs = "GATEWAYMETER_CHILD_ARGS"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(childArgs); ok {
		os.Exit(command().Main(strings.Split(args, "\n"), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// partsOfEpoch counts the committed part files whose transactions a run of
// epoch e wrote (see engine.FileSink: part-<subtask>-<epoch>-<sequence>).
func partsOfEpoch(t *testing.T, dir string, e uint64) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range entries {
		fields := strings.Split(f.Name(), "-")
		if len(fields) == 4 && fields[0] == "part" {
			if got, err := strconv.ParseUint(fields[2], 10, 64); err == nil && got == e {
				n++
			}
		}
	}
	return n
}

// A GatewayMeter process killed with SIGKILL while it runs with periodic
// checkpoints, and started again with -restore-latest, writes through its
// file sinks exactly what a run that was never killed writes. The second run
// really restored: the killed one had committed output, the checkpoint it
// left holds split positions past the start of the input and before its
// end, and nothing was written twice.
func TestKilledJobRestoresItsLatestCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the job three times, one of them in a child process")
	}
	// Under the race detector, a fifth of the input, for the three runs
	// to end within the test's time.
	events := "100000"
	if raceDetector {
		events = "20000"
	}
	dir := t.TempDir()
	clean, out, chk := filepath.Join(dir, "clean"), filepath.Join(dir, "out"), filepath.Join(dir, "chk")
	common := []string{"-events", events, "-parallelism", "2", "-backend", "pebble"}
	if code, _, errOut := runCommand(t, append(common, "-out", clean)...); code != 0 {
		t.Fatalf("uninterrupted run: exit %d: %s", code, errOut)
	}

	args := append(common, "-out", out, "-checkpoints", chk, "-checkpoint-interval", "50ms")
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childArgs+"="+strings.Join(args, "\n"))
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once it has completed checkpoints and committed output, well
	// before its end.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		time.Sleep(20 * time.Millisecond)
		ids, _ := filepath.Glob(filepath.Join(chk, "chk-*"))
		if len(ids) >= 2 && partsOfEpoch(t, filepath.Join(out, "request-records"), 0) > 0 {
			break
		}
		if time.Now().After(deadline) {
			child.Process.Kill()
			t.Fatal("the child completed no checkpoints within two minutes")
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
	r, err := snapshotfmt.Open(context.Background(), storage.LocalDir(latest))
	if err != nil {
		t.Fatal(err)
	}
	id := r.Metadata().ID
	read := jobruntest.SourceRead(t, r.Metadata(), gateway.EventsUID)
	r.Close()
	if total, _ := strconv.ParseInt(events, 10, 64); read == 0 || read >= total {
		t.Fatalf("checkpoint %s holds the events source %d records in, of %d: not a checkpoint taken mid-run", latest, read, total)
	}

	if code, _, errOut := runCommand(t, append(args, "-restore-latest")...); code != 0 {
		t.Fatalf("restored run: exit %d: %s", code, errOut)
	}
	for _, sink := range []string{"request-records", "tenant-totals"} {
		want, got := jobruntest.CommittedLines(t, filepath.Join(clean, sink)), jobruntest.CommittedLines(t, filepath.Join(out, sink))
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: %d lines after the kill and restore, %d uninterrupted", sink, len(got), len(want))
		}
	}
	t.Logf("killed after committing %d request-record files; restored checkpoint %d, %d events in", killedParts, id, read)
	if partsOfEpoch(t, filepath.Join(out, "request-records"), id) == 0 || killedParts == 0 {
		t.Errorf("the output does not come from both runs: %d files committed before the kill, %d by the run restored from checkpoint %d",
			killedParts, partsOfEpoch(t, filepath.Join(out, "request-records"), id), id)
	}
}
