package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/prunettl"
	"github.com/stateproc/stateproc/storage"
)

type pruneOptions struct {
	rewriteFlags
	now    string
	ttl    []string
	shard  shardFlag
	stderr io.Writer
}

func newPruneTTLCmd() *cobra.Command {
	var o pruneOptions
	cmd := &cobra.Command{
		Use:   "prune-ttl SAVEPOINT --out DST",
		Short: "Write a copy of a savepoint without the entries whose TTL has expired",
		Long: `Prune-ttl writes a new savepoint without every value, list element and map
entry that is expired at --now under the TTL rule the engine applies: an entry
last modified at t with TTL d is expired when t + d <= now. The TTL of each
state is the one recorded in the savepoint; --ttl overrides it for one state
(repeat it for several). A key left with no entry in a state leaves nothing
behind. Timers and states without TTL are copied unchanged.

Only the framing and the 8-byte last-modified time in front of each value are
read; no value is decoded. Segments with nothing expired are copied as opaque
bytes, segments with everything expired are dropped unread. A data file with
nothing expired, written to a bucket of the store the input lies in, is copied
by the store without being read (--check-copies reads and checks it). The new savepoint
keeps the input's layout: its data files and index are those the engine writes
with full-snapshot cleanup at the same time. Its metadata records in its
lineage which savepoint it came from and what was pruned.

It prints, per state with TTL, the entries before, dropped and after.

The input is never modified. The output is written to a temporary directory
beside --out, synced and renamed; an existing --out is refused (exit 2) unless
--force. --dry-run reads the savepoint, prints the same report and writes
nothing.

An Apache Flink savepoint records neither its time nor its states' TTL: give
--now, and --ttl for each state to prune (its operator by uid, ID or name);
states with TTL not named are kept whole. It is written in Flink's canonical
layout.

--shard I/N rewrites shard I (from 0) of N only, cut from the index at
segment boundaries to about equal bytes, into a part beside --out named
--out.shard-0000I-of-0000N; once every shard is done, "stateproc commit --out
DST --shards N" puts the parts together into the savepoint a single run
writes, byte for byte. The report then counts the shard's segments.`,
		Example: `  stateproc prune-ttl ./savepoints/sp-42 --out ./savepoints/sp-42-pruned
  stateproc prune-ttl ./savepoints/sp-42 --now 2026-11-29T06:00:00Z --out ./pruned
  stateproc prune-ttl ./savepoints/sp-42 --ttl assemble/open=30m --ttl features/category-counts=3d --out ./pruned
  stateproc prune-ttl ./savepoints/sp-42 --dry-run -o json
  stateproc prune-ttl ./savepoints/sp-42 --out ./pruned --shard 2/8   # then: stateproc commit --out ./pruned --shards 8
  stateproc prune-ttl ./flink/savepoint-3b5f07-1 --now 2026-11-29T06:00:00Z --ttl session-features/category-counts=7d --out ./pruned`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stderr = cmd.ErrOrStderr()
			return runPruneTTL(cmd.Context(), o, args, cmd.OutOrStdout())
		},
	}
	addRewriteFlags(cmd, &o.rewriteFlags)
	addCheckCopiesFlag(cmd, &o.rewriteFlags)
	cmd.Flags().StringVar(&o.now, "now", "", "`time` at which entries are judged, RFC 3339 or epoch ms (default: the savepoint's creation time)")
	cmd.Flags().StringArrayVar(&o.ttl, "ttl", nil, "override the TTL of one state: `UID/STATE=DURATION` (7d, 36h, 90m); repeatable")
	addShardFlag(cmd, &o.shard, "writes a part for stateproc commit")
	return cmd
}

func runPruneTTL(ctx context.Context, o pruneOptions, args []string, out io.Writer) error {
	overrides := map[string]time.Duration{}
	for _, s := range o.ttl {
		name, dur, ok := strings.Cut(s, "=")
		if !ok || !strings.Contains(name, "/") {
			return usagef("--ttl %q: want UID/STATE=DURATION", s)
		}
		d, err := parseDuration(dur)
		if err != nil {
			return err
		}
		overrides[name] = d
	}
	sp, err := o.shard.spec()
	if err != nil {
		return err
	}
	target := o.out
	if o.shard.set() && target != "" {
		target = sp.Part(target)
	}
	r, err := openRewriteInput(ctx, &o.rewriteFlags, args[0], target)
	if err != nil {
		return err
	}
	defer r.Close()
	defer o.opened.Close()
	if fr, ok := flinkReader(r); ok {
		if o.shard.set() {
			return usagef("--shard: an Apache Flink savepoint is rewritten in one run")
		}
		return runFlinkPrune(ctx, o, fr, overrides, args[0], out)
	}
	wopts := o.options()
	wopts.Out = target
	now := r.Metadata().CreatedAt
	if o.now != "" {
		if now, err = parseTime(o.now); err != nil {
			return err
		}
	}
	bar := newByteProgress(ctx, o.stderr, "pruning")
	rep, err := prunettl.Run(ctx, r, args[0], prunettl.Options{Now: now, TTL: overrides, Shard: sp}, bar.options(wopts))
	bar.end(err)
	if err != nil {
		return rewriteError(err)
	}
	if o.output == outputJSON {
		return writeJSON(out, struct {
			Savepoint string `json:"savepoint"`
			Out       string `json:"out,omitempty"`
			*prunettl.Report
		}{storage.Shown(args[0]), storage.Shown(o.out), rep})
	}
	fmt.Fprintln(out, rewriteHeading(&o.rewriteFlags, "prune-ttl", "Pruned", args[0]))
	fmt.Fprintf(out, "Expired at %s:\n", formatTime(now))
	t := newTable(out, "OPERATOR", "STATE", "TTL", "BEFORE", "DROPPED", "AFTER")
	for _, s := range rep.States {
		ttl := jsonvalue.Duration(s.TTLMillis)
		if s.Overridden {
			ttl += " (--ttl)"
		}
		t.Append(s.Operator, s.State, ttl, s.Before, s.Dropped, s.After)
	}
	return t.Render()
}
