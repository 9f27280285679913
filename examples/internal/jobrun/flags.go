package jobrun

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// Common holds the flags every example command has.
type Common struct {
	Seed           int64
	Parallelism    int
	MaxParallelism int
	Backend        string
	Compression    string
	ProcessingTime string

	Savepoint        string
	StopAfter        int64
	Drain            bool
	Restore          string
	RestoreLatest    bool
	AllowNonRestored bool

	Checkpoints        string
	CheckpointInterval time.Duration
	CheckpointLease    time.Duration
	MaxRestarts        int

	Out      string
	Manifest bool
}

// Register adds the common flags to fs.
func (c *Common) Register(fs *flag.FlagSet) {
	fs.Int64Var(&c.Seed, "seed", 1, "seed of the generated input")
	fs.IntVar(&c.Parallelism, "parallelism", 2, "subtasks per operator")
	fs.IntVar(&c.MaxParallelism, "max-parallelism", 0, "key groups of the keyed operators (0: the engine's default, or the restored savepoint's)")
	fs.StringVar(&c.Backend, "backend", "heap", "state backend: heap or pebble")
	fs.StringVar(&c.Compression, "compression", "none", "block compression of savepoints and checkpoints: none or zstd")
	fs.StringVar(&c.ProcessingTime, "processing-time", "deterministic", "where TTL and processing-time timers get their time: deterministic (the watermark, so that outputs and savepoints are reproducible) or wall (the machine's clock)")
	fs.StringVar(&c.Savepoint, "savepoint", "", "stop with a savepoint written to this directory (an input without end, stopped by SIGTERM or SIGINT, always takes one: here, or in a new directory under the temporary directory)")
	fs.Int64Var(&c.StopAfter, "stop-after", 0, "stop after this many input records, dealt round-robin over the splits (0: the end of the input)")
	fs.BoolVar(&c.Drain, "drain", false, "fire every pending event-time timer before stopping (without it, results that wait for the watermark stay in the savepoint)")
	fs.StringVar(&c.Restore, "restore", "", "start from this savepoint or checkpoint directory")
	fs.BoolVar(&c.RestoreLatest, "restore-latest", false, "start from the latest checkpoint under -checkpoints, as after a crash")
	fs.BoolVar(&c.AllowNonRestored, "allow-non-restored-state", false, "drop restored state that no operator of the job claims")
	fs.StringVar(&c.Checkpoints, "checkpoints", "", "take periodic checkpoints under this directory")
	fs.DurationVar(&c.CheckpointInterval, "checkpoint-interval", 10*time.Second, "time between periodic checkpoints (with -checkpoints)")
	fs.DurationVar(&c.CheckpointLease, "checkpoint-lease", engine.DefaultCheckpointLease, "term of the run's lease on a -checkpoints root in a bucket: how long a killed run holds up the next")
	fs.IntVar(&c.MaxRestarts, "max-restarts", 0, "restarts from the last checkpoint after a failure")
	fs.StringVar(&c.Out, "out", "", "write the job's outputs as files under this directory (exactly once)")
	fs.BoolVar(&c.Manifest, "manifest", false, "print the job's manifest as JSON and exit without running")
}

// ErrUsage is wrapped by errors in the command line; commands exit with 2
// on them.
var ErrUsage = errors.New("usage")

// Usagef returns an error about the command line.
func Usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

// Check reports flags that cannot work together, before any job is built.
func (c *Common) Check() error {
	if c.Parallelism < 1 {
		return Usagef("-parallelism %d: must be at least 1", c.Parallelism)
	}
	if c.MaxParallelism != 0 {
		if err := keygroup.Validate(c.Parallelism, c.MaxParallelism); err != nil {
			return Usagef("-max-parallelism %d: %v", c.MaxParallelism, err)
		}
	}
	if _, err := c.backend(); err != nil {
		return err
	}
	if _, err := c.codec(); err != nil {
		return err
	}
	if _, err := c.processingTime(); err != nil {
		return err
	}
	if c.StopAfter < 0 {
		return Usagef("-stop-after %d: must not be negative", c.StopAfter)
	}
	if c.Checkpoints != "" && c.CheckpointInterval <= 0 {
		return Usagef("-checkpoint-interval %v: must be positive", c.CheckpointInterval)
	}
	if c.CheckpointLease < engine.MinCheckpointLease {
		return Usagef("-checkpoint-lease %v: must be at least %v", c.CheckpointLease, engine.MinCheckpointLease)
	}
	if c.MaxRestarts < 0 {
		return Usagef("-max-restarts %d: must not be negative", c.MaxRestarts)
	}
	if c.RestoreLatest && (c.Checkpoints == "" || c.Restore != "") {
		return Usagef("-restore-latest needs -checkpoints and no -restore")
	}
	return nil
}

func (c *Common) backend() (engine.BackendKind, error) {
	switch b := engine.BackendKind(c.Backend); b {
	case engine.Heap, engine.Pebble:
		return b, nil
	}
	return "", Usagef("-backend %q: want heap or pebble", c.Backend)
}

func (c *Common) processingTime() (engine.ProcessingTimeMode, error) {
	switch c.ProcessingTime {
	case "deterministic":
		return engine.DeterministicTime, nil
	case "wall":
		return engine.WallClock, nil
	}
	return engine.ProcessingTimeMode{}, Usagef("-processing-time %q: want deterministic or wall", c.ProcessingTime)
}

func (c *Common) codec() (snapshotfmt.Codec, error) {
	switch c.Compression {
	case "none":
		return snapshotfmt.CodecNone, nil
	case "zstd":
		return snapshotfmt.CodecZstd, nil
	}
	return 0, Usagef("-compression %q: want none or zstd", c.Compression)
}

// Options returns the run options for an input of total records, 0 for an
// input without end. Without -stop-after the sources stop at the end of the
// input, and only -drain lets the last timers fire: a savepoint taken there
// keeps them pending. An input without end runs until it is stopped: the
// savepoint is the stop's, not RunOptions'.
func (c *Common) Options(total int64) (engine.RunOptions, error) {
	if err := c.Check(); err != nil {
		return engine.RunOptions{}, err
	}
	if total > 0 && c.StopAfter > total {
		return engine.RunOptions{}, Usagef("-stop-after %d: the input has only %d records", c.StopAfter, total)
	}
	backend, _ := c.backend()
	codec, _ := c.codec()
	pt, _ := c.processingTime()
	opts := engine.RunOptions{
		Backend:               backend,
		ProcessingTime:        pt,
		Compression:           codec,
		SavepointDir:          c.Savepoint,
		StopAfter:             c.StopAfter,
		Drain:                 c.Drain,
		RestoreFrom:           c.Restore,
		AllowNonRestoredState: c.AllowNonRestored,
		MaxRestarts:           c.MaxRestarts,
	}
	if opts.StopAfter == 0 {
		opts.StopAfter = total
	}
	if opts.StopAfter == 0 {
		opts.SavepointDir = ""
	}
	if c.Checkpoints != "" {
		opts.CheckpointDir = c.Checkpoints
		opts.CheckpointInterval = c.CheckpointInterval
		opts.CheckpointLease = c.CheckpointLease
	}
	opts.RestoreLatest = c.RestoreLatest
	return opts, nil
}
