package gateway

import (
	"fmt"
	"time"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/engine/window"
	"github.com/stateproc/stateproc/serializers"
)

// CostWindow is the windowed TenantCost's window: the seeds' one minute.
const CostWindow = time.Minute

// TenantMinute is the accumulator of the windowed TenantCost: what one
// tenant used and owes in one window, kept in the aggregating state
// "window-contents" under the window's namespace.
type TenantMinute struct {
	Requests         int64 `avro:"requests"`
	PromptTokens     int64 `avro:"prompt_tokens"`
	CompletionTokens int64 `avro:"completion_tokens"`
	USDMicros        int64 `avro:"usd_micros"`
}

const tenantMinuteSchema = `{"type":"record","name":"TenantMinute","namespace":"stateproc.examples.gatewaymeter","fields":[
 {"name":"requests","type":"long"},
 {"name":"prompt_tokens","type":"long"},
 {"name":"completion_tokens","type":"long"},
 {"name":"usd_micros","type":"long"}]}`

var tenantMinuteSerializer = mustAvro[TenantMinute](tenantMinuteSchema)

// TenantMinuteSerializer serializes the windowed TenantCost's accumulator.
func TenantMinuteSerializer() serializers.Of[TenantMinute] { return tenantMinuteSerializer }

// tenantMinutes is TenantCost as the seeds' AggregateFunction: each record
// priced as it comes, with the version of its model's price in force at
// its time. The table is the generator's, known when the job is built: an
// aggregate function has no broadcast input to learn it from.
type tenantMinutes struct{ prices map[string]ModelPrices }

func (tenantMinutes) Create() TenantMinute { return TenantMinute{} }

func (a tenantMinutes) Add(r RequestRecord, m TenantMinute) TenantMinute {
	v, _ := a.prices[r.Model].at(r.TS)
	m.Requests++
	m.PromptTokens += int64(r.PromptTokens)
	m.CompletionTokens += int64(r.CompletionTokens)
	m.USDMicros += costMicros(r, v)
	return m
}

func (tenantMinutes) Result(m TenantMinute) TenantMinute { return m }

func (tenantMinutes) Merge(a, b TenantMinute) TenantMinute {
	return TenantMinute{Requests: a.Requests + b.Requests, PromptTokens: a.PromptTokens + b.PromptTokens,
		CompletionTokens: a.CompletionTokens + b.CompletionTokens, USDMicros: a.USDMicros + b.USDMicros}
}

// priceTable is every model's price versions, from the generator's price
// stream.
func priceTable(prices engine.Source[PriceUpdate]) (map[string]ModelPrices, error) {
	ps, ok := prices.(priceSource)
	if !ok {
		return nil, fmt.Errorf("gateway: the windowed TenantCost prices from the generator's price table, not from a %T", prices)
	}
	table := map[string]ModelPrices{}
	for _, u := range ps {
		table[u.Model] = table[u.Model].with(u)
	}
	for _, m := range []string{ModelA, ModelB} {
		if len(table[m].Versions) == 0 {
			return nil, fmt.Errorf("gateway: no price for %s", m)
		}
	}
	return table, nil
}

// tenantCostWindow is TenantCost over one-minute event-time windows: per
// tenant and window, a TenantTotal at the window's last millisecond whose
// USDMicrosTotal is what the tenant owes for that window.
func tenantCostWindow(records engine.Stream[RequestRecord], prices engine.Source[PriceUpdate], opts []engine.OperatorOption) (engine.Stream[TenantTotal], error) {
	table, err := priceTable(prices)
	if err != nil {
		return engine.Stream[TenantTotal]{}, err
	}
	ws := window.Of(engine.KeyBy(records, func(r RequestRecord) string { return r.TenantID }, serializers.String()), window.TumblingEventTime(CostWindow))
	return window.AggregateWith(ws, window.AggregateFunction[RequestRecord, TenantMinute, TenantMinute](tenantMinutes{table}), tenantMinuteSerializer,
		func(ctx *window.Context[string, TenantTotal], m TenantMinute) error {
			return ctx.Emit(TenantTotal{TenantID: ctx.Key(), TS: window.MaxTimestamp(ctx.Window()), USDMicrosTotal: m.USDMicros})
		}, opts...), nil
}

// ExpectedWindowTotals is what the windowed variant emits over the whole
// input, computed without the engine.
func (s *Source) ExpectedWindowTotals() []TenantTotal {
	table, _ := priceTable(s.Prices())
	type tw struct {
		tenant string
		end    int64
	}
	sums := map[tw]int64{}
	for _, r := range s.Records() {
		w := window.TumblingEventTime(CostWindow).Assign(nil, r.TS, 0)[0]
		v, _ := table[r.Model].at(r.TS)
		sums[tw{r.TenantID, window.MaxTimestamp(w)}] += costMicros(r, v)
	}
	out := make([]TenantTotal, 0, len(sums))
	for k, usd := range sums {
		out = append(out, TenantTotal{TenantID: k.tenant, TS: k.end, USDMicrosTotal: usd})
	}
	return out
}
