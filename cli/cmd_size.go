package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/sizing"
	"github.com/stateproc/stateproc/storage"
)

type sizeOptions struct {
	output        string
	plan          string
	now           string
	operator      string
	parallelism   int
	keys          float64
	scale         float64
	changeRate    float64
	memoryPerSlot string
	fullLimit     string
	gogc          int
	sample        string
}

func newSizeCmd() *cobra.Command {
	var o sizeOptions
	cmd := &cobra.Command{
		Use:   "size (SAVEPOINT | --plan FILE)",
		Short: "Size keyed state on the heap and on Pebble, per subtask, and recommend a backend",
		Long: `Size tells how big a job's keyed state is and will be, on the heap backend and
on Pebble, per subtask, and what its checkpoints write, and recommends a
backend with the arithmetic behind it.

From a savepoint it takes keys, entries and bytes per key group from the index,
and streams the entries of a sample (the first key groups, up to --sample bytes
per state, scaled up and marked when a state is larger) to split the bytes of an
entry into key, namespace, map key, value, TTL timestamp and framing. The heap
size is stateproc's model of the heap backend's Go objects (sizing/heapmodel.go:
maps, slices, strings and boxed values rounded as Go's allocator does, checked
against the real backend by a test). The Pebble size is measured: the sample is
restored into a real Pebble backend in a temporary directory and compacted.
Every TTL state gets the ages of its entries at --now and the count already
past the TTL, which nothing reads (a leak). Timer services get their timers per
key and how far they spread, set against the job's time that the savepoint
records (the watermark for event time, the creation time for processing time;
not --now). How many timers a key holds is no leak by itself: timers are
flagged as a possible leak when three or more on one key spread over more than
a day, so they pile up, or when they lie more than a day before the job's time,
so their clock has passed them and they wait for good.

From a plan (YAML or JSON; see sizing/testdata/sessionfeatures.yaml) it does
the same arithmetic before any savepoint exists: per state its kind, key and
value types or Avro schema, keys, entries per key and, when known, bytes per
entry. A plan's heapOverhead sets the heap at a factor, or a range of factors,
of the serialized bytes instead of the model.

Subtasks get their key groups as the engine hands them out, so skew shows.
--keys and --scale project to more keys; --parallelism to another parallelism.
A full checkpoint writes the savepoint-format bytes; an incremental Pebble one
about --change-rate of the entries at Pebble's bytes per entry, plus compaction
output. The heap is recommended when the busiest slot's live heap, with GOGC
headroom, fits --memory-per-slot and its full checkpoints stay within
--full-checkpoint-limit; otherwise Pebble.

Exit codes: 2 for bad flags or a malformed plan (the file, line and field are
named), 4 for a savepoint that cannot be read.`,
		Example: `  stateproc size ./savepoints/sp-42
  stateproc size --parallelism 8 --keys 40000000 ./savepoints/sp-42
  stateproc size --now 2026-11-29T06:00:00Z --operator assemble ./savepoints/gateway
  stateproc size --plan sizing/testdata/sessionfeatures.yaml --memory-per-slot 8GB
  stateproc size --plan plan.json -o json | jq .recommendation`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSize(cmd.Context(), o, args, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	addOutputFlag(cmd, &o.output)
	f.StringVar(&o.plan, "plan", "", "size the states a YAML or JSON plan `file` describes instead of a savepoint")
	f.StringVar(&o.now, "now", "", "`time` for TTL ages, RFC 3339 or epoch ms (default: the savepoint's creation time)")
	f.StringVar(&o.operator, "operator", "", "size only this operator: its `uid` (its ID or name in a savepoint)")
	f.IntVar(&o.parallelism, "parallelism", 0, "project to this parallelism (default: each operator's own)")
	f.Float64Var(&o.keys, "keys", 0, "project each operator to `N` distinct keys, entries per key unchanged")
	f.Float64Var(&o.scale, "scale", 0, "project keys and entries by this `factor`")
	f.Float64Var(&o.changeRate, "change-rate", 0.01, "`fraction` of entries written per checkpoint interval, for incremental checkpoints")
	f.StringVar(&o.memoryPerSlot, "memory-per-slot", "4GB", "heap budget of a task slot, a `size` such as 512MB, 8GB or 6GiB")
	f.StringVar(&o.fullLimit, "full-checkpoint-limit", "1GB", "the most a slot's full checkpoint should write (a `size`)")
	f.IntVar(&o.gogc, "gogc", 100, "Go collector setting: the heap grows to live × (1 + GOGC/100)")
	f.StringVar(&o.sample, "sample", "64MB", "savepoint bytes read per state (a `size`); 0 reads everything")
	return cmd
}

func runSize(ctx context.Context, o sizeOptions, args []string, out io.Writer) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	opts, err := o.projection()
	if err != nil {
		return err
	}
	sample, err := parseSize("--sample", o.sample)
	if err != nil {
		return err
	}
	var job *sizing.Job
	switch {
	case o.plan != "" && len(args) > 0:
		return usagef("give a savepoint or --plan, not both")
	case o.plan != "":
		if job, err = o.planJob(); err != nil {
			return err
		}
	case len(args) == 1:
		if job, err = o.measure(ctx, args[0], int64(sample)); err != nil {
			return err
		}
	default:
		return usagef("give a savepoint directory or --plan FILE")
	}
	rep, err := sizing.Project(job, opts)
	if errors.Is(err, sizing.ErrOption) {
		return &UsageError{Err: err}
	} else if err != nil {
		return err
	}
	if o.output == outputJSON {
		return writeJSON(out, rep)
	}
	return writeSizeReport(out, rep)
}

// projection checks the flags that do not depend on the input.
func (o sizeOptions) projection() (sizing.Options, error) {
	opts := sizing.Options{Parallelism: o.parallelism, Scale: o.scale, Keys: o.keys, ChangeRate: o.changeRate, GOGC: o.gogc}
	for _, f := range []struct {
		name string
		v    float64
	}{{"--keys", o.keys}, {"--scale", o.scale}, {"--change-rate", o.changeRate}} {
		// NaN passes every comparison below, and an infinity is no
		// count: the projection would never end or print NaN.
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return opts, usagef("%s must be a number, not %g", f.name, f.v)
		}
	}
	switch {
	case o.parallelism < 0:
		return opts, usagef("--parallelism must be 1 or more, not %d", o.parallelism)
	case o.keys < 0:
		return opts, usagef("--keys must be above 0, not %g", o.keys)
	case o.scale < 0:
		return opts, usagef("--scale must be above 0, not %g", o.scale)
	case o.keys > 0 && o.scale > 0:
		return opts, usagef("--keys and --scale both project the key count: give one")
	case o.changeRate <= 0 || o.changeRate > 1:
		return opts, usagef("--change-rate must be a fraction above 0 and at most 1, not %g", o.changeRate)
	case o.gogc < 0:
		return opts, usagef("--gogc must be 0 or more, not %d", o.gogc)
	}
	var err error
	if opts.MemoryPerSlot, err = parseSize("--memory-per-slot", o.memoryPerSlot); err != nil {
		return opts, err
	}
	if opts.FullCheckpointLimit, err = parseSize("--full-checkpoint-limit", o.fullLimit); err != nil {
		return opts, err
	}
	return opts, nil
}

