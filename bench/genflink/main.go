// Command genflink writes the Apache Flink twin of the sessions-large
// benchmark savepoint, in Flink's canonical layout, through the flinkfmt
// writer (package internal/flinkgen):
//
//	go run ./bench/genflink -out DIR [-scale F] [-compressed] [-force]
//
// It writes DIR/flink-sessions-large: the SessionFeatures job keyed by a
// String user id, a million users at scale 1 with about 20 category-counts
// map entries each (TTL-wrapped, last accessed within six days of the
// savepoint), an Avro session value and an event-time timer for one user in
// ten, parallelism 2, max parallelism 128, uncompressed unless
// -compressed. Flink records no TTL: the job's is 7 days. The figures of
// the run (entries, bytes, time, entries per second) go to stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/stateproc/stateproc/internal/flinkgen"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("genflink", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "directory to write flink-sessions-large into (required)")
	scale := fs.Float64("scale", 1, "users relative to the benchmark's million")
	compressed := fs.Bool("compressed", false, "write every key group as a Snappy stream, as Flink's snapshot compression does")
	force := fs.Bool("force", false, "replace a savepoint that already exists")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var usage error
	switch {
	case *out == "":
		usage = errors.New("-out is required")
	case fs.NArg() > 0:
		usage = fmt.Errorf("unexpected arguments %q", fs.Args())
	case !(*scale > 0):
		usage = fmt.Errorf("-scale %v: must be positive", *scale)
	}
	if usage != nil {
		fmt.Fprintf(stderr, "genflink: %v\n", usage)
		return 2
	}
	c := flinkgen.SessionsLarge()
	c.Users = max(1, int(float64(c.Users)**scale))
	c.Compressed = *compressed
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	target := filepath.Join(*out, "flink-sessions-large")
	// The savepoint is staged beside its target, in -out, which may not
	// exist yet.
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(stderr, "genflink: %v\n", err)
		return 1
	}
	stats, err := flinkgen.WriteDir(ctx, target, *force, c)
	if err != nil {
		fmt.Fprintf(stderr, "genflink: %s: %v\n", target, err)
		return 1
	}
	secs := stats.Elapsed.Seconds()
	fmt.Fprintf(stderr, "%s: %d users, %d entries (%d category-counts, %d sessions, %d timers), %.1f MiB in %.2fs: %.0f entries/s\n",
		target, stats.Users, stats.Entries, stats.CountEntries, stats.Sessions, stats.Sessions, float64(stats.Bytes)/(1<<20), secs, float64(stats.Entries)/secs)
	return 0
}
