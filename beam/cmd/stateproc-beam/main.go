// Command stateproc-beam runs stateproc's export, prune-ttl, verify,
// inspect --scan and rescale as Apache Beam pipelines (package pipelines). Its flags are the
// stateproc command's, plus --shards or --shard-bytes for the cut and
// Beam's own flags (--runner, --endpoint, --project, --region,
// --staging_location, --environment_type, ...), which select and
// configure the runner: Prism when none is given.
//
//	stateproc-beam prune-ttl --out DST [--now T] [--ttl UID/STATE=D]... SAVEPOINT
//	stateproc-beam export --out DIR [--now T] [--operator U] [--state S] SAVEPOINT
//	stateproc-beam verify [--deep] [--summary FILE] SAVEPOINT
//	stateproc-beam inspect [--scan] [--top N] [--now T] [--summary FILE] SAVEPOINT
//	stateproc-beam rescale --out DST --max-parallelism N [--rescale-parallelism P] [--operator U] SAVEPOINT
//
// Exit codes are stateproc's where they apply: 0 ok, 1 failure, 2 usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/stateproc/stateproc/beam/pipelines"
	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/rewrite"
)

// The flags of every command, in the one flag set Beam's flags live in:
// a worker re-runs this binary with Beam's flags alone.
var (
	out         = flag.String("out", "", "the target: a directory or bucket URL")
	force       = flag.Bool("force", false, "replace --out if it exists")
	now         = flag.String("now", "", "time at which TTL entries are judged, RFC 3339 or epoch ms (default: the savepoint's creation time)")
	shards      = flag.Int("shards", 0, "cut the work into this many shards (default: from --shard-bytes)")
	shardBytes  = flag.Int64("shard-bytes", pipelines.DefaultShardBytes, "bytes of savepoint per shard when --shards is not given")
	operator    = flag.String("operator", "", "export or rescale only this operator")
	state       = flag.String("state", "", "export only the state of this name (needs --operator)")
	format      = flag.String("format", string(export.Parquet), "export's file format: parquet, arrow or jsonl")
	compression = flag.String("compression", string(export.Zstd), "export's compression: zstd or none")
	maxRows     = flag.Int64("max-rows-per-file", export.DefaultMaxRowsPerFile, "export: split states into files of at most N rows (0: no limit)")
	rowGroup    = flag.Int("row-group-rows", export.DefaultRowGroupRows, "export: rows per Parquet row group")
	deep        = flag.Bool("deep", false, "verify: also decode every key, namespace, map key and value")
	summary     = flag.String("summary", "", "verify, inspect: write the figures (inspect: the report) as JSON to this local file")
	_           = flag.Bool("scan", true, "inspect: scan every entry, as stateproc inspect --scan (the pipeline always does)")
	top         = flag.Int("top", 0, "inspect: also list the N heaviest keys by entries and by bytes")
	maxP        = flag.Int("max-parallelism", 0, "rescale: the new max parallelism")
	parallelism = flag.Int("rescale-parallelism", 0, "rescale: the new parallelism, stateproc rescale's --parallelism, which Beam's --parallelism (the Flink runner's) takes (default: each operator keeps its own)")
	ttls        ttlFlag
)

type ttlFlag map[string]time.Duration

func (t *ttlFlag) String() string { return fmt.Sprint(map[string]time.Duration(*t)) }

func (t *ttlFlag) Set(s string) error {
	name, d, ok := strings.Cut(s, "=")
	if !ok || !strings.Contains(name, "/") {
		return fmt.Errorf("want UID/STATE=DURATION, not %q", s)
	}
	dur, err := parseDuration(d)
	if err != nil {
		return err
	}
	if *t == nil {
		*t = ttlFlag{}
	}
	(*t)[name] = dur
	return nil
}

// parseDuration is Go's syntax plus d for days, as stateproc's.
func parseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int64
		if _, err := fmt.Sscan(days, &n); err == nil && n > 0 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	return time.ParseDuration(s)
}

func parseTime(s string) (int64, error) {
	var ms int64
	if _, err := fmt.Sscan(s, &ms); err == nil && !strings.ContainsAny(s, "-:T") {
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("--now %q: want RFC 3339 or epoch milliseconds", s)
	}
	return t.UnixMilli(), nil
}

func init() {
	flag.Var(&ttls, "ttl", "prune-ttl: override the TTL of one state, UID/STATE=DURATION (7d, 36h); repeatable")
}

type usageError struct{ error }

func main() {
	// A worker is started with Beam's flags and no command.
	args := os.Args[1:]
	command := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		command, args = args[0], args[1:]
	}
	if err := flag.CommandLine.Parse(args); err != nil {
		os.Exit(2)
	}
	beam.Init()
	err := run(context.Background(), command, flag.Args())
	var u usageError
	switch {
	case err == nil:
	case errors.As(err, &u), errors.Is(err, rewrite.ErrRefused):
		fmt.Fprintln(os.Stderr, "stateproc-beam:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "stateproc-beam:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, command string, args []string) error {
	if len(args) != 1 {
		return usageError{fmt.Errorf("usage: stateproc-beam export|prune-ttl|verify|inspect|rescale [flags] SAVEPOINT")}
	}
	input := args[0]
	sharding := pipelines.Sharding{Shards: *shards, ShardBytes: *shardBytes}
	var nowMs *int64
	if *now != "" {
		ms, err := parseTime(*now)
		if err != nil {
			return usageError{err}
		}
		nowMs = &ms
	}
	if command != "verify" && command != "inspect" && *out == "" {
		return usageError{errors.New("--out is required")}
	}
	p, s := beam.NewPipelineWithRoot()
	var n int
	var err error
	switch command {
	case "prune-ttl":
		n, err = pipelines.PruneTTL(ctx, s, pipelines.PruneTTLConfig{Input: input, Out: *out, Force: *force, Now: nowMs, TTL: ttls, Sharding: sharding})
	case "export":
		rows := *maxRows
		if rows == 0 {
			rows = -1
		}
		o := export.Options{Format: export.Format(*format), Compression: export.Compression(*compression),
			Operator: *operator, State: *state, Now: nowMs, MaxRowsPerFile: rows, RowGroupRows: *rowGroup}
		n, err = pipelines.Export(ctx, s, pipelines.ExportConfig{Input: input, Out: *out, Force: *force, Options: o, Sharding: sharding})
	case "verify":
		n, err = pipelines.Verify(ctx, s, pipelines.VerifyConfig{Input: input, Deep: *deep, Summary: *summary, Sharding: sharding})
	case "inspect":
		n, err = pipelines.Inspect(ctx, s, pipelines.InspectConfig{Input: input, Now: nowMs, Top: *top, Summary: *summary, Sharding: sharding})
	case "rescale":
		n, err = pipelines.Rescale(ctx, s, pipelines.RescaleConfig{Input: input, Out: *out, Force: *force,
			MaxParallelism: *maxP, Parallelism: *parallelism, Operator: *operator, Sharding: sharding})
	default:
		return usageError{fmt.Errorf("unknown command %q: export, prune-ttl, verify, inspect or rescale", command)}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "stateproc-beam: %s of %s in %d parts\n", command, input, n)
	return beamx.Run(ctx, p)
}
