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
	"github.com/stateproc/stateproc/internal/workdir"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// flinkReader returns the Flink reader under src when src is an Apache
// Flink savepoint, whose rewrites are package flinkrewrite's; a savepoint
// read from a bucket is wrapped in a Source that closes the bucket too.
func flinkReader(src savepoint.Source) (*flinkfmt.Reader, bool) {
	if w, ok := src.(interface{ Unwrap() savepoint.Source }); ok {
		src = w.Unwrap()
	}
	if s, ok := src.(*flinksource.Source); ok {
		return s.Reader(), true
	}
	return nil, false
}

// stageFlink opens the target of a Flink rewrite of input, under the rules
// every rewrite's output follows (a local target staged beside it and
// renamed into place, a bucket target published by its _metadata), or
// returns nil for a dry run, which writes nothing.
func stageFlink(ctx context.Context, input string, f *rewriteFlags) (storage.Target, error) {
	if f.dryRun {
		return nil, nil
	}
	if err := rewrite.CheckTargetToOpen(input, f.out, f.force); err != nil {
		return nil, err
	}
	if t, ok, err := f.opened.Take(f.out, f.force); ok {
		return t, err
	}
	return storage.OpenTarget(ctx, f.out, storage.TargetOptions{Force: f.force, Options: storage.Options{Counters: transfersOf(ctx)}})
}

// publishFlink publishes st after run wrote into it, or removes it when
// run failed, and releases it.
func publishFlink(ctx context.Context, st storage.Target, err error) error {
	if st == nil {
		return rewriteError(err)
	}
	defer st.Close()
	if err != nil {
		st.Abort()
		return rewriteError(err)
	}
	return st.Publish(ctx)
}

