package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// The card-fraud job of these tests has the shape that exposed the engine's
// time model: an Avro record key, event times skewed between several
// splits read at uneven speeds, a TTL'd MapState and a TTL'd ListState with
// every cleanup strategy on, event-time timers that write state, and a
// broadcast stream of rules, some dated far in the future.

// cardKey is the job's key, serialized as an Avro record.
type cardKey struct {
	Bank   string `avro:"bank"`
	Number int64  `avro:"number"`
}

var cardKeySerializer = mustAvro[cardKey](`{"type":"record","name":"CardKey","namespace":"stateproc.enginetest","fields":[
 {"name":"bank","type":"string"},{"name":"number","type":"long"}]}`)

type txn struct {
	Card     cardKey
	Merchant string
	Amount   int64
	TS       int64
}

// rule sets the alert threshold of one kind of check.
type rule struct {
	ID    string
	Limit int64
	TS    int64
}

type alert struct {
	Card   cardKey
	TS     int64
	Reason string
	Value  int64
}

func (a alert) String() string {
	return fmt.Sprintf("%s/%d@%d:%s=%d", a.Card.Bank, a.Card.Number, a.TS, a.Reason, a.Value)
}

// fraudEpoch is the event time of the first transaction: 2026-02-01 00:00.
const fraudEpoch int64 = 1769904000000

const (
	merchantTTL = 40 * time.Minute
	recentTTL   = 20 * time.Minute
	// idleAfter is the event-time timer that trims a card's recent list.
	idleAfter = 10 * time.Minute
)

func fraudTTL(d time.Duration) ttl.Config {
	c := ttl.New(d)
	c.CleanupFullSnapshot = true
	c.CleanupIncremental = 5
	c.SweepBudget = 50
	return c
}

var (
	merchantDesc = state.NewMap("merchant-counts", serializers.String(), serializers.Int64(), state.WithTTL(fraudTTL(merchantTTL)))
	recentDesc   = state.NewList("recent", serializers.Int64(), state.WithTTL(fraudTTL(recentTTL)))
	rulesDesc    = NewBroadcastMap("rules", serializers.String(), serializers.Int64())
)

// txnSource has splits of n transactions each. Split s advances in event
// time at its own pace, 2+1.5*s seconds a transaction, so the splits drift
// apart in event time; 4 splits over 3 subtasks also give one subtask two
// of them, read at half the pace of the others. Card c belongs to split c
// mod splits, as a topic partitioned by card would have it, so that every
// card's transactions come in one order.
type txnSource struct {
	splits, n, cards int
}

func (s txnSource) Splits() int { return s.splits }

func (s txnSource) Open(ctx context.Context, split int, offset int64) (SplitReader[txn], error) {
	return &txnReader{s: s, split: split, i: int(offset)}, nil
}

func (s txnSource) total() int64 { return int64(s.splits * s.n) }

type txnReader struct {
	s     txnSource
	split int
	i     int
}

func (r *txnReader) Next(ctx context.Context) (txn, int64, bool, error) {
	if r.i >= r.s.n {
		return txn{}, 0, false, nil
	}
	i, s := int64(r.i), int64(r.split)
	perSplit := int64(r.s.cards / r.s.splits)
	card := s + int64(r.s.splits)*((i*7+i/3)%perSplit)
	ts := fraudEpoch + i*(2000+1500*s) + (i*37)%1000
	t := txn{
		Card:     cardKey{Bank: fmt.Sprintf("bank-%d", card%3), Number: 4000_0000 + card},
		Merchant: fmt.Sprintf("m-%d", (i*11+s)%9),
		Amount:   100 + (i*97+s*13)%5000,
		TS:       ts,
	}
	r.i++
	return t, ts, true, nil
}

// ruleSource is the broadcast stream: the rules in order, some dated hours
// ahead of every transaction.
type ruleSource []rule

func (s ruleSource) Splits() int { return 1 }

func (s ruleSource) Open(ctx context.Context, _ int, offset int64) (SplitReader[rule], error) {
	return &ruleReader{s: s, i: int(offset)}, nil
}

type ruleReader struct {
	s ruleSource
	i int
}

func (r *ruleReader) Next(ctx context.Context) (rule, int64, bool, error) {
	if r.i >= len(r.s) {
		return rule{}, 0, false, nil
	}
	x := r.s[r.i]
	r.i++
	return x, x.TS, true, nil
}

// fraudRules start with the limits, then change them; two changes are
// dated five hours ahead.
var fraudRules = ruleSource{
	{ID: "merchant", Limit: 3, TS: fraudEpoch},
	{ID: "burst", Limit: 4, TS: fraudEpoch + 1},
	{ID: "amount", Limit: 4000, TS: fraudEpoch + 2},
	{ID: "burst", Limit: 5, TS: fraudEpoch + 5*time.Hour.Milliseconds()},
	{ID: "merchant", Limit: 4, TS: fraudEpoch + 5*time.Hour.Milliseconds() + 1},
}

