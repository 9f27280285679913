package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/flinkfmt/flinkrewrite"
	"github.com/stateproc/stateproc/storage"
)

type convertOptions struct {
	rewriteFlags
	stderr io.Writer
}

func newConvertCmd() *cobra.Command {
	var o convertOptions
	cmd := &cobra.Command{
		Use:   "convert SRC --out DST",
		Short: "Write an Apache Flink native savepoint or checkpoint as a canonical savepoint",
		Long: `Convert writes an Apache Flink savepoint or retained checkpoint whose keyed
state is in a state backend's own layout as a savepoint in Flink's canonical
layout, which every backend restores (Flink 1.13 on): what a job needs before
it switches from RocksDB to the heap backend or back, and what rescale and
prune-ttl read. SRC is a native RocksDB savepoint, an incremental checkpoint
(chk-<id> beside its job's shared/ and taskowned/, or the job's checkpoint
directory for its newest checkpoint), or a heap snapshot.

Each subtask's keyed state becomes one key-group stream under its own
keyed-state header, carried over as bytes (every state's meta info and
serializer snapshots). A RocksDB instance is read table by table and merged
(the newest entry of a key wins, deletions are honoured, list elements
appended in several tables are joined): per key group, its states by id, each
state's keys in byte order, timers from their column families, as Flink's
full snapshot of RocksDB writes them; heap state keeps the heap's order.
Entries of key groups outside a subtask's range are skipped, as Flink does on
restore. Operator, broadcast, raw keyed and coordinator state, and keyed
state that is canonical already, are copied. The _metadata keeps the input's
version, checkpoint id and properties. Memory is bounded by the number of
tables of a subtask, not their size.

The changelog layout is refused (exit 2): only the job can apply its changes.
A savepoint that is canonical already is refused too, since every backend
restores it as it is.

The input is never modified. The output is written to a temporary directory
beside --out (in a bucket: data files first, _metadata last), synced and
published in one step; an existing --out is refused (exit 2) unless --force.
--dry-run opens every table and writes nothing. A corrupt, truncated or
missing file of the input exits 4 naming it, and nothing is written.`,
		Example: `  stateproc convert ./flink/savepoint-3b5f07-native --out ./flink/savepoint-3b5f07
  stateproc convert /flink/checkpoints/8a3c.../chk-42 --out ./flink/from-chk-42
  stateproc convert /flink/checkpoints/8a3c... --dry-run -o json
  stateproc convert ./flink/savepoint-3b5f07-native --out s3://bucket/savepoints/sp-1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stderr = cmd.ErrOrStderr()
			return runConvert(cmd.Context(), o, args, cmd.OutOrStdout())
		},
	}
	addRewriteFlags(cmd, &o.rewriteFlags)
	return cmd
}

// flinkConverted is one operator of convert's JSON output, named as the
// other Flink rewrites name it.
type flinkConverted struct {
	UID      string              `json:"uid"`
	ID       string              `json:"id"`
	Name     string              `json:"name,omitempty"`
	Keyed    bool                `json:"keyed"`
	Action   flinkrewrite.Action `json:"action"`
	Layout   string              `json:"layout"`
	Subtasks int                 `json:"subtasks"`
	Pairs    uint64              `json:"pairs"`
	Bytes    int64               `json:"bytes"`
}

func runConvert(ctx context.Context, o convertOptions, args []string, out io.Writer) error {
	r, err := openRewriteInput(ctx, &o.rewriteFlags, args[0], o.out)
	if err != nil {
		return err
	}
	defer r.Close()
	defer o.opened.Close()
	fr, ok := flinkReader(r)
	if !ok {
		return usagef("%s is a stateproc savepoint: convert writes Apache Flink savepoints in Flink's canonical layout", storage.Shown(args[0]))
	}
	st, err := stageFlink(ctx, args[0], &o.rewriteFlags)
	if err != nil {
		return err
	}
	bar := newByteProgress(ctx, o.stderr, "converting")
	rep, err := flinkrewrite.Convert(ctx, fr, st, flinkrewrite.Options{Progress: bar.options(o.options()).Progress})
	err = publishFlink(ctx, st, err)
	bar.end(err)
	if err != nil {
		return err
	}
	if o.output == outputJSON {
		ops := make([]flinkConverted, len(rep.Operators))
		for i, op := range rep.Operators {
			ops[i] = flinkConverted{UID: op.UID, ID: op.ID, Name: op.Name, Keyed: op.Keyed, Action: op.Action, Layout: string(op.Layout),
				Subtasks: op.Subtasks, Pairs: op.Pairs, Bytes: op.KeyedBytes}
			if ops[i].UID == "" {
				ops[i].UID = op.ID
			}
		}
		return writeJSON(out, struct {
			Savepoint string           `json:"savepoint"`
			Out       string           `json:"out,omitempty"`
			DryRun    bool             `json:"dry_run"`
			Operators []flinkConverted `json:"operators"`
		}{storage.Shown(args[0]), storage.Shown(o.out), rep.DryRun, ops})
	}
	fmt.Fprintln(out, rewriteHeading(&o.rewriteFlags, "convert", "Converted", args[0]))
	t := newTable(out, "OPERATOR", "ACTION", "LAYOUT", "SUBTASKS", "PAIRS", "BYTES")
	for _, op := range rep.Operators {
		uid := op.UID
		if uid == "" {
			uid = op.ID
		}
		action, layout := string(op.Action), string(op.Layout)
		switch {
		case !op.Keyed:
			action, layout = "not keyed, carried over", "-"
		case op.Action == flinkrewrite.Converted:
			layout += " -> canonical"
		}
		t.Append(uid, action, layout, op.Subtasks, op.Pairs, humanBytes(float64(op.KeyedBytes)))
	}
	return t.Render()
}
