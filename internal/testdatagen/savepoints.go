package main

import (
	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway"
	"github.com/stateproc/stateproc/examples/sessionfeatures/sessions"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// fixture is one checked-in savepoint: a job, the run options that stop it
// with a savepoint, and the reason it is in the set.
type fixture struct {
	name string
	why  string
	// job builds the job and returns its input size, which stopAt is a
	// fraction of.
	job     func() (*engine.Job, int64, error)
	backend engine.BackendKind
	// stopAt is the stop position as a fraction of the input; 1 is the end
	// of the input.
	stopAt      float64
	drain       bool
	compression snapshotfmt.Codec
}

func gatewayJob(cfg gateway.Config) func() (*engine.Job, int64, error) {
	return func() (*engine.Job, int64, error) {
		src, err := gateway.NewSource(cfg)
		if err != nil {
			return nil, 0, err
		}
		j, err := gateway.Build(cfg, src, src.Prices(), gateway.Sinks{})
		return j, src.Events(), err
	}
}

func sessionsJob(cfg sessions.Config) func() (*engine.Job, int64, error) {
	return func() (*engine.Job, int64, error) {
		src, err := sessions.NewSource(cfg)
		if err != nil {
			return nil, 0, err
		}
		j, err := sessions.Build(cfg, src, nil)
		return j, src.Clicks(), err
	}
}

var fixtures = []fixture{
	{
		name: "gateway-p1-heap", why: "GatewayMeter mid-stream: open requests with TTL, their timers, pending records, prices broadcast state",
		job:     gatewayJob(gateway.Config{Seed: 1, Events: 3000, Parallelism: 1, MaxParallelism: 128}),
		backend: engine.Heap, stopAt: 0.6,
	},
	{
		name: "gateway-p2-pebble", why: "the same job at parallelism 2 on Pebble",
		job:     gatewayJob(gateway.Config{Seed: 1, Events: 3000, Parallelism: 2, MaxParallelism: 128}),
		backend: engine.Pebble, stopAt: 0.6,
	},
	{
		name: "gateway-p3-heap-zstd", why: "parallelism 3, zstd blocks",
		job:     gatewayJob(gateway.Config{Seed: 2, Events: 6000, Parallelism: 3, MaxParallelism: 128}),
		backend: engine.Heap, stopAt: 0.5, compression: snapshotfmt.CodecZstd,
	},
	{
		name: "gateway-leak-p1-pebble", why: "the leak: every abandoned request's open entry, all past their TTL at the savepoint's time",
		job:     gatewayJob(gateway.Config{Seed: 3, Events: 4000, Parallelism: 1, MaxParallelism: 128, Leak: true}),
		backend: engine.Pebble, stopAt: 1,
	},
	{
		name: "gateway-drained-p2-heap", why: "the end of the input with drain: no open requests, no timers, final usd_total",
		job:     gatewayJob(gateway.Config{Seed: 1, Events: 3000, Parallelism: 2, MaxParallelism: 128}),
		backend: engine.Heap, stopAt: 1, drain: true,
	},
	{
		name: "gateway-window-p2-heap", why: "GatewayMeter's windowed TenantCost mid-stream: one-minute windows' accumulators and their timers under the time-window namespace",
		job:     gatewayJob(gateway.Config{Seed: 1, Events: 3000, Parallelism: 2, MaxParallelism: 128, Window: true}),
		backend: engine.Heap, stopAt: 0.6,
	},
	{
		name: "sessions-p2-heap", why: "SessionFeatures at the end of the input: category counts with TTL, open sessions and their timers",
		job:     sessionsJob(sessions.Config{Seed: 1, Users: 800, Parallelism: 2, MaxParallelism: 128}),
		backend: engine.Heap, stopAt: 1,
	},
	{
		name: "sessions-p3-pebble-maxp720", why: "parallelism 3 on Pebble with 720 key groups, mid-stream",
		job:     sessionsJob(sessions.Config{Seed: 2, Users: 96, Parallelism: 3, MaxParallelism: 720}),
		backend: engine.Pebble, stopAt: 0.5,
	},
	{
		name: "tiny", why: "at most 16 KiB in all, for byte-flip tests: GatewayMeter mid-stream, with every kind of state it has",
		job:     gatewayJob(gateway.Config{Seed: 1, Events: 120, Parallelism: 1, MaxParallelism: 128}),
		backend: engine.Heap, stopAt: 0.5,
	},
}
