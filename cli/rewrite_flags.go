package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// rewriteFlags are the flags every command that writes a savepoint has.
type rewriteFlags struct {
	out         string
	force       bool
	dryRun      bool
	output      string
	checkCopies bool
	// opened is the target in a bucket, opened while the input is.
	opened *rewrite.Opening
}

func addRewriteFlags(cmd *cobra.Command, f *rewriteFlags) {
	cmd.Flags().StringVar(&f.out, "out", "", "`directory` to write the new savepoint to (required unless --dry-run)")
	cmd.Flags().BoolVar(&f.force, "force", false, "replace --out if it exists")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "print what would change and write nothing")
	addOutputFlag(cmd, &f.output)
}

// addCheckCopiesFlag adds --check-copies to a command that copies input
// files whole.
func addCheckCopiesFlag(cmd *cobra.Command, f *rewriteFlags) {
	cmd.Flags().BoolVar(&f.checkCopies, "check-copies", false,
		"read and check every input file the output keeps whole; without it, such a file written to a bucket of the input's store is copied there by the store, unread")
}

// check validates the flags before anything is opened.
func (f *rewriteFlags) check() error {
	if err := checkOutput(f.output); err != nil {
		return err
	}
	if f.out == "" && !f.dryRun {
		return usagef("--out is required (or --dry-run)")
	}
	return nil
}

func (f *rewriteFlags) options() rewrite.Options {
	return rewrite.Options{Out: f.out, Force: f.force, DryRun: f.dryRun, CheckCopies: f.checkCopies, Opened: f.opened}
}

// openRewriteInput opens the input of a rewrite, and its target in a
// bucket at the same time: each is a round trip there. target is where the
// rewrite writes: --out, or a shard's part of it. The caller closes f's
// opened target (f.opened.Close) with the input.
func openRewriteInput(ctx context.Context, f *rewriteFlags, path, target string) (savepoint.Source, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	if !f.dryRun {
		f.opened = rewrite.OpenAhead(ctx, target, f.force, transfersOf(ctx))
	}
	r, err := openSavepoint(ctx, path)
	if err != nil {
		f.opened.Close()
		f.opened = nil
		return nil, err
	}
	return r, nil
}

// rewriteError maps a rewrite's refusal, found before anything was
// written, to a usage error (exit 2).
func rewriteError(err error) error {
	if errors.Is(err, rewrite.ErrRefused) {
		return &UsageError{Err: err}
	}
	return err
}

// rewriteHeading is the first line of a rewrite's table output: done says
// what was done to the input ("Pruned", "Removed operator x from"), command
// names it for a dry run.
func rewriteHeading(f *rewriteFlags, command, done, input string) string {
	if f.dryRun {
		return "Dry run of " + command + " on " + storage.Shown(input) + ": nothing was written."
	}
	return done + " " + storage.Shown(input) + " into " + storage.Shown(f.out) + "."
}
