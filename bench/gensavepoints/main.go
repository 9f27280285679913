// Command gensavepoints writes the benchmark savepoints that the brief
// defines, from the example jobs:
//
//	go run ./bench/gensavepoints -out DIR [-only sessions-large|gateway-large] [-scale F]
//
// sessions-large is SessionFeatures over 1,000,000 users, about 20 million
// category-counts entries with TTL plus the open sessions; gateway-large is
// the leak variant of GatewayMeter over 5,000,000 requests (9.9 million
// events), whose abandoned requests leave about 100,000 `open` values. Both
// run on Pebble at parallelism 2 with max parallelism 128 and stop at the
// end of their input without draining, so that timers stay pending; both
// inputs span less than the 7-day TTL and are written without compression.
// -scale shrinks (or grows) the inputs for quick runs. Progress and timings
// go to stderr.
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
	"slices"
	"time"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("gensavepoints", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "directory to write the savepoints into (required)")
	only := fs.String("only", "", "write only this savepoint: "+names())
	scale := fs.Float64("scale", 1, "input size relative to the benchmark's definition")
	force := fs.Bool("force", false, "replace savepoints that already exist")
	every := fs.Duration("progress", 10*time.Second, "time between progress reports")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var usage error
	switch {
	case *out == "":
		usage = errors.New("-out is required")
	case fs.NArg() > 0:
		usage = fmt.Errorf("unexpected arguments %q", fs.Args())
	case *only != "" && find(*only) == nil:
		usage = fmt.Errorf("-only %q: want one of %s", *only, names())
	case !(*scale > 0):
		usage = fmt.Errorf("-scale %v: must be positive", *scale)
	case *every <= 0:
		usage = fmt.Errorf("-progress %v: must be positive", *every)
	}
	if usage != nil {
		fmt.Fprintf(stderr, "gensavepoints: %v\n", usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	for _, b := range benchmarks {
		if *only != "" && b.name != *only {
			continue
		}
		target := filepath.Join(*out, b.name)
		if *force {
			if err := os.RemoveAll(target); err != nil {
				fmt.Fprintf(stderr, "gensavepoints: %v\n", err)
				return 1
			}
		}
		if err := generate(ctx, b, *scale, target, *every, stderr); err != nil {
			fmt.Fprintf(stderr, "gensavepoints: %s: %v\n", b.name, err)
			return 1
		}
	}
	return 0
}

func find(name string) *benchmark {
	i := slices.IndexFunc(benchmarks, func(b benchmark) bool { return b.name == name })
	if i < 0 {
		return nil
	}
	return &benchmarks[i]
}

func names() string {
	var s string
	for i, b := range benchmarks {
		if i > 0 {
			s += " or "
		}
		s += b.name
	}
	return s
}
