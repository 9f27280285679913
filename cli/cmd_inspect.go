package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/inspect"
	"github.com/stateproc/stateproc/storage"
)

type inspectOptions struct {
	output string
	scan   bool
	top    int
	now    string
	stderr io.Writer
}

func newInspectCmd() *cobra.Command {
	var o inspectOptions
	cmd := &cobra.Command{
		Use:   "inspect SAVEPOINT",
		Short: "Show the operators, states, timers and sizes of a savepoint",
		Long: `Inspect shows what a savepoint holds: its operators; every keyed state
with its serializers, TTL, keys, entries, bytes and key-group skew; timers per
timer service; operator and broadcast state.

By default it answers from the savepoint's index alone and reads no data:
for a savepoint of format version 2 that includes value-size percentiles and
TTL ages with the count past the TTL at --now, from the index's histograms
(a range where a bucket straddles a cut; the count past the TTL at the
creation time is exact). For a bucket-resident savepoint it says how many
bytes it read. --scan reads every entry's framing (values are not decoded) on every core,
checks the index against the data (a mismatch is corruption, exit 4), and adds
value-size percentiles, the age of TTL entries at --now with the count already
past their TTL, and the most timers any key has. --top N also lists the N
heaviest keys by entries and by bytes; it implies --scan.

Keys counts distinct keys; entries counts values, list elements, map entries
or timers. Bytes are uncompressed, with framing. Skew is the largest key
group's entries against the mean over all key groups of the max parallelism.`,
		Example: `  stateproc inspect ./savepoints/sp-42
  stateproc inspect --scan --top 10 ./savepoints/sp-42
  stateproc inspect --scan --now 2026-11-29T06:00:00Z ./savepoints/sp-42
  stateproc inspect -o json ./savepoints/sp-42 | jq '.states[] | {name, entries}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stderr = cmd.ErrOrStderr()
			return runInspect(cmd.Context(), o, args, cmd.OutOrStdout())
		},
	}
	addOutputFlag(cmd, &o.output)
	cmd.Flags().BoolVar(&o.scan, "scan", false, "read every entry (on every core) for value sizes, TTL ages and timers per key")
	cmd.Flags().IntVar(&o.top, "top", 0, "list the `N` heaviest keys by entries and by bytes (implies --scan)")
	cmd.Flags().StringVar(&o.now, "now", "", "`time` for TTL ages, RFC 3339 or epoch ms (default: the savepoint's creation time)")
	return cmd
}

func runInspect(ctx context.Context, o inspectOptions, args []string, out io.Writer) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if o.top < 0 {
		return usagef("--top must be 0 or more, not %d", o.top)
	}
	src, err := openSavepoint(ctx, args[0])
	if err != nil {
		return err
	}
	defer src.Close()
	now := src.Metadata().CreatedAt
	if o.now != "" {
		if now, err = parseTime(o.now); err != nil {
			return err
		}
	}
	bar := newByteProgress(ctx, o.stderr, "scanning")
	rep, err := inspect.Inspect(ctx, src, inspect.Options{Now: now, Scan: o.scan, Top: o.top, Progress: bar.report(), Workers: readWorkers(args[0])})
	bar.end(err)
	if err != nil {
		return err
	}
	rep.Savepoint.Path = storage.Shown(args[0])
	if c := transfersOf(ctx); c != nil && c.BytesRead.Load() > 0 {
		n := c.BytesRead.Load()
		rep.BytesRead = &n
	}
	printWarnings(o.stderr, rep.Warnings)
	if o.output == outputJSON {
		return writeJSON(out, rep)
	}
	return writeInspectTables(out, rep)
}
