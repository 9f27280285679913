// Command gatewaymeter runs GatewayMeter (package gateway) over its
// generated input: for example, to stop with a savepoint at parallelism 4
// on Pebble,
//
//	go run ./examples/gatewaymeter -events 1000000 -parallelism 4 -backend pebble -savepoint DIR
//
// and to restore it at another parallelism and run to the end,
//
//	go run ./examples/gatewaymeter -events 1000000 -parallelism 2 -restore DIR -drain -out OUT
//
// With -events 0 the input has no end: the job runs until SIGTERM or
// SIGINT stop it with a savepoint, whose directory it prints.
package main

import (
	"flag"
	"os"
	"path/filepath"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway"
	"github.com/stateproc/stateproc/examples/internal/jobrun"
)

func main() { os.Exit(command().Main(os.Args[1:], os.Stdout, os.Stderr)) }

func command() jobrun.Command {
	var events int64
	var leak, windowed bool
	var openSchema string
	return jobrun.Command{
		Name: "gatewaymeter",
		Usage: "Runs GatewayMeter over a seeded input of RequestStarted and RequestCompleted events.\n" +
			"With -out, tenant totals go to OUT/tenant-totals and request records to OUT/request-records.",
		Flags: func(fs *flag.FlagSet) {
			fs.Int64Var(&events, "events", 1_000_000, "events in the input (0: no end; SIGTERM or SIGINT stop the job with a savepoint)")
			fs.BoolVar(&leak, "leak", false, "the variant without the abandonment timer, whose abandoned requests leak")
			fs.BoolVar(&windowed, "window", false, "the variant whose TenantCost sums each tenant's cost per one-minute event-time window")
			fs.StringVar(&openSchema, "open-schema", "v1", "the Avro schema of `open` values: v1, or v2 (prompt_tokens a long, cached_tokens added), the schema evolution example")
		},
		Build: func(c *jobrun.Common) (*engine.Job, int64, error) {
			cfg := gateway.Config{Seed: c.Seed, Events: events, Parallelism: c.Parallelism, MaxParallelism: c.MaxParallelism, Leak: leak, Window: windowed}
			if err := cfg.Check(); err != nil {
				return nil, 0, jobrun.Usagef("%v", err)
			}
			if err := gateway.UseOpenSchema(openSchema); err != nil {
				return nil, 0, jobrun.Usagef("-open-schema: %v", err)
			}
			src, err := gateway.NewSource(cfg)
			if err != nil {
				return nil, 0, err
			}
			var sinks gateway.Sinks
			if c.Out != "" {
				sinks.Totals = engine.NewFileSink(filepath.Join(c.Out, "tenant-totals"), gateway.FormatTotal)
				sinks.Records = engine.NewFileSink(filepath.Join(c.Out, "request-records"), gateway.FormatRecord)
			}
			j, err := gateway.Build(cfg, src, src.Prices(), sinks)
			return j, src.Events(), err
		},
	}
}
