package gateway

import (
	"fmt"
	"slices"
	"sort"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/engine/state"
)

// tenantCost is TenantCost, keyed by tenant_id and connected to the price
// stream. A record must be priced with the version in force at its time,
// but price updates and records reach a subtask in any interleaving. So it
// is a temporal join: a record waits in `pending` until the watermark,
// which the price stream holds back until it has delivered every update up
// to that time, passes the record's time; then the timer at that time
// prices it. Timers fire in time order and `pending` is kept sorted by
// request_id, so records are priced in (time, request_id) order and every
// running total is the same whatever the arrival order.
//
// `pending` is a list state whose namespace is the records' time: the timer
// at t reads and clears exactly the records of t. One list per tenant,
// rewritten on every record, would make each access on Pebble step over
// every version of the list that its memtable holds.
type tenantCost struct {
	total   state.ValueState[int64]
	pending state.ListState[RequestRecord]
	prices  *engine.BroadcastState[string, ModelPrices]
}

func (c *tenantCost) Open(ctx *engine.OpenContext) error {
	var err error
	if c.total, err = engine.GetValue(ctx, usdTotalDesc); err != nil {
		return err
	}
	if c.pending, err = engine.GetList(ctx, pendingDesc); err != nil {
		return err
	}
	c.prices, err = engine.GetBroadcast(ctx, pricesDesc)
	return err
}

// ProcessElement keeps each list sorted by request_id, not in arrival
// order, so that what a savepoint holds does not depend on how the
// assemblers' outputs interleaved. Most lists hold one record.
func (c *tenantCost) ProcessElement(ctx *engine.Context[string, TenantTotal], r RequestRecord) error {
	if err := c.pending.SetNamespace(r.TS); err != nil {
		return err
	}
	pending, err := c.pending.Get()
	if err != nil {
		return err
	}
	i := sort.Search(len(pending), func(k int) bool { return r.RequestID < pending[k].RequestID })
	if i == len(pending) {
		err = c.pending.Add(r)
	} else {
		err = c.pending.Update(slices.Insert(pending, i, r))
	}
	if err != nil {
		return err
	}
	return ctx.RegisterEventTimeTimer(r.TS)
}

// OnTimer prices the records of the timer's time.
func (c *tenantCost) OnTimer(ctx *engine.Context[string, TenantTotal], t engine.TimerInfo) error {
	if err := c.pending.SetNamespace(t.Timestamp); err != nil {
		return err
	}
	pending, err := c.pending.Get()
	if err != nil || len(pending) == 0 {
		return err
	}
	total, _, err := c.total.Value()
	if err != nil {
		return err
	}
	for _, r := range pending {
		cost, err := c.cost(r)
		if err != nil {
			return err
		}
		total += cost
		if err := ctx.Emit(TenantTotal{TenantID: r.TenantID, TS: r.TS, USDMicrosTotal: total}); err != nil {
			return err
		}
	}
	if err := c.total.Update(total); err != nil {
		return err
	}
	return c.pending.Clear()
}

func (c *tenantCost) cost(r RequestRecord) (int64, error) {
	prices, ok, err := c.prices.Get(r.Model)
	if err != nil {
		return 0, err
	}
	v, found := prices.at(r.TS)
	if !ok || !found {
		return 0, fmt.Errorf("gateway: no price for %s at %d (request %s)", r.Model, r.TS, r.RequestID)
	}
	return costMicros(r, v), nil
}

// ProcessBroadcastElement adds a price version. Every subtask applies the
// same updates and, since a version's place depends only on its time, ends
// with the same table in whatever order they come.
func (c *tenantCost) ProcessBroadcastElement(_ *engine.BroadcastContext[TenantTotal], u PriceUpdate) error {
	prices, _, err := c.prices.Get(u.Model)
	if err != nil {
		return err
	}
	return c.prices.Put(u.Model, prices.with(u))
}
