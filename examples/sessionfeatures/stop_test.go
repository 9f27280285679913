package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/examples/internal/jobruntest"
	"github.com/stateproc/stateproc/examples/sessionfeatures/sessions"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/savepoint"
)

// childArgs, when set in the environment, makes the test binary run the
// command with these arguments (one a line) instead of the tests: the
// child process a test signals.
const childArgs = "SESSIONFEATURES_CHILD_ARGS"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(childArgs); ok {
		os.Exit(command().Main(strings.Split(args, "\n"), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// SessionFeatures over an input without end (-events 0) stops with a
// savepoint on SIGTERM, prints where it went and exits 0, as flink stop
// does. Restored at another parallelism on the other backend and run to a
// position past the stop, it writes what a run that was never stopped
// writes up to that position, and ends with the same keyed state. Both
// drain there, as GatewayMeter's test does, so that no session is left
// open at a point that depends on the steps the watermark moved in.
func TestSIGTERMStopsWithASavepointThatResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the job three times, one of them in a child process")
	}
	dir := t.TempDir()
	out, clean, chk := filepath.Join(dir, "out"), filepath.Join(dir, "clean"), filepath.Join(dir, "chk")
	args := []string{"-events", "0", "-parallelism", "2", "-backend", "pebble", "-out", out, "-checkpoints", chk, "-checkpoint-interval", "50ms"}
	// Without -savepoint the savepoint goes under the temporary directory.
	sp := jobruntest.StopWithSIGTERM(t, childArgs, args, dir, chk)
	read := jobruntest.SourceRead(t, sptest.Open(t, sp).Metadata(), sessions.ClicksUID)
	if read == 0 {
		t.Fatal("the savepoint holds the clicks source at its start: the job read nothing before the stop")
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
	want, got := jobruntest.CommittedLines(t, clean), jobruntest.CommittedLines(t, out)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("%d session summaries after the stop and restore, %d uninterrupted", len(got), len(want))
	}
	a, b := sptest.Open(t, uninterrupted), sptest.Open(t, restored)
	if !slices.EqualFunc(sptest.Entries(t, a, sessions.FeaturesUID, sessions.SessionState), sptest.Entries(t, b, sessions.FeaturesUID, sessions.SessionState), sameEntry) {
		t.Error("the session state differs")
	}
	// A count's TTL stamp is the processing time of its last update,
	// which under DeterministicTime follows the watermark, which moves in
	// other steps at another parallelism: the counts compare without it.
	ca, cb := sptest.Entries(t, a, sessions.FeaturesUID, sessions.CountsState), sptest.Entries(t, b, sessions.FeaturesUID, sessions.CountsState)
	if len(ca) == 0 {
		t.Fatal("the uninterrupted run ended without category counts: comparing the states would check nothing")
	}
	if !slices.EqualFunc(ca, cb, func(x, y savepoint.Entry) bool {
		x.Value, y.Value = x.Value[ttlStampBytes:], y.Value[ttlStampBytes:]
		return sameEntry(x, y)
	}) {
		t.Errorf("the category counts differ: %d entries after the stop and restore, %d uninterrupted", len(cb), len(ca))
	}
	t.Logf("stopped %d clicks in; resumed to %s", read, end)
}

// ttlStampBytes is the last-modified time that precedes a TTL'd value.
const ttlStampBytes = 8

func sameEntry(x, y savepoint.Entry) bool {
	return x.KeyGroup == y.KeyGroup && bytes.Equal(x.Key, y.Key) && bytes.Equal(x.Namespace, y.Namespace) &&
		bytes.Equal(x.MapKey, y.MapKey) && bytes.Equal(x.Value, y.Value) && x.Timestamp == y.Timestamp
}
