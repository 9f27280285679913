package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/inspect"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

type verifyOptions struct {
	output  string
	deep    bool
	shard   shardFlag
	orphans orphanOptions
	stderr  io.Writer
}

func newVerifyCmd() *cobra.Command {
	var o verifyOptions
	cmd := &cobra.Command{
		Use:   "verify SAVEPOINT",
		Short: "Check every checksum and structural rule of a savepoint",
		Long: `Verify reads the whole savepoint on every core and checks every checksum and
every rule of the format: the metadata, the data files' sizes and preambles,
every block's CRC, the order of records, that every key lies in its key group,
and the index's counts against the data. --deep also decodes every key,
namespace, map key and value, and every operator and broadcast state element,
with the serializers restored from the savepoint.

It exits 0 with a short summary when the savepoint is whole, and 4 with the
file, key group and offset of the first corruption it meets.

In a bucket, it also lists the orphans: files under the savepoint's prefix
that its _metadata does not name, left by a run that died before it
published or lost a race to another writer (a local target has none: runs
stage theirs beside it). --remove-orphans deletes those last modified more
than --orphan-age ago, sparing a run still writing there, and against the
_metadata there when it removes them, read again in case the savepoint was
replaced meanwhile. Under a prefix with no _metadata at all, every file is
an orphan; a _metadata that does not read, or an export's _SUCCESS, makes it
remove nothing (exit 4).

--shard I/N reads shard I (from 0) of N only, cut from the index at segment
boundaries to about equal bytes: N such runs read every segment once, and
their figures add up to a single run's. Orphans are listed by shard 0 only.`,
		Example: `  stateproc verify ./savepoints/sp-42
  stateproc verify --deep ./savepoints/sp-42
  stateproc verify -o json ./savepoints/sp-42
  stateproc verify --shard 3/8 ./savepoints/sp-42
  stateproc verify --remove-orphans 's3://prod-state/savepoints/sp-42'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stderr = cmd.ErrOrStderr()
			return runVerify(cmd.Context(), o, args, cmd.OutOrStdout())
		},
	}
	addOutputFlag(cmd, &o.output)
	cmd.Flags().BoolVar(&o.deep, "deep", false, "also decode every key, namespace, map key and value")
	addShardFlag(cmd, &o.shard, "")
	cmd.Flags().BoolVar(&o.orphans.remove, "remove-orphans", false, "in a bucket, delete the files that no _metadata names")
	cmd.Flags().StringVar(&o.orphans.minAge, "orphan-age", "1h", "remove only orphans older than this `duration`")
	return cmd
}

// verifySummary is what verify prints when the savepoint is whole.
type verifySummary struct {
	Path string `json:"path"`
	OK   bool   `json:"ok"`
	*inspect.Verified
	// Orphans are listed for a savepoint in a bucket that has some.
	Orphans []orphan `json:"orphans,omitempty"`
}

func runVerify(ctx context.Context, o verifyOptions, args []string, out io.Writer) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	sp, err := o.shard.spec()
	if err != nil {
		return err
	}
	// Opening checks the metadata, and for stateproc's layout the data
	// files' sizes and preambles.
	src, err := openSavepoint(ctx, args[0])
	if err != nil {
		if o.orphans.remove && errors.Is(err, savepoint.ErrNotSavepoint) {
			return removeOrphansOnly(ctx, args[0], err, o, out)
		}
		return notSavepointOrphans(ctx, args[0], err, o.orphans)
	}
	defer src.Close()
	bar := newByteProgress(ctx, o.stderr, "verifying")
	v, err := inspect.Verify(ctx, src, inspect.VerifyOptions{Deep: o.deep, Progress: bar.report(), Shard: sp, Workers: readWorkers(args[0])})
	bar.end(err)
	if err != nil {
		return err
	}
	printWarnings(o.stderr, v.Warnings)
	sum := verifySummary{Path: storage.Shown(args[0]), OK: true, Verified: v}
	if sp.Index == 0 {
		if sum.Orphans, err = findOrphans(ctx, args[0], src, o.orphans); err != nil {
			return err
		}
	}
	if o.output == outputJSON {
		return writeJSON(out, sum)
	}
	checks := src.Layout().Checks
	if checks == "" {
		checks = "checksums, structure, index"
	}
	if o.deep {
		checks += ", every value decoded"
	}
	fmt.Fprintf(out, "Savepoint %s is whole.\n", sum.Path)
	for _, op := range v.Opaque {
		fmt.Fprintf(out, "%d values of class %s are opaque bytes: only the job's classes decode them.\n", op.Values, op.Class)
	}
	if n := len(v.Warnings); n > 0 {
		fmt.Fprintf(out, "%d parts are opaque bytes that only the job's classes walk; the rest of their key groups was not read.\n", n)
	}
	t := newTable(out, "OPERATORS", "SEGMENTS", "ENTRIES", "BYTES", "CHECKED")
	t.Append(v.Operators, v.Segments, v.Entries, humanBytes(float64(v.Bytes)), checks)
	if err := t.Render(); err != nil {
		return err
	}
	if len(sum.Orphans) > 0 {
		fmt.Fprintf(out, "%s:\n", orphanSummary(sum.Orphans, o.orphans))
		for _, ob := range sum.Orphans {
			fmt.Fprintf(out, "  %s  %s  %s%s\n", ob.Name, humanBytes(float64(ob.Bytes)), time.UnixMilli(int64(ob.Modified)).UTC().Format(time.RFC3339), removedMark(ob))
		}
	}
	return nil
}

func removedMark(ob orphan) string {
	if ob.Removed {
		return "  removed"
	}
	return ""
}

// removeOrphansOnly serves --remove-orphans at a bucket prefix that holds
// no savepoint: the files there are what dead runs left, and removing them
// is all there is to do.
func removeOrphansOnly(ctx context.Context, location string, notSavepoint error, o verifyOptions, out io.Writer) error {
	found, err := findOrphans(ctx, location, nil, o.orphans)
	if err != nil {
		return err
	}
	if loc, _ := storage.ParseLocation(location); !loc.IsBucket() {
		return notSavepoint
	}
	if o.output == outputJSON {
		return writeJSON(out, struct {
			Path    string   `json:"path"`
			OK      bool     `json:"ok"`
			Orphans []orphan `json:"orphans"`
		}{storage.Shown(location), false, found})
	}
	fmt.Fprintf(out, "%s holds no savepoint; %s.\n", storage.Shown(location), orphanSummary(found, o.orphans))
	return nil
}
