package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/flinkrewrite"
	"github.com/stateproc/stateproc/operatoredit"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

func newOperatorCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Remove or rename an operator of a savepoint",
		Long: `Operator rewrites which operators a savepoint holds: remove drops one with
all its state, rename gives one a new uid. Both copy every other segment as
opaque bytes into a new savepoint with the input's layout, and record in the
metadata's lineage which savepoint it came from and what changed.

The input is never modified. The output is written to a temporary directory
beside --out, synced and renamed; an existing --out is refused (exit 2) unless
--force. An unknown operator is refused (exit 2) before anything is written.`,
		Example: `  stateproc operator remove ./savepoints/sp-42 legacy-enricher --out ./sp-42-without
  stateproc operator rename ./savepoints/sp-42 tenant-cost tenant-billing --out ./sp-42-renamed`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usagef("operator needs a subcommand: remove or rename")
		},
	}
	cmd.AddCommand(newOperatorRemoveCmd(), newOperatorRenameCmd())
	return cmd
}

func newOperatorRemoveCmd() *cobra.Command {
	var f rewriteFlags
	cmd := &cobra.Command{
		Use:   "remove SAVEPOINT UID --out DST",
		Short: "Write a copy of a savepoint without one operator",
		Long: `Remove writes a new savepoint without the operator UID: its keyed state,
timers, operator and broadcast state are gone, every other operator is copied
as opaque bytes. A job that no longer has the operator then restores without
allowing non-restored state. --dry-run prints what would be removed, from the
index alone, and writes nothing. Of an Apache Flink savepoint, UID is the
operator's uid, its ID (32 hex digits) or a name that one operator alone has.`,
		Example: `  stateproc operator remove ./savepoints/sp-42 legacy-enricher --out ./sp-42-without
  stateproc operator remove ./savepoints/sp-42 legacy-enricher --dry-run`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOperator(cmd.Context(), &f, args[0], cmd.OutOrStdout(), newByteProgress(cmd.Context(), cmd.ErrOrStderr(), "removing"),
				func(ctx context.Context, r savepoint.Source, opts rewrite.Options) (*operatoredit.Report, error) {
					return operatoredit.Remove(ctx, r, args[0], args[1], opts)
				},
				func(ctx context.Context, r *flinkfmt.Reader, dst storage.Target, opts flinkrewrite.Options) (*flinkrewrite.OperatorChange, error) {
					return flinkrewrite.RemoveOperator(ctx, r, dst, args[1], opts)
				})
		},
	}
	addRewriteFlags(cmd, &f)
	addCheckCopiesFlag(cmd, &f)
	return cmd
}

func newOperatorRenameCmd() *cobra.Command {
	var f rewriteFlags
	cmd := &cobra.Command{
		Use:   "rename SAVEPOINT OLD NEW --out DST",
		Short: "Write a copy of a savepoint with an operator's uid changed",
		Long: `Rename writes a new savepoint in which the operator OLD has the uid NEW, so
that a job whose operator's uid changed finds its state. Everything else,
including the operator's name, is copied unchanged. NEW must not be taken.
--dry-run prints what would be renamed and writes nothing. Of an Apache Flink
savepoint, OLD is the operator's uid, ID or name, and the operator's ID becomes
Flink's hash of NEW, as Flink derives the ID of an operator with a uid;
metadata version 5 records NEW as its uid too.`,
		Example: `  stateproc operator rename ./savepoints/sp-42 tenant-cost tenant-billing --out ./sp-42-renamed`,
		Args:    cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOperator(cmd.Context(), &f, args[0], cmd.OutOrStdout(), newByteProgress(cmd.Context(), cmd.ErrOrStderr(), "renaming"),
				func(ctx context.Context, r savepoint.Source, opts rewrite.Options) (*operatoredit.Report, error) {
					return operatoredit.Rename(ctx, r, args[0], args[1], args[2], opts)
				},
				func(ctx context.Context, r *flinkfmt.Reader, dst storage.Target, opts flinkrewrite.Options) (*flinkrewrite.OperatorChange, error) {
					return flinkrewrite.RenameOperator(ctx, r, dst, args[1], flinkrewrite.RenameOptions{UID: args[2], Options: opts})
				})
		},
	}
	addRewriteFlags(cmd, &f)
	addCheckCopiesFlag(cmd, &f)
	return cmd
}

func runOperator(ctx context.Context, f *rewriteFlags, input string, out io.Writer, bar *byteProgress,
	do func(context.Context, savepoint.Source, rewrite.Options) (*operatoredit.Report, error),
	flink func(context.Context, *flinkfmt.Reader, storage.Target, flinkrewrite.Options) (*flinkrewrite.OperatorChange, error)) error {
	r, err := openRewriteInput(ctx, f, input, f.out)
	if err != nil {
		return err
	}
	defer r.Close()
	defer f.opened.Close()
	if fr, ok := flinkReader(r); ok {
		return runFlinkOperator(ctx, f, fr, input, out, bar, flink)
	}
	rep, err := do(ctx, r, bar.options(f.options()))
	bar.end(err)
	if err != nil {
		return rewriteError(err)
	}
	if f.output == outputJSON {
		return writeJSON(out, struct {
			Savepoint string `json:"savepoint"`
			Out       string `json:"out,omitempty"`
			*operatoredit.Report
		}{storage.Shown(input), storage.Shown(f.out), rep})
	}
	command, done := "operator remove", "Removed operator "+rep.UID+" from"
	if rep.NewUID != "" {
		command, done = "operator rename", fmt.Sprintf("Renamed operator %s to %s in", rep.UID, rep.NewUID)
	}
	fmt.Fprintln(out, rewriteHeading(f, command, done, input))
	t := newTable(out, "OPERATOR", "KEYED STATES", "TIMER SERVICES", "OPERATOR STATES", "BROADCAST STATES", "SEGMENTS", "ENTRIES", "BYTES")
	t.Append(rep.UID, rep.KeyedStates, rep.TimerServices, rep.OperatorStates, rep.BroadcastStates, rep.Segments, rep.Entries, humanBytes(float64(rep.Bytes)))
	return t.Render()
}
