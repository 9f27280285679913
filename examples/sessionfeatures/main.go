// Command sessionfeatures runs SessionFeatures (package sessions) over its
// generated clickstream: for example,
//
//	go run ./examples/sessionfeatures -users 100000 -parallelism 4 -backend pebble -savepoint DIR
package main

import (
	"flag"
	"os"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/examples/internal/jobrun"
	"github.com/stateproc/stateproc/examples/sessionfeatures/sessions"
)

func main() { os.Exit(command().Main(os.Args[1:], os.Stdout, os.Stderr)) }

func command() jobrun.Command {
	var users int64
	return jobrun.Command{
		Name: "sessionfeatures",
		Usage: "Runs SessionFeatures over a seeded clickstream of about 32 clicks per user.\n" +
			"With -out, session summaries go to files under OUT.",
		Flags: func(fs *flag.FlagSet) {
			fs.Int64Var(&users, "users", 100_000, "users in the input")
		},
		Build: func(c *jobrun.Common) (*engine.Job, int64, error) {
			cfg := sessions.Config{Seed: c.Seed, Users: users, Parallelism: c.Parallelism, MaxParallelism: c.MaxParallelism}
			if err := cfg.Check(); err != nil {
				return nil, 0, jobrun.Usagef("%v", err)
			}
			src, err := sessions.NewSource(cfg)
			if err != nil {
				return nil, 0, err
			}
			var sink engine.Sink[sessions.SessionSummary]
			if c.Out != "" {
				sink = engine.NewFileSink(c.Out, sessions.FormatSummary)
			}
			j, err := sessions.Build(cfg, src, sink)
			return j, src.Clicks(), err
		},
	}
}