// canonicalFlink returns r when none of its keyed state is in the native
// RocksDB layout, which the rewrites other than convert do not read; else
// r converted to the canonical layout in a new directory under dir (the
// system's temporary directory when empty), opened, and a cleanup that
// closes it and removes the directory. The conversion needs about the size of the keyed
// state in free space there.
func canonicalFlink(ctx context.Context, r *flinkfmt.Reader, dir string, stderr io.Writer, f *rewriteFlags) (*flinkfmt.Reader, func(), error) {
	if !flinkrewrite.NeedsConversion(ctx, r) {
		return r, func() {}, nil
	}
	work, err := workdir.Create(dir, storage.TempPrefix+"flink-convert-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { work.Remove() }
	target := filepath.Join(work.Path, "canonical")
	st, err := storage.Stage(target, false)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	bar := newByteProgress(ctx, stderr, "converting")
	_, err = flinkrewrite.Convert(ctx, r, st, flinkrewrite.Options{Progress: bar.options(f.options()).Progress})
	if err != nil {
		st.Abort()
	} else {
		err = st.Publish(ctx)
	}
	bar.end(err)
	if err != nil {
		cleanup()
		return nil, nil, rewriteError(err)
	}
	cd := storage.LocalDir(target)
	c, err := flinkfmt.Open(ctx, cd, flinkfmt.Options{})
	if err != nil {
		cd.Close()
		cleanup()
		return nil, nil, err
	}
	return c, func() { cd.Close(); cleanup() }, nil
}

// localDirOf is the local directory beside a target, where temporary
// files go; "" (the system's temporary directory) for a bucket URL or no
// target.
func localDirOf(target string) string {
	if target == "" {
		return ""
	}
	if loc, err := storage.ParseLocation(target); err != nil || loc.IsBucket() {
		return ""
	}
	return filepath.Dir(filepath.Clean(target))
}

// runFlinkRescale rescales an Apache Flink savepoint: every key moves to
// the key group of Flink's hash under the new max parallelism, in Flink's
// canonical layout. Native RocksDB state is converted first.
func runFlinkRescale(ctx context.Context, o rescaleOptions, r *flinkfmt.Reader, input string, out io.Writer) error {
	spill := o.spillDir
	if spill == "" {
		spill = localDirOf(o.out)
	}
	r, cleanup, err := canonicalFlink(ctx, r, spill, o.stderr, &o.rewriteFlags)
	if err != nil {
		return err
	}
	defer cleanup()
	st, err := stageFlink(ctx, input, &o.rewriteFlags)
	if err != nil {
		return err
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
		ops := make([]flinkRescaled, len(rep.Operators))
		for i, op := range rep.Operators {
			ops[i] = flinkRescaled{UID: op.UID, ID: op.ID, Name: op.Name, Keyed: op.Keyed, Action: op.Action,
				MaxParallelismBefore: op.MaxParallelismBefore, MaxParallelism: op.MaxParallelism, ParallelismBefore: op.ParallelismBefore, Parallelism: op.Parallelism,
				Entries: op.Entries, Bytes: op.KeyedBytes}
			if ops[i].UID == "" {
				ops[i].UID = op.ID
			}
			if ops[i].Segments, err = flinkSegments(r, op.ID); err != nil {
				return err
			}
		}
		return writeJSON(out, struct {
			Savepoint string          `json:"savepoint"`
			Out       string          `json:"out,omitempty"`
			DryRun    bool            `json:"dry_run"`
			Operators []flinkRescaled `json:"operators"`
		}{storage.Shown(input), storage.Shown(o.out), rep.DryRun, ops})
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
		t.Append(uid, action, change(op.MaxParallelismBefore, op.MaxParallelism), change(op.ParallelismBefore, op.Parallelism),
			op.Entries, humanBytes(float64(op.KeyedBytes)))
	}
	return t.Render()
}

// runFlinkOperator removes or renames an operator of an Apache Flink
// savepoint.
func runFlinkOperator(ctx context.Context, f *rewriteFlags, r *flinkfmt.Reader, input string, out io.Writer, bar *byteProgress,
	do func(context.Context, *flinkfmt.Reader, storage.Target, flinkrewrite.Options) (*flinkrewrite.OperatorChange, error)) error {
	st, err := stageFlink(ctx, input, f)
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
		j := flinkOperatorJSON{Savepoint: storage.Shown(input), Out: storage.Shown(f.out), Action: rep.Action, UID: rep.UID, NewUID: rep.NewUID,
			ID: rep.ID, NewID: rep.NewID, Name: rep.Name, NewName: rep.NewName, DryRun: rep.DryRun,
			KeyedStates: rep.KeyedStates, TimerServices: rep.TimerServices, OperatorStates: rep.OperatorStates, BroadcastStates: rep.BroadcastStates,
			Bytes: rep.Bytes, Note: rep.Note}
		if j.UID == "" {
			j.UID = rep.ID
		}
		// Metadata before version 5 records no uid: the new ID names the
		// operator after a rename, as the ID does before it.
		if j.NewUID == "" {
			j.NewUID = rep.NewID
		}
		if j.Segments, err = flinkSegments(r, rep.ID); err != nil {
			return err
		}
		if j.Entries, err = flinkEntries(ctx, r, rep.ID); err != nil {
			return err
		}
		return writeJSON(out, j)
	}
	command, done := "operator remove", "Removed operator "+rep.ID+" from"
	if rep.NewID != "" {
		command, done = "operator rename", fmt.Sprintf("Renamed operator %s to %s in", rep.ID, rep.NewID)
	}
	fmt.Fprintln(out, rewriteHeading(f, command, done, input))
	t := newTable(out, "OPERATOR", "UID", "NAME", "KEYED STATES", "TIMER SERVICES", "OPERATOR STATES", "BROADCAST STATES", "BYTES")
	t.Append(rep.ID, changeText(rep.UID, rep.NewUID), changeText(rep.Name, rep.NewName), rep.KeyedStates, rep.TimerServices, rep.OperatorStates, rep.BroadcastStates, humanBytes(float64(rep.Bytes)))
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
	r, cleanup, err := canonicalFlink(ctx, r, localDirOf(o.out), o.stderr, &o.rewriteFlags)
	if err != nil {
		return err
	}
	defer cleanup()
	st, err := stageFlink(ctx, input, &o.rewriteFlags)
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
		states := make([]flinkPruned, len(rep.States))
		for i, s := range rep.States {
			states[i] = flinkPruned{Operator: s.UID, ID: s.Operator, State: s.State, TTLMillis: s.TTLMillis,
				Overridden: s.TTLMillis > 0, Before: s.Before, Dropped: s.Dropped, After: s.After}
			if states[i].Operator == "" {
				states[i].Operator = s.Operator
			}
		}
		return writeJSON(out, struct {
			Savepoint string            `json:"savepoint"`
			Out       string            `json:"out,omitempty"`
			Now       jsonvalue.Instant `json:"now"`
			DryRun    bool              `json:"dry_run"`
			States    []flinkPruned     `json:"states"`
		}{storage.Shown(input), storage.Shown(o.out), jsonvalue.Instant(rep.Now), rep.DryRun, states})
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
		t.Append(op, s.State, ttl, s.Before, s.Dropped, s.After)
	}
	return t.Render()
}

