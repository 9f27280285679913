// Command sessionfeatures runs SessionFeatures (package sessions) over its
// generated clickstream: for example,
//
//	go run ./examples/sessionfeatures -users 100000 -parallelism 4 -backend pebble -savepoint DIR
//
// With -events 0 the input has no end: the job runs until SIGTERM or
// SIGINT stop it with a savepoint, whose directory it prints. With
// -input DIR it reads the clicks from the JSON-lines and CSV files of DIR
// instead, through engine/filesource, until their end or a signal.
package main

import (
	"flag"
	"os"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/engine/filesource"
	"github.com/stateproc/stateproc/examples/internal/jobrun"
	"github.com/stateproc/stateproc/examples/sessionfeatures/sessions"
)

func main() { os.Exit(command().Main(os.Args[1:], os.Stdout, os.Stderr)) }

func command() jobrun.Command {
	var users, events int64
	var input string
	return jobrun.Command{
		Name: "sessionfeatures",
		Usage: "Runs SessionFeatures over a seeded clickstream of about 32 clicks per user.\n" +
			"With -out, session summaries go to files under OUT.",
		Flags: func(fs *flag.FlagSet) {
			fs.Int64Var(&users, "users", 100_000, "users in the input (0: no end, as -events 0)")
			fs.StringVar(&input, "input", "", "read the clicks from the *.jsonl and *.csv files of `DIR` (fields user_id, category, ts) until their end, instead of generating them")
			fs.Int64Var(&events, "events", -1, "clicks in the input, -users times 32 if not set (0: no end; SIGTERM or SIGINT stop the job with a savepoint)")
		},
		Build: func(c *jobrun.Common) (*engine.Job, int64, error) {
			switch {
			case events == 0:
				users = 0
			case events > 0 && events%sessions.ClicksPerUser != 0:
				return nil, 0, jobrun.Usagef("-events %d: the input has %d clicks per user; give a multiple of it, or -users", events, sessions.ClicksPerUser)
			case events > 0:
				users = events / sessions.ClicksPerUser
			}
			if input != "" {
				users = 0
			}
			cfg := sessions.Config{Seed: c.Seed, Users: users, Parallelism: c.Parallelism, MaxParallelism: c.MaxParallelism}
			if err := cfg.Check(); err != nil {
				return nil, 0, jobrun.Usagef("%v", err)
			}
			var sink engine.Sink[sessions.SessionSummary]
			if c.Out != "" {
				sink = engine.NewFileSink(c.Out, sessions.FormatSummary)
			}
			if input != "" {
				// The number of clicks in the files is not known without
				// reading them: the job runs as over an input without end,
				// and ends at the end of the files.
				src, err := filesource.New(input, filesource.Options[sessions.Click]{EventTime: func(c sessions.Click) int64 { return c.TS }})
				if err != nil {
					return nil, 0, err
				}
				j, err := sessions.Build(cfg, src, sink)
				return j, 0, err
			}
			src, err := sessions.NewSource(cfg)
			if err != nil {
				return nil, 0, err
			}
			j, err := sessions.Build(cfg, src, sink)
			return j, src.Clicks(), err
		},
	}
}
