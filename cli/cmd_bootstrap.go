package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/bootstrap"
	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

type bootstrapOptions struct {
	rewriteFlags
	job         string
	from        string
	now         string
	id          uint64
	compression string
	spillDir    string
	maxBadRows  int
	stderr      io.Writer
}

func newBootstrapCmd() *cobra.Command {
	var o bootstrapOptions
	cmd := &cobra.Command{
		Use:   "bootstrap --job job.json --from DIR --out DST",
		Short: "Make a savepoint of a job from datasets (Parquet, Arrow or JSON lines), as export writes them",
		Long: `Bootstrap writes a new savepoint of the job described by --job (the manifest a
built job prints with -manifest) from the datasets under --from, in the layout
stateproc export writes: one directory per state, DIR/<operator uid>/<state>/,
of Parquet, Arrow IPC or JSON lines files (by extension: .parquet, .arrow,
.jsonl). The job restores it: its operators, at the job's parallelism and max
parallelism, its serializers, TTL and timer services. A state without a
directory starts empty; a directory that names no state of the job is refused.

The columns are those export names:

  keyed state      key, namespace (window_start and window_end for windows;
                   none when void), map_key (map states), index (list states,
                   optional: the order of the elements), value,
                   ttl_last_modified (TTL states, optional)
  timer service    key, namespace, timestamp
  operator state   subtask (optional), index (optional), value
  broadcast state  key, value

key_group and expired are left out, or ignored: key groups are computed from
the keys at the job's max parallelism (so an export loaded into a job of
another max parallelism is rescaled) and TTL entries without a
ttl_last_modified are stamped with --now. A column may have another type than
export writes if it holds the values exactly: any integer width, timestamps of
any unit, a dictionary for a string or an enum, a decimal of another scale.
Parquet files from DuckDB, Spark or pyarrow load as export's do.

Nothing is written unless every row is good. A key or value that does not fit
its serializer, and an entry given twice (a second value for a key of a value
state, a repeated map key, list index, timer or broadcast key), are reported
with the file, the row (from 1; a JSON line's number) and the column, up to
--max-bad-rows of them, and the command exits 4.

Keyed entries are spilled beside --out (or in --spill-dir) into buckets of key
groups, each sorted within a memory budget, so memory follows the largest key
group, not the data;
the spill files take about twice the raw size of the keyed state (1.0 GB for
the 504 MB of 19.7 million map entries) and are removed as each bucket is
written.
The data files follow the engine's layout, one per subtask. The output is
written to a temporary directory beside --out, synced and renamed; an existing
--out is refused (exit 2) unless --force. --dry-run reads and checks every row,
duplicates included, and writes nothing.`,
		Example: `  stateproc export ./sp-42 --out ./sp-42-parquet
  stateproc bootstrap --job job.json --from ./sp-42-parquet --out ./sp-42-fixed --now 2026-11-29T06:00:00Z
  go run ./examples/gatewaymeter -manifest > job.json
  stateproc bootstrap --job job.json --from ./dump --out ./sp-new --dry-run -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.stderr = cmd.ErrOrStderr()
			return runBootstrap(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	addRewriteFlags(cmd, &o.rewriteFlags)
	f := cmd.Flags()
	f.StringVar(&o.job, "job", "", "the job's manifest: the `job.json` a built job prints with -manifest (required)")
	f.StringVar(&o.from, "from", "", "the `directory` of datasets, <operator uid>/<state>/part-* (required)")
	f.StringVar(&o.now, "now", "", "the savepoint's creation `time`, which stamps TTL entries that have no ttl_last_modified: RFC 3339 or epoch ms (default: now)")
	f.Uint64Var(&o.id, "id", 1, "the savepoint's `id`")
	f.StringVar(&o.compression, "compression", "none", "block compression of the savepoint: none or zstd")
	f.StringVar(&o.spillDir, "spill-dir", "", "`directory` for the temporary spill files (default: beside --out)")
	f.IntVar(&o.maxBadRows, "max-bad-rows", bootstrap.DefaultMaxBadRows, "report at most `N` bad rows")
	cmd.MarkFlagRequired("job")
	cmd.MarkFlagRequired("from")
	return cmd
}

func runBootstrap(ctx context.Context, o bootstrapOptions, out io.Writer) error {
	if err := o.rewriteFlags.check(); err != nil {
		return err
	}
	switch {
	case o.compression != "none" && o.compression != "zstd":
		return usagef("--compression must be none or zstd, not %q", o.compression)
	case o.maxBadRows < 1:
		return usagef("--max-bad-rows must be 1 or more, not %d", o.maxBadRows)
	case o.id == 0:
		return usagef("--id must be 1 or more")
	}
	now := time.Now().UnixMilli()
	if o.now != "" {
		var err error
		if now, err = parseTime(o.now); err != nil {
			return err
		}
	}
	manifest, err := readManifest(o.job)
	if err != nil {
		return err
	}
	loc, err := storage.ParseLocation(o.from)
	if err != nil {
		return usagef("--from: %v", err)
	}
	if !loc.IsBucket() {
		if st, err := os.Stat(loc.Path); err != nil || !st.IsDir() {
			return usagef("--from %s is not a directory of datasets", o.from)
		}
	}
	dir, err := storage.OpenDir(ctx, o.from, storage.Options{})
	if err != nil {
		return err
	}
	defer dir.Close()
	opts := bootstrap.Options{
		Out: o.out, Force: o.force, DryRun: o.dryRun, Now: now, ID: o.id, SpillDir: o.spillDir,
		Compress: o.compression == "zstd", MaxBadRows: o.maxBadRows,
		Lineage: fmt.Sprintf("bootstrap of job %q from datasets %q", manifest.Job, storage.Shown(o.from)),
	}
	if !loc.IsBucket() {
		opts.Input = loc.Path
	}
	bar := newByteProgress(ctx, o.stderr, "bootstrapping")
	opts.Progress = bar.report()
	sum, err := bootstrapFrom(ctx, manifest, dir, opts)
	bar.end(err)
	if err != nil {
		return rewriteError(err)
	}
	return printBootstrap(out, o, manifest.Job, sum)
}

func bootstrapFrom(ctx context.Context, manifest savepoint.Manifest, dir storage.Dir, opts bootstrap.Options) (*bootstrap.Summary, error) {
	b, err := bootstrap.New(manifest, opts)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if err := b.Load(ctx, dir); err != nil {
		return nil, err
	}
	return b.Commit(ctx)
}

// readManifest reads --job. An unreadable one is a usage error: it is the
// command's argument, not its input.
func readManifest(path string) (savepoint.Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return savepoint.Manifest{}, usagef("--job: %v", err)
	}
	defer f.Close()
	m, err := savepoint.ReadManifest(f)
	if err != nil {
		return m, usagef("--job %s: %v", path, err)
	}
	return m, nil
}

// bootstrapReport is what bootstrap prints with --output json.
type bootstrapReport struct {
	Job         string              `json:"job"`
	From        string              `json:"from"`
	Out         string              `json:"out,omitempty"`
	DryRun      bool                `json:"dry_run"`
	SavepointID uint64              `json:"savepoint_id"`
	Created     jsonvalue.Instant   `json:"created"`
	Rows        int64               `json:"rows"`
	SpillBytes  int64               `json:"spill_bytes"`
	Spilled     int                 `json:"spilled_runs"`
	States      []bootstrapStateRow `json:"states"`
}

type bootstrapStateRow struct {
	Operator string `json:"operator"`
	State    string `json:"state"`
	Kind     string `json:"kind"`
	Dir      string `json:"dir"`
	Files    int64  `json:"files"`
	Rows     int64  `json:"rows"`
}

func printBootstrap(out io.Writer, o bootstrapOptions, job string, s *bootstrap.Summary) error {
	rep := bootstrapReport{Job: job, From: storage.Shown(o.from), Out: storage.Shown(o.out), DryRun: s.DryRun, SavepointID: s.ID, Created: jsonvalue.Instant(s.CreatedAt),
		Rows: s.Rows, SpillBytes: s.SpillBytes, Spilled: s.Spilled, States: []bootstrapStateRow{}}
	for _, st := range s.States {
		rep.States = append(rep.States, bootstrapStateRow{Operator: st.Operator, State: st.State, Kind: st.Kind,
			Dir: export.DatasetDir(st.Operator, st.State), Files: st.Files, Rows: st.Rows})
	}
	if o.output == outputJSON {
		return writeJSON(out, rep)
	}
	if o.dryRun {
		fmt.Fprintf(out, "Dry run of bootstrap of job %q from %s: %d rows are good; nothing was written.\n", job, storage.Shown(o.from), s.Rows)
	} else {
		fmt.Fprintf(out, "Bootstrapped job %q from %s into %s: %d rows, savepoint %d created %s.\n", job, storage.Shown(o.from), storage.Shown(o.out), s.Rows, s.ID, formatTime(s.CreatedAt))
	}
	t := newTable(out, "OPERATOR", "STATE", "KIND", "DATASET", "FILES", "ROWS")
	for _, st := range rep.States {
		t.Append(st.Operator, st.State, st.Kind, st.Dir, st.Files, st.Rows)
	}
	return t.Render()
}
