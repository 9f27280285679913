package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

const sweepTTL = time.Second

// Two states with the same short TTL and no cleanup in full snapshots:
// only the first has a sweep budget.
var (
	sweptDesc   = state.NewValue("swept", serializers.Int64(), state.WithTTL(sweptTTL()))
	unsweptDesc = state.NewValue("unswept", serializers.Int64(), state.WithTTL(ttl.New(sweepTTL)))
)

func sweptTTL() ttl.Config {
	c := ttl.New(sweepTTL)
	c.SweepBudget = 64
	return c
}

// writeBoth writes every record's time into both states under its key.
type writeBoth struct {
	NoTimers[string, struct{}]
	swept, unswept state.ValueState[int64]
}

func (w *writeBoth) Open(ctx *OpenContext) (err error) {
	if w.swept, err = GetValue(ctx, sweptDesc); err != nil {
		return err
	}
	w.unswept, err = GetValue(ctx, unsweptDesc)
	return err
}

func (w *writeBoth) ProcessElement(_ *Context[string, struct{}], e testEvent) error {
	if err := w.swept.Update(e.TS); err != nil {
		return err
	}
	return w.unswept.Update(e.TS)
}

// On Pebble the runtime steps the TTL sweeper as records pass, at the
// subtask's processing time, here the watermark: entries that expired long before the end of the input are
// gone from the state with a sweep budget, while the state without one,
// which nothing else cleans up, keeps them. Entries alive at the last sweep
// stay in both.
func TestSweeperRemovesExpiredEntriesInARunningJob(t *testing.T) {
	const old, live, fresh = 300, 16, 20
	var events []testEvent
	for i := range old {
		events = append(events, testEvent{Key: fmt.Sprintf("old-%03d", i), TS: int64(i)})
	}
	// Enough records for several sweeps, all after the old entries expire,
	// rewriting a few live keys far more often than the TTL. The fresh keys
	// are written once, shortly before the last sweep.
	start := int64(old) + sweepTTL.Milliseconds()
	freshAt := 7*sweepEvery + sweepEvery/2
	for i := range 8 * sweepEvery {
		key := fmt.Sprintf("live-%02d", i%live)
		if i >= freshAt && i < freshAt+fresh {
			key = fmt.Sprintf("fresh-%02d", i-freshAt)
		}
		events = append(events, testEvent{Key: key, TS: start + int64(i)})
	}

	j := NewJob("sweep")
	in := FromSource(j, sliceSource(events), Watermarks{}, UID("events"))
	Process(KeyBy(in, func(e testEvent) string { return e.Key }, serializers.String()),
		func() KeyedProcessFunction[string, testEvent, struct{}] { return &writeBoth{} },
		UID("ttl"), WithState(sweptDesc, unsweptDesc), MaxParallelism(128))
	sp := filepath.Join(t.TempDir(), "sp")
	if _, err := Run(context.Background(), j, RunOptions{Backend: Pebble, ProcessingTime: DeterministicTime, SavepointDir: sp}); err != nil {
		t.Fatal(err)
	}

	r := sptest.Open(t, sp)
	now := r.Metadata().CreatedAt
	unswept := sptest.Entries(t, r, "ttl", unsweptDesc.Spec().Name)
	expired := 0
	for _, e := range unswept {
		if ts, _ := sptest.SplitTTL(t, e.Value); ttl.Expired(ts, sweepTTL.Milliseconds(), now) {
			expired++
		}
	}
	if len(unswept) != old+live+fresh || expired != old {
		t.Fatalf("the state without a sweep budget holds %d entries, %d of them expired; want all %d written, the %d old ones expired",
			len(unswept), expired, old+live+fresh, old)
	}
	var want []string
	for i := range fresh {
		want = append(want, fmt.Sprintf("fresh-%02d", i))
	}
	for i := range live {
		want = append(want, fmt.Sprintf("live-%02d", i))
	}
	if keys := sptest.Keys(sptest.Entries(t, r, "ttl", sweptDesc.Spec().Name)); !slices.Equal(keys, want) {
		t.Fatalf("the state with a sweep budget holds %d keys (%v...), want the %d live and fresh ones", len(keys), keys[:min(3, len(keys))], len(want))
	}
}
