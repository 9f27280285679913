package main

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway"
	"github.com/stateproc/stateproc/examples/internal/jobruntest"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// GatewayMeter over an input without end (-events 0) stops with a
// savepoint on SIGTERM, prints where it went and exits 0, as flink stop
// does. Restored at another parallelism on the other backend and run to a
// position past the stop, it writes through its file sinks what a run that
// was never stopped writes up to that position, and ends with the same
// keyed state. Both drain at that position: at another parallelism the
// watermark, and so the deterministic processing time that stamps TTL,
// moves in other steps, so only drained state compares byte for byte.
func TestSIGTERMStopsWithASavepointThatResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the job three times, one of them in a child process")
	}
	dir := t.TempDir()
	out, clean, chk := filepath.Join(dir, "out"), filepath.Join(dir, "clean"), filepath.Join(dir, "chk")
	args := []string{"-events", "0", "-parallelism", "2", "-backend", "pebble", "-out", out, "-checkpoints", chk, "-checkpoint-interval", "50ms"}
	// Without -savepoint the savepoint goes under the temporary directory.
	sp := jobruntest.StopWithSIGTERM(t, childArgs, args, dir, chk)
	r, err := snapshotfmt.Open(context.Background(), storage.LocalDir(sp))
	if err != nil {
		t.Fatal(err)
	}
	read := jobruntest.SourceRead(t, r.Metadata(), gateway.EventsUID)
	r.Close()
	if read == 0 {
		t.Fatal("the savepoint holds the events source at its start: the job read nothing before the stop")
	}
	end := strconv.FormatInt(read+read/2+1000, 10)

	restored := filepath.Join(dir, "restored-sp")
	if code, _, errOut := runCommand(t, "-events", "0", "-parallelism", "3", "-backend", "heap", "-restore", sp, "-stop-after", end,
		"-drain", "-savepoint", restored, "-out", out); code != 0 {
		t.Fatalf("restored run: exit %d: %s", code, errOut)
	}
	uninterrupted := filepath.Join(dir, "clean-sp")
	if code, _, errOut := runCommand(t, "-events", "0", "-parallelism", "2", "-backend", "pebble", "-stop-after", end,
		"-drain", "-savepoint", uninterrupted, "-out", clean); code != 0 {
		t.Fatalf("uninterrupted run: exit %d: %s", code, errOut)
	}
	for _, sink := range []string{"request-records", "tenant-totals"} {
		want, got := jobruntest.CommittedLines(t, filepath.Join(clean, sink)), jobruntest.CommittedLines(t, filepath.Join(out, sink))
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: %d lines after the stop and restore, %d uninterrupted", sink, len(got), len(want))
		}
	}
	if partsOfEpoch(t, filepath.Join(out, "request-records"), 0) == 0 {
		t.Error("the stopped run committed no output: the stop's savepoint did not commit what it covers")
	}
	a := sptest.Open(t, uninterrupted)
	if len(sptest.Entries(t, a, gateway.TenantCostUID, gateway.USDTotalState)) == 0 {
		t.Fatal("the uninterrupted run ended without tenant totals: comparing the states would check nothing")
	}
	sptest.EqualKeyedState(t, a, sptest.Open(t, restored))
	t.Logf("stopped %d events in; resumed to %s", read, end)
}
