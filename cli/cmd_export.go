package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/shard"
	"github.com/stateproc/stateproc/storage"
)

type exportOptions struct {
	out          string
	force        bool
	format       string
	compression  string
	operator     string
	state        string
	keyGroups    string
	now          string
	maxRows      int64
	rowGroupRows int
	output       string
	shard        shardFlag
}

func newExportCmd() *cobra.Command {
	var o exportOptions
	cmd := &cobra.Command{
		Use:   "export SAVEPOINT --out DIR",
		Short: "Write the state of a savepoint as Parquet (or Arrow, or JSON lines) datasets",
		Long: `Export writes one dataset per state: DIR/<operator uid>/<state name>/part-*.parquet,
for keyed states, timer services, operator states and broadcast states alike, so
that DuckDB, Spark or pyarrow read a state with one glob:

  SELECT * FROM read_parquet('DIR/session-features/category-counts/*.parquet')

Columns are typed from the serializer snapshots in the savepoint, without the
job's code:

  keyed state      key_group, key, namespace (window_start and window_end for
                   windows; none when void), map_key (map states), index (list
                   states), value, ttl_last_modified (TTL states) and, with
                   --now, expired (by the TTL rule at that time)
  timer service    key_group, key, namespace, timestamp
  operator state   subtask, index, value
  broadcast state  key, value

An Avro record becomes a struct, an array a list, a map a map, a union with
null a nullable column and any other union a struct of nullable branches, an
enum a dictionary-encoded string, timestamp-millis a timestamp and a decimal a
decimal. Columns are zstd-compressed but for timestamps, whose bit-packed
deltas zstd does not shrink; a state is split into files of at most
--max-rows-per-file rows that are written on every core at once. Every file
records the savepoint id, the operator, the state and its serializer snapshots
as key-value metadata.

The export is written to a temporary directory beside DIR and renamed when it
is complete: DIR holds a whole export or nothing. DIR must not exist or be
empty, unless --force replaces it. DIR may be a bucket URL (s3://, gs://,
azblob://), where nothing can be renamed: the parts are written in place, named
after their bytes (part-00000-<16 hex digits>.parquet), and DIR/_SUCCESS last,
create-only, listing them: the export is complete exactly when _SUCCESS exists,
and --force replaces a finished one. A type with no Arrow mapping fails the
export before anything is written; leave its state out with --operator and
--state. --key-groups exports part of the keyed state and leaves out operator
and broadcast state, which belong to no key group.

--shard I/N exports shard I (from 0) of N only: a run of key groups of about
equal bytes (shard 0 also takes operator and broadcast state), into a part
beside DIR named DIR.shard-0000I-of-0000N (in a bucket, an export of its own,
finished by its _SUCCESS); once every shard is done,
"stateproc commit --export --out DIR --shards N" puts the parts together into
DIR, each dataset's files numbered in shard order.`,
		Example: `  stateproc export ./sp-42 --out ./sp-42-parquet
  stateproc export ./sp-42 --out ./sp-42-parquet --shard 0/4   # then: stateproc commit --export --out ./sp-42-parquet --shards 4
  stateproc export ./sp-42 --out ./features --operator session-features --state category-counts
  stateproc export ./sp-42 --out ./sp-42-parquet --now 2026-01-07T00:00:00Z --force
  stateproc export ./sp-42 --out ./sp-42-json --format jsonl --key-groups 0-15
  stateproc export 's3://prod-state/savepoints/sp-42' --out 's3://prod-state/exports/sp-42'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExport(cmd.Context(), o, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "`directory` to write the datasets into")
	f.BoolVar(&o.force, "force", false, "replace --out if it exists")
	f.StringVar(&o.format, "format", string(export.Parquet), "file format: parquet, arrow (IPC files) or jsonl")
	f.StringVar(&o.compression, "compression", string(export.Zstd), "compression of parquet and arrow files: zstd or none")
	f.StringVar(&o.operator, "operator", "", "export only this operator: its `uid`, ID or name")
	f.StringVar(&o.state, "state", "", "export only the state with this `name` (needs --operator)")
	f.StringVar(&o.keyGroups, "key-groups", "", "export only key groups `A-B` (or one key group A) of keyed state")
	f.StringVar(&o.now, "now", "", "add the expired column to TTL states, at this `time` (RFC 3339 or epoch ms)")
	f.Int64Var(&o.maxRows, "max-rows-per-file", export.DefaultMaxRowsPerFile, "split states into files of at most `N` rows (0: one file per state)")
	f.IntVar(&o.rowGroupRows, "row-group-rows", export.DefaultRowGroupRows, "`N` rows per Parquet row group or Arrow record batch")
	addShardFlag(cmd, &o.shard, "writes a part for stateproc commit")
	addOutputFlag(cmd, &o.output)
	cmd.MarkFlagRequired("out")
	return cmd
}

func runExport(ctx context.Context, o exportOptions, args []string, out, stderr io.Writer) error {
	opts, err := o.check()
	if err != nil {
		return err
	}
	src, err := openSavepoint(ctx, args[0])
	if err != nil {
		return err
	}
	defer src.Close()
	m := src.Metadata()
	if err := o.resolve(m, &opts); err != nil {
		return err
	}
	loc, err := storage.ParseLocation(o.out)
	if err != nil {
		return usagef("--out: %v", err)
	}
	target := o.out
	var part *shard.PartOf
	if o.shard.set() {
		if target, err = o.cutShard(ctx, src, &opts); err != nil {
			return err
		}
		sp, _ := o.shard.spec()
		p := shard.ExportPartOf(m, opts, sp)
		part, opts.Part = &p, p.JSON()
	}
	var staging storage.Staging
	if loc.IsBucket() {
		// The bucket target refuses a finished export without --force.
		if err := rewrite.CheckTarget(args[0], o.out, true); err != nil {
			return rewriteError(err)
		}
		t, err := storage.OpenTarget(ctx, target, storage.TargetOptions{Force: o.force, Marker: export.Marker})
		if err != nil {
			return err
		}
		defer t.Close()
		staging = t
	} else {
		// An empty directory holds nothing to lose: it is replaced as if
		// with --force.
		if staging, err = export.Stage(args[0], target, o.force || isEmptyDir(target)); err != nil {
			return rewriteError(err)
		}
	}
	bar := newRowProgress(stderr)
	if bar != nil {
		opts.Progress = bar.update
	}
	// Each core holds a row group of builders and a block being read,
	// about 45 MiB live; the default collector lets the heap grow to twice
	// that, which on two cores passed 256 MiB resident. Collecting under a
	// limit costs a few per cent more CPU, unless the user tuned the
	// collector.
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(144 << 20))
	}
	summary, err := export.Run(ctx, src, staging, opts)
	bar.done(err)
	if err != nil {
		staging.Abort()
		switch {
		case errors.Is(err, serializers.ErrDecode):
			return &badValue{msg: "a stored value does not decode", err: err}
		case errors.Is(err, export.ErrUnmappable):
			return fmt.Errorf("%w; export the other states with --operator and --state", err)
		}
		return err
	}
	if part != nil {
		if err := shard.RecordPart(ctx, staging, target, *part); err != nil {
			staging.Abort()
			return err
		}
	}
	if err := staging.Publish(ctx); err != nil {
		staging.Abort()
		return err
	}
	return printExport(out, o, summary)
}

// check reads the flags that need no savepoint.
func (o exportOptions) check() (export.Options, error) {
	opts := export.Options{
		Format:         export.Format(o.format),
		Compression:    export.Compression(o.compression),
		Operator:       o.operator,
		State:          o.state,
		MaxRowsPerFile: o.maxRows,
		RowGroupRows:   o.rowGroupRows,
	}
	if err := checkOutput(o.output); err != nil {
		return opts, err
	}
	switch {
	case o.out == "":
		return opts, usagef("--out is required")
	case opts.Format != export.Parquet && opts.Format != export.Arrow && opts.Format != export.JSONL:
		return opts, usagef("--format must be parquet, arrow or jsonl, not %q", o.format)
	case opts.Compression != export.Zstd && opts.Compression != export.Uncompressed:
		return opts, usagef("--compression must be zstd or none, not %q", o.compression)
	case o.state != "" && o.operator == "":
		return opts, usagef("--state needs --operator: state names are per operator")
	case o.maxRows < 0:
		return opts, usagef("--max-rows-per-file must be 0 or more, not %d", o.maxRows)
	case o.rowGroupRows < 1:
		return opts, usagef("--row-group-rows must be 1 or more, not %d", o.rowGroupRows)
	}
	if o.maxRows == 0 {
		opts.MaxRowsPerFile = -1
	}
	if o.now != "" {
		now, err := parseTime(o.now)
		if err != nil {
			return opts, err
		}
		opts.Now = &now
	}
	return opts, nil
}

// resolve checks --operator, --state and --key-groups against the
// savepoint, with the same messages as dump.
func (o exportOptions) resolve(m *savepoint.Metadata, opts *export.Options) error {
	maxP := 0
	for i := range m.Operators {
		if m.Operators[i].Keyed() {
			maxP = max(maxP, m.Operators[i].MaxParallelism)
		}
	}
	if o.operator != "" {
		i, err := findOperator(m, o.operator)
		if err != nil {
			return err
		}
		op := &m.Operators[i]
		opts.Operator = op.UID
		maxP = op.MaxParallelism
		if o.state != "" {
			ref, err := findState(m, i, o.state)
			if err != nil {
				return err
			}
			if o.keyGroups != "" && ref.Keyed == nil && ref.Timers == nil {
				return usagef("--key-groups applies to keyed state; %q is operator or broadcast state", o.state)
			}
		}
	}
	if o.keyGroups == "" {
		return nil
	}
	if maxP == 0 {
		return usagef("--key-groups: the savepoint has no keyed operator")
	}
	kgs, err := parseKeyGroups(o.keyGroups, maxP)
	if err != nil {
		return err
	}
	opts.KeyGroups = &kgs
	return nil
}

// cutShard narrows opts to the shard --shard names and returns where its
// part goes.
func (o exportOptions) cutShard(ctx context.Context, src savepoint.Source, opts *export.Options) (string, error) {
	sp, err := o.shard.spec()
	if err != nil {
		return "", err
	}
	if opts.KeyGroups != nil {
		return "", usagef("--shard cuts the key groups itself: give --key-groups or --shard, not both")
	}
	if err := shard.NarrowExport(ctx, src, sp, opts); err != nil {
		return "", err
	}
	return sp.Part(o.out), nil
}

// badValue is a stored value its serializer cannot decode: the framing is
// sound but the bytes are not what the snapshot says. It counts as
// corruption of the input.
type badValue struct {
	msg string
	err error
}

func (e *badValue) Error() string   { return e.msg + ": " + e.err.Error() }
func (e *badValue) Unwrap() []error { return []error{savepoint.ErrCorrupt, e.err} }

// isEmptyDir reports whether path is an existing, empty directory.
// Anything else that exists there, a file included, Stage refuses
// without --force.
func isEmptyDir(path string) bool {
	entries, err := os.ReadDir(path)
	return err == nil && len(entries) == 0
}

// rowProgress draws a progress bar of rows on stderr when it is a
// terminal. The export learns the total once it has planned its files, so
// the bar is made at the first update.
type rowProgress struct {
	stderr io.Writer
	once   sync.Once
	bar    *progressbar.ProgressBar
}

func newRowProgress(stderr io.Writer) *rowProgress {
	if !stderrIsTerminal(stderr) {
		return nil
	}
	return &rowProgress{stderr: stderr}
}

func (p *rowProgress) update(written, total int64) {
	p.once.Do(func() {
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(p.stderr),
			progressbar.OptionSetDescription("export"),
			progressbar.OptionShowCount(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish())
	})
	p.bar.Set64(written)
}

func (p *rowProgress) done(err error) {
	if p == nil || p.bar == nil {
		return
	}
	endProgress(p.bar, err)
}

// exportReport is what export prints with --output json.
type exportReport struct {
	Out    string `json:"out"`
	Format string `json:"format"`
	*export.Summary
}

func printExport(out io.Writer, o exportOptions, s *export.Summary) error {
	if o.output == outputJSON {
		return writeJSON(out, exportReport{Out: storage.Shown(o.out), Format: o.format, Summary: s})
	}
	t := newTable(out, "DATASET", "KIND", "ROWS", "FILES", "SIZE")
	for _, d := range s.Datasets {
		t.Append(d.Dir, d.Kind, fmt.Sprint(d.Rows), fmt.Sprint(d.Files), humanBytes(float64(d.Bytes)))
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "%d rows in %d files (%s) under %s\n", s.Rows, s.Files, humanBytes(float64(s.Bytes)), storage.Shown(o.out))
	return err
}