func (o sizeOptions) planJob() (*sizing.Job, error) {
	if o.now != "" {
		return nil, usagef("--now applies to savepoints: a plan has no TTL timestamps")
	}
	plan, err := sizing.ReadPlan(o.plan)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	job, err := plan.Job()
	if err != nil {
		return nil, &UsageError{Err: fmt.Errorf("%s: %w", o.plan, err)}
	}
	if o.operator == "" {
		return job, nil
	}
	var uids []string
	for _, op := range job.Operators {
		if op.UID == o.operator {
			job.Operators = []sizing.Operator{op}
			return job, nil
		}
		uids = append(uids, op.UID)
	}
	return nil, usagef("no operator %q in the plan (operators: %v)", o.operator, uids)
}

func (o sizeOptions) measure(ctx context.Context, path string, sample int64) (*sizing.Job, error) {
	var now int64
	var err error
	if o.now != "" {
		if now, err = parseTime(o.now); err != nil {
			return nil, err
		}
	}
	r, err := openSavepoint(ctx, path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	meta := r.Metadata()
	if o.now == "" {
		now = meta.CreatedAt
	}
	uid := ""
	if o.operator != "" {
		i, err := findOperator(meta, o.operator)
		if err != nil {
			return nil, err
		}
		uid = meta.Operators[i].UID
	}
	return sizing.MeasureSavepoint(ctx, r, storage.Shown(path), sizing.MeasureOptions{Now: now, SampleBytes: sample, Operator: uid})
}

// parseSize reads a byte count: a number with an optional unit, decimal
// (kB, MB, GB, TB, as the output prints them) or binary (KiB, MiB, GiB,
// TiB).
func parseSize(flag, s string) (float64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	n, err := strconv.ParseFloat(t[:i], 64)
	unit, ok := sizeUnits[strings.ToLower(strings.TrimSpace(t[i:]))]
	if err != nil || !ok {
		return 0, usagef("%s %q is not a size such as 512MB, 8GB or 6GiB", flag, s)
	}
	return n * unit, nil
}

var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}
