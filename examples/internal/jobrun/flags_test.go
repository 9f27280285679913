package jobrun

import (
	"errors"
	"flag"
	"io"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/snapshotfmt"
)

func parse(t *testing.T, args ...string) *Common {
	t.Helper()
	var c Common
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &c
}

// Without -stop-after the run stops at the end of the input, where a
// savepoint keeps its timers unless -drain is given.
func TestOptionsStopAtTheEndOfTheInput(t *testing.T) {
	opts, err := parse(t, "-backend", "pebble", "-compression", "zstd", "-savepoint", "sp").Options(1234)
	if err != nil {
		t.Fatal(err)
	}
	if opts.StopAfter != 1234 || opts.Drain || opts.Backend != engine.Pebble || opts.Compression != snapshotfmt.CodecZstd || opts.SavepointDir != "sp" ||
		opts.ProcessingTime != engine.DeterministicTime {
		t.Errorf("options: %+v", opts)
	}
	opts, err = parse(t, "-stop-after", "100", "-drain", "-checkpoints", "chk", "-checkpoint-interval", "2s", "-checkpoint-lease", "5s", "-restore", "r", "-allow-non-restored-state",
		"-processing-time", "wall").Options(1234)
	if err != nil {
		t.Fatal(err)
	}
	if opts.StopAfter != 100 || !opts.Drain || opts.CheckpointDir != "chk" || opts.CheckpointInterval != 2*time.Second || opts.CheckpointLease != 5*time.Second || opts.RestoreFrom != "r" || !opts.AllowNonRestoredState ||
		opts.ProcessingTime != engine.WallClock {
		t.Errorf("options: %+v", opts)
	}
}

func TestOptionsRefuseBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-backend", "rocksdb"},
		{"-checkpoint-lease", "0s"},
		{"-compression", "snappy"},
		{"-parallelism", "0"},
		{"-parallelism", "4", "-max-parallelism", "2"},
		{"-stop-after", "-1"},
		{"-stop-after", "2000"},
		{"-checkpoints", "chk", "-checkpoint-interval", "0s"},
		{"-max-restarts", "-1"},
		{"-processing-time", "event"},
	} {
		if _, err := parse(t, args...).Options(1000); !errors.Is(err, ErrUsage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

// An input without end runs until it is stopped: no stop position, and the
// savepoint is the stop's, not one at the end of the input.
func TestOptionsForAnInputWithoutEnd(t *testing.T) {
	opts, err := parse(t, "-savepoint", "sp").Options(0)
	if err != nil {
		t.Fatal(err)
	}
	if opts.StopAfter != 0 || opts.SavepointDir != "" {
		t.Errorf("options: %+v", opts)
	}
	opts, err = parse(t, "-stop-after", "5000", "-savepoint", "sp").Options(0)
	if err != nil {
		t.Fatal(err)
	}
	if opts.StopAfter != 5000 || opts.SavepointDir != "sp" {
		t.Errorf("options with a stop position: %+v", opts)
	}
}
