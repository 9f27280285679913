package jobrun

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/stateproc/stateproc/engine"
)

// Command is an example command: its name, its own flags, and how it builds
// its job from the parsed flags.
type Command struct {
	Name  string
	Usage string
	// Flags registers the job's own flags.
	Flags func(fs *flag.FlagSet)
	// Build returns the job and the number of records its input holds, 0
	// for an input without end.
	// Errors wrapping ErrUsage are reported as usage errors.
	Build func(c *Common) (*engine.Job, int64, error)
}

// Exit codes of the example commands.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// Main runs the command with args (without the program name) and returns
// its exit code.
func (cmd Command) Main(args []string, stdout, stderr io.Writer) int {
	var c Common
	fs := flag.NewFlagSet(cmd.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s [flags]\n\n%s\n\nflags:\n", cmd.Name, cmd.Usage)
		fs.PrintDefaults()
	}
	c.Register(fs)
	if cmd.Flags != nil {
		cmd.Flags(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q\n", cmd.Name, fs.Args())
		return ExitUsage
	}
	err := cmd.run(&c, stdout, stderr)
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(stderr, "%s: %v (see -help)\n", cmd.Name, err)
		return ExitUsage
	default:
		fmt.Fprintf(stderr, "%s: %v\n", cmd.Name, err)
		return ExitFailure
	}
}

func (cmd Command) run(c *Common, stdout, stderr io.Writer) error {
	if err := c.Check(); err != nil {
		return err
	}
	job, total, err := cmd.Build(c)
	if err != nil {
		return err
	}
	if c.Manifest {
		m, err := job.Manifest()
		if err != nil {
			return err
		}
		return m.Write(stdout)
	}
	opts, err := c.Options(total)
	if err != nil {
		return err
	}
	if opts.StopAfter == 0 {
		return cmd.runUntilStopped(c, job, opts, stdout, stderr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	res, err := engine.Run(ctx, job, opts)
	if err != nil {
		return err
	}
	elapsed := time.Since(start).Round(time.Millisecond)
	fmt.Fprintf(stderr, "%s: stopped at input position %d of %d after %v", cmd.Name, opts.StopAfter, total, elapsed)
	if opts.RestoreFrom == "" && !opts.RestoreLatest {
		// From a restore the run reads only the rest of the input.
		fmt.Fprintf(stderr, " (%.0f records/s)", float64(opts.StopAfter)/elapsed.Seconds())
	}
	if res.Restarts > 0 {
		fmt.Fprintf(stderr, ", %d restarts", res.Restarts)
	}
	if res.Savepoint != "" {
		fmt.Fprintf(stderr, ", savepoint %s", res.Savepoint)
	}
	fmt.Fprintln(stderr)
	return nil
}

// runUntilStopped runs a job over an input without end until SIGTERM or
// SIGINT, which stop it with a savepoint, as flink stop does (with -drain,
// as flink stop --drain), and prints the savepoint's directory on stdout.
// A second signal cancels the job without waiting for the savepoint.
func (cmd Command) runUntilStopped(c *Common, job *engine.Job, opts engine.RunOptions, stdout, stderr io.Writer) error {
	target := c.Savepoint
	if target == "" {
		target = filepath.Join(os.TempDir(), fmt.Sprintf("%s-savepoint-%d", cmd.Name, time.Now().UnixNano()))
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	h, err := engine.Start(context.Background(), job, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: running until SIGTERM or SIGINT, which stop it with a savepoint\n", cmd.Name)
	select {
	case <-h.Done():
		_, err := h.Wait()
		return err
	case <-sigs:
	}
	stopped := make(chan error, 1)
	go func() {
		_, err := h.StopWithSavepoint(context.Background(), target, c.Drain)
		stopped <- err
	}()
	select {
	case err := <-stopped:
		if err != nil {
			return err
		}
	case <-sigs:
		h.Cancel()
		_, err := h.Wait()
		return err
	}
	res, err := h.Wait()
	if err != nil {
		return err
	}
	if res.Restarts > 0 {
		fmt.Fprintf(stderr, "%s: %d restarts\n", cmd.Name, res.Restarts)
	}
	fmt.Fprintf(stdout, "savepoint %s\n", target)
	return nil
}
