package gateway

import (
	"fmt"
	"slices"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/examples/internal/discard"
	"github.com/stateproc/stateproc/serializers"
)

// Operator uids: the names under which savepoints hold their state.
const (
	EventsUID     = "events"
	PricesUID     = "prices"
	AssembleUID   = "assemble"
	TenantCostUID = "tenant-cost"
	TotalsSinkUID = "tenant-totals-sink"
	RecordSinkUID = "request-records-sink"
)

// State names.
const (
	OpenState     = "open"
	USDTotalState = "usd_total"
	PendingState  = "pending"
	PricesState   = "prices"
)

var (
	openRequestSerializer   = mustAvro[OpenRequest](openRequestSchema)
	requestRecordSerializer = mustAvro[RequestRecord](requestRecordSchema)
	modelPricesSerializer   = mustAvro[ModelPrices](modelPricesSchema)

	usdTotalDesc = state.NewValue(USDTotalState, serializers.Int64())
	pendingDesc  = state.NewList(PendingState, requestRecordSerializer, state.WithNamespace(serializers.Int64()))
	pricesDesc   = engine.NewBroadcastMap(PricesState, serializers.String(), modelPricesSerializer)
)

func mustAvro[T any](schema string) serializers.Of[T] {
	s, err := serializers.Avro[T](schema)
	if err != nil {
		panic(fmt.Sprintf("gateway: schema: %v", err))
	}
	return s
}

// OpenTTLConfig is the TTL of `open`. The stage-6 job keeps it as a
// backstop behind the timer, cleaned up in full snapshots and by Pebble's
// sweeper. The sweeper's budget is small because `open` is small and
// churns: what a sweep step walks is mostly the deletion tombstones of
// completed requests, so the cost of a step grows with its budget, while
// ten live entries per step (a step every 1024 records) still cover the
// whole state in minutes of event time, well within a TTL of an hour.
// The leak variant keeps the TTL, so entries carry timestamps, but no
// cleanup: an entry that nobody reads stays.
func OpenTTLConfig(leak bool) state.TTLConfig {
	c := state.TTL(OpenTTL)
	if !leak {
		c.CleanupFullSnapshot = true
		c.SweepBudget = 10
	}
	return c
}

// OpenRequestSerializer serializes `open` values, for tests and tools that
// read savepoints.
func OpenRequestSerializer() serializers.Of[OpenRequest] { return openRequestSerializer }

// ModelPricesSerializer serializes `prices` values.
func ModelPricesSerializer() serializers.Of[ModelPrices] { return modelPricesSerializer }

// RequestRecordSerializer serializes `pending` elements.
func RequestRecordSerializer() serializers.Of[RequestRecord] { return requestRecordSerializer }

// Sinks receive the job's outputs; a nil sink discards.
type Sinks struct {
	Totals  engine.Sink[TenantTotal]
	Records engine.Sink[RequestRecord]
}

// Build builds GatewayMeter over the given event and price streams (a
// Source and its Prices, or wrappers of them). Both sinks are always part
// of the job, so that its savepoints have the same operators whichever
// outputs a run keeps.
func Build(cfg Config, events engine.Source[Event], prices engine.Source[PriceUpdate], sinks Sinks) (*engine.Job, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	name := "gatewaymeter"
	if cfg.Leak {
		name += "-leak"
	}
	if cfg.Window {
		name += "-window"
	}
	j := engine.NewJob(name, engine.DefaultParallelism(cfg.Parallelism))
	var keyed []engine.OperatorOption
	if cfg.MaxParallelism > 0 {
		keyed = append(keyed, engine.MaxParallelism(cfg.MaxParallelism))
	}

	ev := engine.FromSource(j, events, engine.Watermarks{}, engine.UID(EventsUID), engine.Name("GatewayEvents"))
	openDesc := state.NewValue(OpenState, openRequestSerializer, state.WithTTL(OpenTTLConfig(cfg.Leak)))
	records := engine.Process(
		engine.KeyBy(ev, func(e Event) string { return e.RequestID }, serializers.String()),
		func() engine.KeyedProcessFunction[string, Event, RequestRecord] {
			return &assembler{desc: openDesc, leak: cfg.Leak}
		},
		slices.Concat(keyed, []engine.OperatorOption{engine.UID(AssembleUID), engine.Name("RequestAssembler"), engine.WithState(openDesc)})...)

	var totals engine.Stream[TenantTotal]
	if cfg.Window {
		var err error
		if totals, err = tenantCostWindow(records, prices, slices.Concat(keyed, []engine.OperatorOption{engine.UID(TenantCostUID), engine.Name("TenantCost")})); err != nil {
			return nil, err
		}
	} else {
		totals = tenantCostTotal(j, records, prices, keyed)
	}

	engine.ToSink(totals, orDiscard(sinks.Totals), engine.UID(TotalsSinkUID), engine.Name("TenantTotals"))
	engine.ToSink(records, orDiscard(sinks.Records), engine.UID(RecordSinkUID), engine.Name("RequestRecords"))
	return j, j.Validate()
}

// tenantCostTotal is TenantCost with a running total per tenant.
func tenantCostTotal(j *engine.Job, records engine.Stream[RequestRecord], prices engine.Source[PriceUpdate], keyed []engine.OperatorOption) engine.Stream[TenantTotal] {
	// The price stream is tiny and read by one subtask in order.
	pr := engine.FromSource(j, prices, engine.Watermarks{}, engine.UID(PricesUID), engine.Name("PriceTable"), engine.Parallelism(1))
	return engine.ProcessBroadcast(
		engine.KeyBy(records, func(r RequestRecord) string { return r.TenantID }, serializers.String()),
		engine.Broadcast(pr, pricesDesc),
		func() engine.KeyedBroadcastProcessFunction[string, RequestRecord, PriceUpdate, TenantTotal] {
			return &tenantCost{}
		},
		slices.Concat(keyed, []engine.OperatorOption{engine.UID(TenantCostUID), engine.Name("TenantCost"), engine.WithState(usdTotalDesc, pendingDesc)})...)
}

// orDiscard returns s, or a sink that drops everything.
func orDiscard[T any](s engine.Sink[T]) engine.Sink[T] {
	if s == nil {
		return discard.Sink[T]{}
	}
	return s
}
