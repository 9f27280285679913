package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/shard"
	"github.com/stateproc/stateproc/storage"
)

type commitOptions struct {
	out    string
	shards int
	force  bool
	export bool
	output string
}

func newCommitCmd() *cobra.Command {
	var o commitOptions
	cmd := &cobra.Command{
		Use:   "commit --out DST --shards N",
		Short: "Put the parts of a command run in shards together at its target",
		Long: `Commit is the last step of prune-ttl or export run as N tasks with --shard I/N.
Each task wrote its part beside --out, named DST.shard-0000I-of-0000N; commit
checks that all N are there, of the same output, and writes DST from them.

For a savepoint, each data file is the parts' segments of it in shard order,
copied and checked block by block, so the result is byte for byte the
savepoint a single run writes; _metadata is written last, as by every
rewrite (in a bucket: content-named data files first, then _metadata,
create-only). With --export, DST is the export directory, each dataset's
files numbered in shard order, staged beside DST and renamed into place; in a
bucket, where each part is an export finished by its _SUCCESS, the files are
copied on the store's side, named after their bytes, and DST/_SUCCESS is
written last, create-only, listing them.

The parts are removed once DST is published, in a bucket as on disk (a bucket
part's _metadata or _SUCCESS first). A target that exists is refused (exit 2)
unless --force.`,
		Example: `  for i in 0 1 2 3; do stateproc prune-ttl ./sp-42 --out ./pruned --shard $i/4; done
  stateproc commit --out ./pruned --shards 4
  stateproc commit --export --out ./sp-42-parquet --shards 4
  stateproc commit --export --out 's3://prod-state/exports/sp-42' --shards 8`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCommit(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "the `target` the shards wrote their parts beside")
	f.IntVar(&o.shards, "shards", 0, "`N`, the number of shards")
	f.BoolVar(&o.force, "force", false, "replace --out if it exists")
	f.BoolVar(&o.export, "export", false, "the parts are an export's datasets, not a savepoint")
	addOutputFlag(cmd, &o.output)
	return cmd
}

func runCommit(ctx context.Context, o commitOptions, out io.Writer) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	switch {
	case o.out == "":
		return usagef("--out is required")
	case o.shards < 1 || o.shards > shard.MaxCount:
		return usagef("--shards must be from 1 to %d, not %d", shard.MaxCount, o.shards)
	}
	files := 0
	var err error
	if _, perr := storage.ParseLocation(o.out); perr != nil {
		return usagef("--out: %v", perr)
	}
	if o.export {
		files, err = shard.CommitExport(ctx, o.out, o.shards, o.force, storage.Options{Counters: transfersOf(ctx)})
	} else {
		err = shard.Commit(ctx, o.out, o.shards, rewrite.Options{Force: o.force, Counters: transfersOf(ctx)}, storage.Options{Counters: transfersOf(ctx)})
	}
	if err != nil {
		return rewriteError(err)
	}
	if o.output == outputJSON {
		return writeJSON(out, struct {
			Out    string `json:"out"`
			Shards int    `json:"shards"`
			Export bool   `json:"export"`
			Files  int    `json:"files,omitempty"`
		}{storage.Shown(o.out), o.shards, o.export, files})
	}
	_, err = fmt.Fprintf(out, "Committed %d shards into %s.\n", o.shards, storage.Shown(o.out))
	return err
}