// The JSON output of the Flink rewrites keeps the contract of stateproc's
// own (testdata/json/COMMAND.fields): an operator is named by its uid, or
// its ID where the metadata records no uid, and Flink's ID and name are
// added beside it.

// flinkRescaled is one operator of rescale's JSON output. Segments are the
// key groups of the input that hold bytes, Bytes the input's keyed state,
// Entries the entries written (none in a dry run, which reads no entries).
type flinkRescaled struct {
	UID                  string              `json:"uid"`
	ID                   string              `json:"id"`
	Name                 string              `json:"name,omitempty"`
	Keyed                bool                `json:"keyed"`
	Action               flinkrewrite.Action `json:"action"`
	MaxParallelismBefore int                 `json:"max_parallelism_before"`
	MaxParallelism       int                 `json:"max_parallelism"`
	ParallelismBefore    int                 `json:"parallelism_before"`
	Parallelism          int                 `json:"parallelism"`
	Segments             int                 `json:"segments"`
	Entries              uint64              `json:"entries"`
	Bytes                int64               `json:"bytes"`
}

// flinkOperatorJSON is the JSON output of operator remove and rename. NewUID
// is the new uid, NewID Flink's hash of it.
type flinkOperatorJSON struct {
	Savepoint       string `json:"savepoint"`
	Out             string `json:"out,omitempty"`
	Action          string `json:"action"`
	UID             string `json:"uid"`
	NewUID          string `json:"new_uid,omitempty"`
	ID              string `json:"id"`
	NewID           string `json:"new_id,omitempty"`
	Name            string `json:"name,omitempty"`
	NewName         string `json:"new_name,omitempty"`
	DryRun          bool   `json:"dry_run"`
	KeyedStates     int    `json:"keyed_states"`
	TimerServices   int    `json:"timer_services"`
	OperatorStates  int    `json:"operator_states"`
	BroadcastStates int    `json:"broadcast_states"`
	Segments        int    `json:"segments"`
	Entries         uint64 `json:"entries"`
	Bytes           int64  `json:"bytes"`
	Note            string `json:"note,omitempty"`
}

// flinkPruned is one state of prune-ttl's JSON output. Flink records no
// TTL, so every TTL is one given with --ttl: Overridden is whether one was.
type flinkPruned struct {
	Operator   string `json:"operator"`
	ID         string `json:"id"`
	State      string `json:"state"`
	TTLMillis  int64  `json:"ttl_ms"`
	Overridden bool   `json:"overridden"`
	Before     uint64 `json:"before"`
	Dropped    uint64 `json:"dropped"`
	After      uint64 `json:"after"`
}

// flinkKeyed returns the keyed state of the input's operator id, or nil
// when it has none that can be read.
func flinkKeyed(ctx context.Context, r *flinkfmt.Reader, id string) (*flinkfmt.Keyed, error) {
	op, err := r.Operator(id)
	if err != nil {
		return nil, err
	}
	k, err := r.Keyed(ctx, op)
	if err != nil {
		// Not keyed, or in a layout that is not read: the report's
		// note says so, and there is nothing to count.
		return nil, nil
	}
	return k, nil
}

// flinkSegments counts the key groups of the input's operator id that hold
// bytes in its key-group handles, from their offsets alone (Flink's unit of
// keyed data; 0 marks an empty key group). A native RocksDB handle keeps
// no key group in one place and counts none.
func flinkSegments(r *flinkfmt.Reader, id string) (int, error) {
	op, err := r.Operator(id)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, st := range op.Subtasks {
		if st.ManagedKeyed == nil {
			continue
		}
		for _, off := range st.ManagedKeyed.Offsets {
			if off != 0 {
				n++
			}
		}
	}
	return n, nil
}

// flinkEntries counts the entries of the input's operator id: Flink keeps
// no index, so this reads the operator's keyed state once.
func flinkEntries(ctx context.Context, r *flinkfmt.Reader, id string) (uint64, error) {
	k, err := flinkKeyed(ctx, r, id)
	if k == nil || err != nil {
		return 0, err
	}
	it := k.Entries(ctx, -1, keygroup.All(k.Operator.MaxParallelism))
	defer it.Close()
	var n uint64
	for it.Next() {
		n++
	}
	return n, it.Err()
}
