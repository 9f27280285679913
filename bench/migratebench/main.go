// Command migratebench measures `stateproc migrate` against a bare
// hamba/avro decode-resolve-encode loop over the same values held in memory,
// as the brief defines the Avro migration benchmark:
//
//	go run ./examples/gatewaymeter -manifest -leak -open-schema v2 > job-v2.json
//	go run ./bench/migratebench -savepoint DIR/gateway-large -job job-v2.json [-state assemble/open] [-runs N] [-work DIR]
//
// It reads every value of the state into memory and checks that hamba's
// resolution of each gives the bytes that stateproc's migration gives.
// Then, after a warm-up of each, it runs N times, in turn, stateproc migrate
// of the whole savepoint in a child process (its wall time, CPU time and
// peak RSS its own; reading and writing the files, syncing and renaming
// count against it) and the hamba loop: for each value, decode the Avro
// datum with hamba's resolved writer-to-reader schema into a generic value,
// encode it with the reader schema, keep the TTL timestamp in front. It
// prints medians, the median of the per-run ratios, and values per second
// per core (per CPU second).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/stateproc/stateproc/bench/internal/measure"
	"github.com/stateproc/stateproc/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == childCommand {
		// The child process of a run: stateproc migrate itself.
		code := cli.Main(ctx, os.Args[2:], os.Stdout, os.Stderr)
		if err := measure.WritePeakRSS(); err != nil {
			fmt.Fprintf(os.Stderr, "migratebench: %v\n", err)
			code = 1
		}
		os.Exit(code)
	}
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "migratebench: %v\n", err)
		os.Exit(1)
	}
}
