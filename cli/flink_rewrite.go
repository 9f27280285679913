package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/flinkrewrite"
	"github.com/stateproc/stateproc/flinkfmt/flinksource"
	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// flinkReader returns the Flink reader under src when src is an Apache
// Flink savepoint, whose rewrites are package flinkrewrite's.
func flinkReader(src savepoint.Source) (*flinkfmt.Reader, bool) {
	if s, ok := src.(*flinksource.Source); ok {
		return s.Reader(), true
	}
	return nil, false
}

// stageFlink stages the output of a Flink rewrite, or returns nil for a
// dry run, which writes nothing.
func stageFlink(f *rewriteFlags) (storage.Staging, error) {
	if f.dryRun {
		return nil, nil
	}
	return storage.Stage(f.out, f.force)
}

// publishFlink publishes st after run wrote into it, or removes it when
// run failed.
func publishFlink(ctx context.Context, st storage.Staging, err error) error {
	if st == nil {
		return rewriteError(err)
	}
	if err != nil {
		st.Abort()
		return rewriteError(err)
	}
	return st.Publish(ctx)
}

// runFlinkRescale rescales an Apache Flink savepoint: every key moves to
// the key group of Flink's hash under the new max parallelism, in Flink's
// canonical layout.
func runFlinkRescale(ctx context.Context, o rescaleOptions, r *flinkfmt.Reader, input string, out io.Writer) error {
	st, err := stageFlink(&o.rewriteFlags)
	if err != nil {
		return err
	}
	spill := o.spillDir
	if spill == "" && o.out != "" {
		spill = filepath.Dir(filepath.Clean(o.out))
	}
	bar := newByteProgress(ctx, o.stderr, "rescaling")
	opts := flinkrewrite.RescaleOptions{MaxParallelism: o.maxParallelism, Parallelism: o.parallelism, Operator: o.operator, SpillDir: spill}
	opts.Progress = bar.options(o.options()).Progress
	rep, err := flinkrewrite.Rescale(ctx, r, st, opts)
	err = publishFlink(ctx, st, err)
	bar.end(err)
	if err != nil {
		return err
	}
	if o.output == outputJSON {
		return writeJSON(out, struct {
			Savepoint string `json:"savepoint"`
			Out       string `json:"out,omitempty"`
			*flinkrewrite.RescaleReport
		}{input, o.out, rep})
	}
	fmt.Fprintln(out, rewriteHeading(&o.rewriteFlags, "rescale", "Rescaled", input))
	t := newTable(out, "OPERATOR", "ACTION", "MAX PARALLELISM", "PARALLELISM", "ENTRIES", "BYTES")
	for _, op := range rep.Operators {
		action := string(op.Action)
		if !op.Keyed {
			action = "not keyed, carried over"
		}
		uid := op.UID
		if uid == "" {
			uid = op.ID
		}
		if err := t.Append(uid, action, change(op.MaxParallelismBefore, op.MaxParallelism), change(op.ParallelismBefore, op.Parallelism),
			op.Entries, humanBytes(float64(op.KeyedBytes))); err != nil {
			return err
		}
	}
	return t.Render()
}

// runFlinkOperator removes or renames an operator of an Apache Flink
// savepoint.
func runFlinkOperator(ctx context.Context, f *rewriteFlags, r *flinkfmt.Reader, input string, out io.Writer, bar *byteProgress,
	do func(context.Context, *flinkfmt.Reader, storage.Staging, flinkrewrite.Options) (*flinkrewrite.OperatorChange, error)) error {
	st, err := stageFlink(f)
	if err != nil {
		return err
	}
	rep, err := do(ctx, r, st, flinkrewrite.Options{Progress: bar.options(f.options()).Progress})
	err = publishFlink(ctx, st, err)
	bar.end(err)
	if err != nil {
		return err
	}
	if f.output == outputJSON {
		return writeJSON(out, struct {
			Savepoint string `json:"savepoint"`
			Out       string `json:"out,omitempty"`
			*flinkrewrite.OperatorChange
		}{input, f.out, rep})
	}
	command, done := "operator remove", "Removed operator "+rep.ID+" from"
	if rep.NewID != "" {
		command, done = "operator rename", fmt.Sprintf("Renamed operator %s to %s in", rep.ID, rep.NewID)
	}
	fmt.Fprintln(out, rewriteHeading(f, command, done, input))
	t := newTable(out, "OPERATOR", "UID", "NAME", "KEYED STATES", "TIMER SERVICES", "OPERATOR STATES", "BROADCAST STATES", "BYTES")
	if err := t.Append(rep.ID, changeText(rep.UID, rep.NewUID), changeText(rep.Name, rep.NewName), rep.KeyedStates, rep.TimerServices, rep.OperatorStates, rep.BroadcastStates, humanBytes(float64(rep.Bytes))); err != nil {
		return err
	}
	if err := t.Render(); err != nil {
		return err
	}
	if rep.Note != "" {
		fmt.Fprintln(out, rep.Note)
	}
	return nil
}

// changeText renders a text that may change, as "a -> b" or "a".
func changeText(from, to string) string {
	if to == "" || to == from {
		return from
	}
	return from + " -> " + to
}

// runFlinkPrune drops the expired entries of an Apache Flink savepoint's
// states with TTL. Flink records neither the savepoint's time nor the
// states' TTL, so --now and --ttl are required.
func runFlinkPrune(ctx context.Context, o pruneOptions, r *flinkfmt.Reader, ttl map[string]time.Duration, input string, out io.Writer) error {
	if o.now == "" {
		return usagef("an Apache Flink savepoint records no creation time: give --now")
	}
	now, err := parseTime(o.now)
	if err != nil {
		return err
	}
	st, err := stageFlink(&o.rewriteFlags)
	if err != nil {
		return err
	}
	bar := newByteProgress(ctx, o.stderr, "pruning")
	opts := flinkrewrite.PruneOptions{Now: now, TTL: ttl}
	opts.Progress = bar.options(o.options()).Progress
	rep, err := flinkrewrite.PruneTTL(ctx, r, st, opts)
	err = publishFlink(ctx, st, err)
	bar.end(err)
	if err != nil {
		return err
	}
	if o.output == outputJSON {
		return writeJSON(out, struct {
			Savepoint string `json:"savepoint"`
			Out       string `json:"out,omitempty"`
			*flinkrewrite.PruneReport
		}{input, o.out, rep})
	}
	fmt.Fprintln(out, rewriteHeading(&o.rewriteFlags, "prune-ttl", "Pruned", input))
	fmt.Fprintf(out, "Expired at %s:\n", formatTime(now))
	t := newTable(out, "OPERATOR", "STATE", "TTL", "BEFORE", "DROPPED", "AFTER")
	for _, s := range rep.States {
		op := s.UID
		if op == "" {
			op = s.Operator
		}
		ttl := "not given, kept"
		if s.TTLMillis > 0 {
			ttl = jsonvalue.Duration(s.TTLMillis) + " (--ttl)"
		}
		if err := t.Append(op, s.State, ttl, s.Before, s.Dropped, s.After); err != nil {
			return err
		}
	}
	return t.Render()
}
