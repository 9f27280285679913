package gateway

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/stateproc/stateproc/engine"
)

// PriceVersion is a model's price from a point in event time on, in
// micro-dollars per 1000 tokens.
type PriceVersion struct {
	EffectiveFrom     int64 `avro:"effective_from"`
	InputMicrosPer1K  int64 `avro:"input_micros_per_1k"`
	OutputMicrosPer1K int64 `avro:"output_micros_per_1k"`
}

// PriceUpdate is an element of the price stream: a new version of one
// model's price.
type PriceUpdate struct {
	Model string
	PriceVersion
}

// ModelPrices is the value of the `prices` broadcast state: every version
// of one model's price, sorted by EffectiveFrom, so that a record can be
// priced with the version in force at its time whenever it is priced.
type ModelPrices struct {
	Model    string         `avro:"model"`
	Versions []PriceVersion `avro:"versions"`
}

const modelPricesSchema = `{"type":"record","name":"ModelPrices","namespace":"stateproc.examples.gatewaymeter","fields":[
 {"name":"model","type":"string"},
 {"name":"versions","type":{"type":"array","items":{"type":"record","name":"PriceVersion","fields":[
  {"name":"effective_from","type":{"type":"long","logicalType":"timestamp-millis"}},
  {"name":"input_micros_per_1k","type":"long"},
  {"name":"output_micros_per_1k","type":"long"}]}}}]}`

// with returns the prices with update u applied: its version added,
// replacing one with the same EffectiveFrom. The result does not depend on
// the order updates arrive in, and its versions are a new slice: the old
// one may be the value broadcast state holds.
func (m ModelPrices) with(u PriceUpdate) ModelPrices {
	v := u.PriceVersion
	vs := slices.DeleteFunc(slices.Clone(m.Versions), func(o PriceVersion) bool { return o.EffectiveFrom == v.EffectiveFrom })
	i, _ := slices.BinarySearchFunc(vs, v.EffectiveFrom, func(o PriceVersion, t int64) int { return cmp.Compare(o.EffectiveFrom, t) })
	return ModelPrices{Model: u.Model, Versions: slices.Insert(vs, i, v)}
}

// at returns the version in force at ts.
func (m ModelPrices) at(ts int64) (PriceVersion, bool) {
	i, found := slices.BinarySearchFunc(m.Versions, ts, func(o PriceVersion, t int64) int { return cmp.Compare(o.EffectiveFrom, t) })
	if found {
		return m.Versions[i], true
	}
	if i == 0 {
		return PriceVersion{}, false
	}
	return m.Versions[i-1], true
}

// costMicros is what a record costs at price v, in micro-dollars, with
// integer arithmetic so that totals do not depend on summation order. An
// abandoned request produced no completion and is billed its prompt only.
func costMicros(r RequestRecord, v PriceVersion) int64 {
	c := int64(r.PromptTokens) * v.InputMicrosPer1K
	if r.Status != StatusAbandoned {
		c += int64(r.CompletionTokens) * v.OutputMicrosPer1K
	}
	return c / 1000
}

// PriceUpdates is the price stream of this input, in event-time order: the
// list prices from Epoch, and a cut of model-a's price half way through the
// requests, or an hour in for an input without end.
func (s *Source) PriceUpdates() []PriceUpdate {
	change := Epoch + s.requests/2*StartEvery
	if s.events == 0 {
		change = Epoch + 3600_000
	}
	return []PriceUpdate{
		{Model: ModelA, PriceVersion: PriceVersion{EffectiveFrom: Epoch, InputMicrosPer1K: 2500, OutputMicrosPer1K: 10000}},
		{Model: ModelB, PriceVersion: PriceVersion{EffectiveFrom: Epoch, InputMicrosPer1K: 500, OutputMicrosPer1K: 1500}},
		{Model: ModelA, PriceVersion: PriceVersion{EffectiveFrom: change, InputMicrosPer1K: 2000, OutputMicrosPer1K: 8000}},
	}
}

// Prices returns the price stream as a source of one split; each update's
// event time is its EffectiveFrom.
func (s *Source) Prices() engine.Source[PriceUpdate] { return priceSource(s.PriceUpdates()) }

type priceSource []PriceUpdate

func (p priceSource) Splits() int { return 1 }

func (p priceSource) Open(ctx context.Context, split int, offset int64) (engine.SplitReader[PriceUpdate], error) {
	if split != 0 || offset < 0 || offset > int64(len(p)) {
		return nil, fmt.Errorf("gateway: prices: split %d at offset %d", split, offset)
	}
	r := priceReader(p[offset:])
	return &r, nil
}

type priceReader []PriceUpdate

func (r *priceReader) Next(ctx context.Context) (PriceUpdate, int64, bool, error) {
	if len(*r) == 0 {
		return PriceUpdate{}, 0, false, nil
	}
	u := (*r)[0]
	*r = (*r)[1:]
	return u, u.EffectiveFrom, true, nil
}
