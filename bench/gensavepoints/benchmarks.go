package main

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway"
	"github.com/stateproc/stateproc/examples/sessionfeatures/sessions"
)

// The shape both benchmark savepoints share.
const (
	parallelism    = 2
	maxParallelism = 128
	backend        = engine.Pebble
)

// Full sizes: 1,000,000 users; 5,000,000 requests, of which 2% are
// abandoned and emit one event instead of two.
const (
	sessionUsers  = 1_000_000
	gatewayEvents = 9_900_000
)

// benchmark is one savepoint to generate.
type benchmark struct {
	name string
	// build returns the job at scale, its input size, and a line that says
	// what it is; read counts the input records as they are read.
	build func(scale float64, read *atomic.Int64) (*engine.Job, int64, string, error)
}

var benchmarks = []benchmark{
	{name: "sessions-large", build: buildSessions},
	{name: "gateway-large", build: buildGateway},
}

func scaled(n int64, scale float64, least int64) int64 {
	return max(least, int64(math.Round(float64(n)*scale)))
}

func buildSessions(scale float64, read *atomic.Int64) (*engine.Job, int64, string, error) {
	cfg := sessions.Config{Seed: 1, Users: scaled(sessionUsers, scale, sessions.MinUsers), Parallelism: parallelism, MaxParallelism: maxParallelism}
	src, err := sessions.NewSource(cfg)
	if err != nil {
		return nil, 0, "", err
	}
	j, err := sessions.Build(cfg, counted[sessions.Click]{src, read}, nil)
	return j, src.Clicks(), fmt.Sprintf("SessionFeatures, %d users, %d clicks", cfg.Users, src.Clicks()), err
}

func buildGateway(scale float64, read *atomic.Int64) (*engine.Job, int64, string, error) {
	cfg := gateway.Config{Seed: 1, Events: scaled(gatewayEvents, scale, gateway.MinEvents), Parallelism: parallelism, MaxParallelism: maxParallelism, Leak: true}
	src, err := gateway.NewSource(cfg)
	if err != nil {
		return nil, 0, "", err
	}
	j, err := gateway.Build(cfg, counted[gateway.Event]{src, read}, src.Prices(), gateway.Sinks{})
	return j, src.Events(), fmt.Sprintf("GatewayMeter leak variant, %d events, %d requests, %d abandoned", src.Events(), src.Requests(), src.Abandoned()), err
}
