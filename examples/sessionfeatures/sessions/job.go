package sessions

import (
	"fmt"
	"strconv"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/examples/internal/discard"
	"github.com/stateproc/stateproc/serializers"
)

// Operator uids.
const (
	ClicksUID    = "clicks"
	FeaturesUID  = "session-features"
	SummariesUID = "session-summaries-sink"
)

// State names.
const (
	SessionState = "session"
	CountsState  = "category-counts"
)

var (
	sessionAggSerializer = mustAvro[SessionAgg](sessionAggSchema)

	sessionDesc = state.NewValue(SessionState, sessionAggSerializer)
	countsDesc  = state.NewMap(CountsState, serializers.String(), serializers.Int64(), state.WithTTL(CountsTTLConfig()))
)

func mustAvro[T any](schema string) serializers.Of[T] {
	s, err := serializers.Avro[T](schema)
	if err != nil {
		panic(fmt.Sprintf("sessions: schema: %v", err))
	}
	return s
}

// CountsTTLConfig is the TTL of `category-counts`: the seed's, a category
// untouched for a week is forgotten, swept on Pebble 1000 entries at a
// time.
func CountsTTLConfig() state.TTLConfig {
	c := state.TTL(CountsTTL)
	c.SweepBudget = 1000
	return c
}

// SessionAggSerializer serializes `session` values, for tests and tools
// that read savepoints.
func SessionAggSerializer() serializers.Of[SessionAgg] { return sessionAggSerializer }

// Build builds SessionFeatures over the given clickstream (a Source, or a
// wrapper of one). A nil sink discards the summaries; the sink is part of
// the job either way, so that savepoints have the same operators.
func Build(cfg Config, clicks engine.Source[Click], sink engine.Sink[SessionSummary]) (*engine.Job, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if sink == nil {
		sink = discard.Sink[SessionSummary]{}
	}
	j := engine.NewJob("sessionfeatures", engine.DefaultParallelism(cfg.Parallelism))
	opts := []engine.OperatorOption{engine.UID(FeaturesUID), engine.Name("SessionFeatures"), engine.WithState(sessionDesc, countsDesc)}
	if cfg.MaxParallelism > 0 {
		opts = append(opts, engine.MaxParallelism(cfg.MaxParallelism))
	}
	cs := engine.FromSource(j, clicks, engine.Watermarks{}, engine.UID(ClicksUID), engine.Name("Clicks"))
	summaries := engine.Process(
		engine.KeyBy(cs, func(c Click) string { return c.UserID }, serializers.String()),
		func() engine.KeyedProcessFunction[string, Click, SessionSummary] { return &features{} },
		opts...)
	engine.ToSink(summaries, sink, engine.UID(SummariesUID), engine.Name("SessionSummaries"))
	return j, j.Validate()
}

// FormatSummary is the file sink's line for a SessionSummary:
// user_id,start_ts,last_ts,clicks.
func FormatSummary(v SessionSummary, _ int64) ([]byte, error) {
	b := append([]byte(v.UserID), ',')
	b = append(strconv.AppendInt(b, v.StartTS, 10), ',')
	b = append(strconv.AppendInt(b, v.LastTS, 10), ',')
	return strconv.AppendInt(b, int64(v.Clicks), 10), nil
}
