package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/report"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/sizing"
	"github.com/stateproc/stateproc/storage"
)

type reportOptions struct {
	output string
	out    string
	force  bool
	now    string
	top    int
	// size holds the flags the sizing section shares with size.
	size sizeOptions
}

func newReportCmd() *cobra.Command {
	var o reportOptions
	cmd := &cobra.Command{
		Use:   "report SAVEPOINT... --out FILE",
		Short: "Write an HTML report with charts of one or several savepoints",
		Long: `Report writes one self-contained HTML file: no script, nothing loaded from
the network, charts as SVG drawn by stateproc. For the newest savepoint it
shows, per operator and state, keys, entries, bytes and bytes per entry; the
bytes of every key group with the subtask boundaries at the savepoint's
parallelism marked; a histogram of value sizes; the ages of TTL entries with
the share past their TTL; timers per key; the heaviest keys (--top); and the
heap against Pebble with size's recommendation (the --memory-per-slot,
--full-checkpoint-limit, --gogc, --change-rate and --sample flags are size's).

Given several savepoints of one job (sorted by their creation time; those
created at one time keep the order given), it adds the growth of every state,
and flags the states that grow without bound. The savepoints are taken as
spaced evenly, as periodic savepoints are: over at least three, entries or
bytes must rise by a quarter of the last value or more, steadily (in the
savepoints' order, by rank correlation of at least 0.9), and in the later half
of the savepoints at least half as fast as in the earlier half.

The figures are inspect's (inspect --scan -o json gives the same numbers).
The file is written beside --out and renamed into place; an existing one is
replaced only with --force. -o json prints a summary of what was written.`,
		Example: `  stateproc report ./savepoints/sp-42 --out report.html
  stateproc report ./sp-40 ./sp-41 ./sp-42 --out growth.html --top 20
  stateproc report ./sp-42 --out report.html --force --memory-per-slot 8GB -o json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd.Context(), o, args, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	addOutputFlag(cmd, &o.output)
	f.StringVar(&o.out, "out", "", "the HTML `file` to write")
	f.BoolVar(&o.force, "force", false, "replace --out if it exists")
	f.StringVar(&o.now, "now", "", "`time` for TTL ages, RFC 3339 or epoch ms (default: each savepoint's creation time)")
	f.IntVar(&o.top, "top", 10, "list the `N` heaviest keys by entries and by bytes")
	f.Float64Var(&o.size.changeRate, "change-rate", 0.01, "`fraction` of entries written per checkpoint interval, for incremental checkpoints")
	f.StringVar(&o.size.memoryPerSlot, "memory-per-slot", "4GB", "heap budget of a task slot, a `size` such as 512MB, 8GB or 6GiB")
	f.StringVar(&o.size.fullLimit, "full-checkpoint-limit", "1GB", "the most a slot's full checkpoint should write (a `size`)")
	f.IntVar(&o.size.gogc, "gogc", 100, "Go collector setting: the heap grows to live × (1 + GOGC/100)")
	f.StringVar(&o.size.sample, "sample", "64MB", "savepoint bytes sizing reads per state (a `size`); 0 reads everything")
	cmd.MarkFlagRequired("out")
	return cmd
}

func runReport(ctx context.Context, o reportOptions, args []string, out io.Writer) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if o.top < 1 {
		return usagef("--top must be 1 or more, not %d", o.top)
	}
	sizeOpts, err := o.size.projection()
	if err != nil {
		return err
	}
	sample, err := parseSize("--sample", o.size.sample)
	if err != nil {
		return err
	}
	opts := report.Options{Top: o.top, SampleBytes: int64(sample), Sizing: sizeOpts}
	if o.now != "" {
		if opts.Now, err = parseTime(o.now); err != nil {
			return err
		}
		opts.HasNow = true
	}
	if err := checkReportTarget(o.out, o.force, args); err != nil {
		return err
	}
	srcs, err := openSavepoints(ctx, args)
	if err != nil {
		return err
	}
	var inputs []report.Input
	for i, src := range srcs {
		defer src.Close()
		inputs = append(inputs, report.Input{Path: storage.Shown(args[i]), Source: src})
	}
	rep, err := report.Build(ctx, inputs, opts)
	if errors.Is(err, sizing.ErrOption) || errors.Is(err, report.ErrNotOneJob) {
		return &UsageError{Err: err}
	} else if err != nil {
		return err
	}
	size, charts, err := writeReportFile(o.out, rep)
	if err != nil {
		return err
	}
	sum := rep.Summarize(o.out, size, charts)
	if o.output == outputJSON {
		return writeJSON(out, sum)
	}
	fmt.Fprintf(out, "Wrote %s: %d savepoints, %d charts, %s.\n", o.out, len(sum.Savepoints), charts, humanBytes(float64(size)))
	for _, g := range sum.Growth {
		if g.Unbounded {
			fmt.Fprintf(out, "  %s/%s grows without bound (%v)\n", g.Operator, g.State, g.Growing)
		}
	}
	if sum.Recommendation != "" {
		fmt.Fprintf(out, "  size recommends %s\n", sum.Recommendation)
	}
	return nil
}

// checkReportTarget refuses an --out that exists, unless forced, or that is
// not a file, before anything is read.
func checkReportTarget(path string, force bool, inputs []string) error {
	if path == "" {
		return usagef("--out is required")
	}
	if loc, err := storage.ParseLocation(path); err == nil && loc.IsBucket() {
		return usagef("--out %s: report writes a local file; copy it into the bucket afterwards", loc)
	}
	// A page written into a savepoint's directory would change the
	// savepoint, which no command that reads it does.
	out, err := rewrite.Resolve(path)
	if err != nil {
		return err
	}
	for _, in := range inputs {
		loc, err := storage.ParseLocation(in)
		if err != nil || loc.IsBucket() {
			continue
		}
		dir, err := rewrite.Resolve(rewrite.SavepointPath(loc.Path))
		if err != nil {
			continue
		}
		if out == dir || rewrite.Within(out, dir) {
			return usagef("--out %s lies inside the savepoint %s, which report never modifies", path, in)
		}
	}
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case !st.Mode().IsRegular():
		return usagef("--out %s exists and is not a regular file", path)
	case !force:
		return fmt.Errorf("%w: %s (use --force to replace it)", storage.ErrExists, path)
	}
	if d, err := os.Stat(filepath.Dir(path)); err != nil || !d.IsDir() {
		return usagef("--out %s: its directory does not exist", path)
	}
	return nil
}

// writeReportFile writes the page beside path, syncs it and renames it into
// place, so that path holds a whole page or what it held before.
func writeReportFile(path string, rep *report.Report) (int64, int, error) {
	f, err := storage.CreateTemp(filepath.Dir(path), storage.TempPrefix+"report-")
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(f.Name())
	w := bufio.NewWriterSize(f, 1<<16)
	charts, err := report.Write(w, rep)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	st, serr := f.Stat()
	if cerr := f.Close(); err == nil {
		err = errors.Join(serr, cerr)
	}
	if err != nil {
		return 0, 0, err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return 0, 0, err
	}
	return st.Size(), charts, nil
}
