package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/rescale"
	"github.com/stateproc/stateproc/storage"
)

type rescaleOptions struct {
	rewriteFlags
	maxParallelism int
	parallelism    int
	operator       string
	spillDir       string
	stderr         io.Writer
}

func newRescaleCmd() *cobra.Command {
	var o rescaleOptions
	cmd := &cobra.Command{
		Use:   "rescale SAVEPOINT --max-parallelism N --out DST",
		Short: "Write a copy of a savepoint at another max parallelism",
		Long: `Rescale writes a new savepoint whose keyed operators have max parallelism N:
every keyed entry (values, list elements, map entries, timers) moves to the key
group its key bytes hash to under N, so that a job with max parallelism N can
restore it. --operator limits this to one operator. Each operator keeps its
parallelism unless --parallelism gives a new one; N must lie in 1..32768 and
be at least the parallelism. Operator list state is split anew when the
parallelism changes; broadcast state is carried over, as are non-keyed
operators. When N is an operator's current max parallelism, only the metadata
changes and its data is copied as opaque bytes.

Rescale streams: it partitions the entries into spill files beside --out (or
in --spill-dir) and sorts them a bounded chunk at a time, so memory stays
bounded (under 256 MiB) whatever the size of the savepoint; the spill files
need about the raw size of the largest re-bucketed operator's state in free
space, beside the output, and each operator's are removed once it is written. An N that divides the current max parallelism by up to 16, or is
twice it, needs no spill files: each new key group is written straight from
the old ones it takes, already in order. The new data files follow the engine's layout, one per subtask:
they are the files the engine writes at max parallelism N. The metadata
records in its lineage which savepoint it came from and what changed.

The input is never modified. The output is written to a temporary directory
beside --out, synced and renamed; an existing --out is refused (exit 2) unless
--force. --dry-run prints what would change from the index alone and writes
nothing.

An Apache Flink savepoint is written in Flink's canonical layout, with the
_metadata version of the input: every key moves to the key group of Flink's
hash of its decoded value. Only keys whose Java hashCode is defined by their
value are rescaled (strings, boxed primitives, Flink's tuples of them); any
other key class (a POJO, an enum, a Row, a Scala case class, Kryo) is refused
by name before anything is written (exit 2), since Flink loses a key placed in
the wrong key group.`,
		Example: `  stateproc rescale ./savepoints/sp-42 --max-parallelism 720 --out ./savepoints/sp-42-720
  stateproc rescale ./savepoints/sp-42 --max-parallelism 256 --parallelism 16 --out ./sp-256
  stateproc rescale ./savepoints/sp-42 --max-parallelism 512 --operator tenant-cost --out ./sp-512
  stateproc rescale ./savepoints/sp-42 --max-parallelism 720 --dry-run -o json
  stateproc rescale ./flink/savepoint-3b5f07-1 --max-parallelism 256 --out ./flink/savepoint-256`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stderr = cmd.ErrOrStderr()
			return runRescale(cmd.Context(), o, args, cmd.OutOrStdout())
		},
	}
	addRewriteFlags(cmd, &o.rewriteFlags)
	addCheckCopiesFlag(cmd, &o.rewriteFlags)
	cmd.Flags().IntVar(&o.maxParallelism, "max-parallelism", 0, "the new max parallelism `N`, 1..32768 (required)")
	cmd.Flags().IntVar(&o.parallelism, "parallelism", 0, "the new parallelism `P` of the rescaled operators (default: each keeps its own)")
	cmd.Flags().StringVar(&o.operator, "operator", "", "rescale only the operator with this `uid`")
	cmd.Flags().StringVar(&o.spillDir, "spill-dir", "", "`directory` for the temporary spill files (default: beside --out)")
	cmd.MarkFlagRequired("max-parallelism")
	return cmd
}

func runRescale(ctx context.Context, o rescaleOptions, args []string, out io.Writer) error {
	if o.parallelism < 0 {
		return usagef("--parallelism must be 1 or more, not %d", o.parallelism)
	}
	r, err := openRewriteInput(ctx, &o.rewriteFlags, args[0], o.out)
	if err != nil {
		return err
	}
	defer r.Close()
	defer o.opened.Close()
	if fr, ok := flinkReader(r); ok {
		return runFlinkRescale(ctx, o, fr, args[0], out)
	}
	// Rescale's live heap is mostly buffers it allocates once; on a small
	// savepoint the default collector would run again and again as they
	// are first allocated. Collecting less often, under a limit that keeps
	// a large rescale well below 256 MiB resident, is cheaper, unless the
	// user tuned the collector.
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(128 << 20))
	}
	opts := rescale.Options{MaxParallelism: o.maxParallelism, Parallelism: o.parallelism, Operator: o.operator, SpillDir: o.spillDir}
	bar := newByteProgress(ctx, o.stderr, "rescaling")
	rep, err := rescale.Run(ctx, r, args[0], opts, bar.options(o.options()))
	bar.end(err)
	if err != nil {
		return rewriteError(err)
	}
	if o.output == outputJSON {
		return writeJSON(out, struct {
			Savepoint string `json:"savepoint"`
			Out       string `json:"out,omitempty"`
			*rescale.Report
		}{storage.Shown(args[0]), storage.Shown(o.out), rep})
	}
	fmt.Fprintln(out, rewriteHeading(&o.rewriteFlags, "rescale", "Rescaled", args[0]))
	t := newTable(out, "OPERATOR", "ACTION", "MAX PARALLELISM", "PARALLELISM", "SEGMENTS", "ENTRIES", "BYTES")
	for _, op := range rep.Operators {
		action := string(op.Action)
		if !op.Keyed {
			action = "not keyed, carried over"
		}
		t.Append(op.UID, action, change(op.MaxParallelismBefore, op.MaxParallelism), change(op.ParallelismBefore, op.Parallelism),
			op.Segments, op.Entries, humanBytes(float64(op.Bytes)))
	}
	return t.Render()
}

// change renders a number that may change, as "128 -> 720" or "128".
func change(from, to int) string {
	if from == to {
		return fmt.Sprint(to)
	}
	return fmt.Sprintf("%d -> %d", from, to)
}