// fraudCheck keys transactions by card. Per card it counts transactions per
// merchant (TTL'd map) and keeps the amounts of recent ones (TTL'd list);
// an alert goes out when a count or the list passes a rule's limit. An
// event-time timer idleAfter past each transaction trims the list to the
// amounts above the "amount" rule's limit, in the natural Flink style:
// state written from a timer.
type fraudCheck struct {
	merchants state.MapState[string, int64]
	recent    state.ListState[int64]
	rules     *BroadcastState[string, int64]
	// observe, when set, sees every call's processing time.
	observe func(subtask int, what string, now int64)
	subtask int
}

func (f *fraudCheck) Open(ctx *OpenContext) (err error) {
	f.subtask = ctx.Subtask()
	if f.merchants, err = GetMap(ctx, merchantDesc); err != nil {
		return err
	}
	if f.recent, err = GetList(ctx, recentDesc); err != nil {
		return err
	}
	f.rules, err = GetBroadcast(ctx, rulesDesc)
	return err
}

func (f *fraudCheck) limit(id string) (int64, error) {
	v, ok, err := f.rules.Get(id)
	if err != nil || !ok {
		return 1 << 62, err
	}
	return v, nil
}

func (f *fraudCheck) ProcessElement(ctx *Context[cardKey, alert], t txn) error {
	if f.observe != nil {
		f.observe(f.subtask, "record", ctx.CurrentProcessingTime())
	}
	n, _, err := f.merchants.Get(t.Merchant)
	if err != nil {
		return err
	}
	n++
	if err := f.merchants.Put(t.Merchant, n); err != nil {
		return err
	}
	if lim, err := f.limit("merchant"); err != nil {
		return err
	} else if n > lim {
		if err := ctx.Emit(alert{Card: t.Card, TS: t.TS, Reason: "merchant:" + t.Merchant, Value: n}); err != nil {
			return err
		}
	}
	recent, err := f.recent.Get()
	if err != nil {
		return err
	}
	if lim, err := f.limit("burst"); err != nil {
		return err
	} else if int64(len(recent)+1) > lim {
		if err := ctx.Emit(alert{Card: t.Card, TS: t.TS, Reason: "burst", Value: int64(len(recent) + 1)}); err != nil {
			return err
		}
	}
	if err := f.recent.Add(t.Amount); err != nil {
		return err
	}
	return ctx.RegisterEventTimeTimer(t.TS + idleAfter.Milliseconds())
}

func (f *fraudCheck) OnTimer(ctx *Context[cardKey, alert], tm TimerInfo) error {
	if f.observe != nil {
		f.observe(f.subtask, "timer", ctx.CurrentProcessingTime())
	}
	recent, err := f.recent.Get()
	if err != nil {
		return err
	}
	lim, err := f.limit("amount")
	if err != nil {
		return err
	}
	kept := slices.DeleteFunc(recent, func(a int64) bool { return a <= lim })
	if len(kept) > 0 {
		if err := ctx.Emit(alert{Card: ctx.Key(), TS: tm.Timestamp, Reason: "large", Value: int64(len(kept))}); err != nil {
			return err
		}
	}
	return f.recent.Update(kept)
}

func (f *fraudCheck) ProcessBroadcastElement(ctx *BroadcastContext[alert], r rule) error {
	return f.rules.Put(r.ID, r.Limit)
}

// fraudJob builds the job at parallelism p. observe may be nil.
func fraudJob(src Source[txn], rules ruleSource, p int, sink Sink[alert], observe func(int, string, int64)) *Job {
	j := NewJob("card-fraud", DefaultParallelism(p))
	txns := FromSource(j, src, Watermarks{OutOfOrderness: 5 * time.Second, Every: 32}, UID("transactions"))
	rs := FromSource(j, rules, Watermarks{Every: 1}, UID("rules"), Parallelism(1))
	alerts := ProcessBroadcast(
		KeyBy(txns, func(t txn) cardKey { return t.Card }, cardKeySerializer),
		Broadcast(rs, rulesDesc),
		func() KeyedBroadcastProcessFunction[cardKey, txn, rule, alert] {
			return &fraudCheck{observe: observe}
		},
		UID("fraud"), WithState(merchantDesc, recentDesc), MaxParallelism(128))
	ToSink(alerts, sink, UID("alerts"))
	return j
}

func sortedAlerts(as []alert) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	slices.Sort(out)
	return out
}

// diffCount counts the lines of a and b, both sorted, that the other lacks.
func diffCount(a, b []string) int {
	n, i, j := 0, 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || i < len(a) && a[i] < b[j]:
			n++
			i++
		case i >= len(a) || b[j] < a[i]:
			n++
			j++
		default:
			i++
			j++
		}
	}
	return n
}
