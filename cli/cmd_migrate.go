package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/compat"
	"github.com/stateproc/stateproc/evolve"
	"github.com/stateproc/stateproc/storage"
)

type migrateOptions struct {
	rewriteFlags
	targetFlags
	now    string
	stderr io.Writer
}

func newMigrateCmd() *cobra.Command {
	var o migrateOptions
	cmd := &cobra.Command{
		Use:   "migrate SAVEPOINT --job job.json --out DST",
		Short: "Write a copy of a savepoint with its values rewritten for a new build of the job",
		Long: `Migrate writes a new savepoint that the job described by --job (the manifest a
built job prints with -manifest) restores as it is. Every value, list element
and map value of a state that stateproc check finds compatible after migration
is rewritten from the savepoint's serializer to the job's: Avro values are
resolved from the writer schema to the reader schema (fields added with their
defaults, removed, renamed through aliases, reordered, promoted; enum symbols
and union branches mapped), and TTL turned on adds a last-modified time to
every value (--now, which has no default: it is required then) or, turned off,
strips it. The metadata records the job's serializer snapshots and TTL
configuration, and in its lineage which savepoint it came from and what was
rewritten. States copied as they are keep their bytes; what the job no longer
declares is left out with --allow-non-restored-state; what only the job
declares is not added, since it starts empty.

Migrate first runs the check, and refuses (exit 3) with nothing written when
anything is incompatible, including a state whose new Avro schema removed a
union branch that some value uses, or would take a value past the readers'
bounds: those states are read in full before
anything is written, and the first such value is named by key group, key and
place in its data file.

--schema UID/STATE=FILE.avsc migrates one state of the savepoint's own job to
a new Avro schema instead (repeatable).

The input is never modified. The output is written to a temporary directory
beside --out, synced and renamed; an existing --out is refused (exit 2) unless
--force. Values stream one at a time. --dry-run checks, rewrites every value
in memory to count, and writes nothing.`,
		Example: `  go run ./examples/gatewaymeter -manifest -open-schema v2 > job-v2.json
  stateproc migrate ./savepoints/sp-42 --job job-v2.json --out ./savepoints/sp-42-v2
  stateproc migrate ./savepoints/sp-42 --job job.json --now 2026-11-29T06:00:00Z --out ./sp-ttl
  stateproc migrate ./savepoints/sp-42 --schema assemble/open=open-v2.avsc --out ./sp-v2
  stateproc migrate ./savepoints/sp-42 --job job-v2.json --dry-run -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stderr = cmd.ErrOrStderr()
			return runMigrate(cmd.Context(), o, args, cmd.OutOrStdout())
		},
	}
	addRewriteFlags(cmd, &o.rewriteFlags)
	addCheckCopiesFlag(cmd, &o.rewriteFlags)
	addTargetFlags(cmd, &o.targetFlags)
	cmd.Flags().StringVar(&o.now, "now", "", "last-modified `time` of the values of states that gain TTL, RFC 3339 or epoch ms (no default)")
	return cmd
}

func runMigrate(ctx context.Context, o migrateOptions, args []string, out io.Writer) error {
	if err := o.targetFlags.check(); err != nil {
		return err
	}
	opts := evolve.MigrateOptions{Options: evolve.Options{AllowNonRestoredState: o.allowNonRestored}, HasNow: o.now != ""}
	if opts.HasNow {
		var err error
		if opts.Now, err = parseTime(o.now); err != nil {
			return err
		}
	}
	r, err := openRewriteInput(ctx, &o.rewriteFlags, args[0], o.out)
	if err != nil {
		return err
	}
	defer r.Close()
	defer o.opened.Close()
	t, err := o.target(r.Metadata())
	if err != nil {
		return err
	}
	bar := newByteProgress(ctx, o.stderr, "migrating")
	rep, err := evolve.Migrate(ctx, r, args[0], t, opts, bar.options(o.options()))
	bar.end(err)
	if rep != nil && errors.Is(err, compat.ErrIncompatible) {
		// The report says why; the refusal exits 3.
		if werr := writeMigrateReport(out, o, args[0], rep, true); werr != nil {
			return werr
		}
		return notRestorable(rep, args[0])
	}
	if err != nil {
		return rewriteError(err)
	}
	return writeMigrateReport(out, o, args[0], rep, false)
}

func writeMigrateReport(out io.Writer, o migrateOptions, input string, rep *evolve.Report, refused bool) error {
	if o.output == outputJSON {
		return writeJSON(out, struct {
			Savepoint string `json:"savepoint"`
			Out       string `json:"out,omitempty"`
			DryRun    bool   `json:"dry_run"`
			Refused   bool   `json:"refused"`
			*evolve.Report
		}{storage.Shown(input), storage.Shown(o.out), o.dryRun, refused, rep})
	}
	if refused {
		fmt.Fprintf(out, "Refused to migrate %s to %s: %s Nothing was written.\n", storage.Shown(input), rep.Target, summary(rep))
		return verdictTable(out, rep, false)
	}
	fmt.Fprintln(out, rewriteHeading(&o.rewriteFlags, "migrate", "Migrated", input))
	fmt.Fprintf(out, "Against %s: %s\n", rep.Target, summary(rep))
	if rep.Now != 0 {
		fmt.Fprintf(out, "TTL timestamps of states that gained TTL: %s\n", formatTime(int64(rep.Now)))
	}
	return verdictTable(out, rep, true)
}
