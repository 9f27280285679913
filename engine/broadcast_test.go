package engine

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/serializers"
)

// factorSource emits a fixed table of factors at event time 0.
type factorSource struct{}

type factor struct {
	Name  string
	Value int64
}

func (factorSource) Splits() int { return 1 }

func (factorSource) Open(ctx context.Context, _ int, offset int64) (SplitReader[factor], error) {
	return &factorReader{i: int(offset)}, nil
}

type factorReader struct{ i int }

var factors = []factor{{"a", 1}, {"b", 10}, {"c", 100}}

func (r *factorReader) Next(ctx context.Context) (factor, int64, bool, error) {
	if r.i >= len(factors) {
		return factor{}, 0, false, nil
	}
	r.i++
	return factors[r.i-1], 0, true, nil
}

var factorDesc = NewBroadcastMap("factors", serializers.String(), serializers.Int64())

// scaled emits, for each event, the sum of all factors, once the watermark
// shows that the factor table is complete.
type scaled struct {
	factors     *BroadcastState[string, int64]
	writeErrors *[]error
}

func (s *scaled) Open(ctx *OpenContext) error {
	var err error
	s.factors, err = GetBroadcast(ctx, factorDesc)
	return err
}

func (s *scaled) ProcessBroadcastElement(_ *BroadcastContext[int64], f factor) error {
	return s.factors.Put(f.Name, f.Value)
}

func (s *scaled) ProcessElement(ctx *Context[string, int64], e testEvent) error {
	if err := s.factors.Put("x", 1); !errors.Is(err, ErrBroadcastReadOnly) {
		*s.writeErrors = append(*s.writeErrors, err)
	}
	return ctx.RegisterEventTimeTimer(e.TS)
}

func (s *scaled) OnTimer(ctx *Context[string, int64], _ TimerInfo) error {
	var sum int64
	s.factors.Range(func(_ string, v int64) bool { sum += v; return true })
	return ctx.Emit(sum)
}

func broadcastJob(p int, sink Sink[int64], writeErrors *[]error) *Job {
	j := NewJob("scaled", DefaultParallelism(p))
	events := FromSource(j, testSource{splits: 3, n: 500, keys: 11}, Watermarks{Every: 8}, UID("events"))
	table := FromSource(j, factorSource{}, Watermarks{}, UID("factor-source"), Parallelism(1))
	keyed := KeyBy(events, func(e testEvent) string { return e.Key }, serializers.String())
	out := ProcessBroadcast(keyed, Broadcast(table, factorDesc), func() KeyedBroadcastProcessFunction[string, testEvent, factor, int64] {
		return &scaled{writeErrors: writeErrors}
	}, UID("scaled"))
	ToSink(out, sink, UID("sink"))
	return j
}

func TestBroadcastStateIsSharedReadOnlyAndRestored(t *testing.T) {
	var writeErrors []error
	sp := filepath.Join(t.TempDir(), "sp")
	first := NewCollectSink[int64]()
	if _, err := Run(context.Background(), broadcastJob(2, first, &writeErrors), RunOptions{StopAfter: 600, SavepointDir: sp}); err != nil {
		t.Fatal(err)
	}
	second := NewCollectSink[int64]()
	if _, err := Run(context.Background(), broadcastJob(3, second, &writeErrors), RunOptions{Backend: Pebble, RestoreFrom: sp}); err != nil {
		t.Fatal(err)
	}
	if len(writeErrors) > 0 {
		t.Fatalf("writes to broadcast state from the data side were not refused: %v", writeErrors[0])
	}
	all := append(first.Values(), second.Values()...)
	if len(all) == 0 || len(second.Values()) == 0 {
		t.Fatalf("no output after restore (%d before)", len(first.Values()))
	}
	// Timers dedupe per (key, time), so there is at most one output per
	// distinct (key, time); every one must see the whole table.
	if i := slices.IndexFunc(all, func(v int64) bool { return v != 111 }); i >= 0 {
		t.Fatalf("output %d saw factor sum %d, want 111", i, all[i])
	}
}

// lateFactor is one factor at event time 2000, after most of testSource's
// events, so that keyed records come before it.
type lateFactor struct{}

func (lateFactor) Splits() int { return 1 }

func (lateFactor) Open(ctx context.Context, _ int, offset int64) (SplitReader[factor], error) {
	return &lateFactorReader{done: offset > 0}, nil
}

type lateFactorReader struct{ done bool }

func (r *lateFactorReader) Next(ctx context.Context) (factor, int64, bool, error) {
	if r.done {
		return factor{}, 0, false, nil
	}
	r.done = true
	return factor{"late", 1}, 2000, true, nil
}

var lastSeen = state.NewValue("last-seen", serializers.Int64())

// keyedInBroadcast keeps each key's last event time; on a broadcast
// element it reads that state, or registers a timer through a context kept
// from ProcessElement: neither has a key there.
type keyedInBroadcast struct {
	last  state.ValueState[int64]
	timer bool
	kept  *Context[string, int64]
}

func (s *keyedInBroadcast) Open(ctx *OpenContext) (err error) {
	s.last, err = GetValue(ctx, lastSeen)
	return err
}

func (s *keyedInBroadcast) ProcessElement(ctx *Context[string, int64], e testEvent) error {
	s.kept = ctx
	return s.last.Update(e.TS)
}

func (s *keyedInBroadcast) ProcessBroadcastElement(_ *BroadcastContext[int64], _ factor) error {
	if s.timer {
		return s.kept.RegisterEventTimeTimer(5000)
	}
	_, _, err := s.last.Value()
	return err
}

func (s *keyedInBroadcast) OnTimer(*Context[string, int64], TimerInfo) error { return nil }

// Keyed state and timers fail in ProcessBroadcastElement, as in Flink,
// whatever keys the subtask processed before: they used to act for the key
// processed last, a different one at each parallelism.
func TestKeyedStateHasNoKeyInProcessBroadcastElement(t *testing.T) {
	for _, backend := range []BackendKind{Heap, Pebble} {
		for _, timer := range []bool{false, true} {
			for _, p := range []int{1, 2} {
				j := NewJob("keyed-in-broadcast", DefaultParallelism(p))
				events := FromSource(j, testSource{splits: 2, n: 300, keys: 7}, Watermarks{Every: 8}, UID("events"))
				late := FromSource(j, lateFactor{}, Watermarks{Every: 1}, UID("late"), Parallelism(1))
				out := ProcessBroadcast(KeyBy(events, func(e testEvent) string { return e.Key }, serializers.String()), Broadcast(late, factorDesc),
					func() KeyedBroadcastProcessFunction[string, testEvent, factor, int64] {
						return &keyedInBroadcast{timer: timer}
					},
					UID("p"), WithState(lastSeen))
				ToSink(out, NewCollectSink[int64](), UID("sink"))
				_, err := Run(context.Background(), j, RunOptions{Backend: backend, ProcessingTime: DeterministicTime})
				if !errors.Is(err, state.ErrNoCurrentKey) || !strings.Contains(err.Error(), "no key in ProcessBroadcastElement") {
					t.Errorf("%s, timer %v, parallelism %d: %v, want no current key", backend, timer, p, err)
				}
			}
		}
	}
}
