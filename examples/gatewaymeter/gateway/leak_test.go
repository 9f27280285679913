package gateway

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/ttl"
)

// abandonedIDs lists the requests the generator never completes.
func (s *Source) abandonedIDs() []string {
	var ids []string
	for split := range s.plans {
		for j := int64(0); j < s.plans[split].requests(); j++ {
			if r := s.request(split, j); r.abandoned {
				ids = append(ids, requestID(r.index))
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// In the leak variant every abandoned request leaves its `open` entry
// behind, past its TTL and still there, because nothing reads it. The
// savepoint is taken under DeterministicTime, whose processing time is the
// watermark: the entry is stamped with the watermark of its start.
func TestLeakKeepsEveryAbandonedRequest(t *testing.T) {
	for _, backend := range []engine.BackendKind{engine.Heap, engine.Pebble} {
		t.Run(string(backend), func(t *testing.T) {
			cfg := Config{Seed: 21, Events: 20000, Parallelism: 2, Leak: true}
			src, err := NewSource(cfg)
			if err != nil {
				t.Fatal(err)
			}
			sp := filepath.Join(t.TempDir(), "sp")
			run(t, cfg, Sinks{}, engine.RunOptions{Backend: backend, ProcessingTime: engine.DeterministicTime, StopAfter: src.Events(), SavepointDir: sp})
			r := sptest.Open(t, sp)
			open := sptest.Entries(t, r, AssembleUID, OpenState)
			if int64(len(open)) != src.Abandoned() || src.Abandoned() == 0 {
				t.Fatalf("%d open entries, the generator abandoned %d requests", len(open), src.Abandoned())
			}
			if got, want := sptest.Keys(open), src.abandonedIDs(); !slices.Equal(got, want) {
				t.Fatalf("open entries are not the abandoned requests: %v... vs %v...", got[:3], want[:3])
			}
			now := r.Metadata().CreatedAt
			for _, e := range open {
				ts, v := sptest.SplitTTL(t, e.Value)
				o, err := OpenRequestSerializer().Decode(v)
				if err != nil {
					t.Fatal(err)
				}
				// Written at the processing time of the start: the watermark
				// before it, behind its event time.
				if o.RequestID != string(e.Key) || ts >= o.StartedTS {
					t.Fatalf("entry %s holds %+v, last modified %d", e.Key, o, ts)
				}
				if !ttl.Expired(ts, OpenTTL.Milliseconds(), now) {
					t.Fatalf("entry %s, last modified %d, is not expired at the savepoint's time %d", e.Key, ts, now)
				}
			}
		})
	}
}

// With the timer, nothing is left in `open` once the input has ended and
// every timer has fired.
func TestNoLeakWithTheTimer(t *testing.T) {
	cfg := Config{Seed: 21, Events: 20000, Parallelism: 2}
	src, err := NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if src.Abandoned() == 0 {
		t.Fatal("the input abandons no request")
	}
	sp := filepath.Join(t.TempDir(), "sp")
	run(t, cfg, Sinks{}, engine.RunOptions{Backend: engine.Pebble, StopAfter: src.Events(), Drain: true, SavepointDir: sp})
	r := sptest.Open(t, sp)
	if n := len(sptest.Entries(t, r, AssembleUID, OpenState)); n != 0 {
		t.Fatalf("%d open entries after the end of the input with drain", n)
	}
	if n := len(sptest.Timers(t, r, AssembleUID, engine.EventTimeTimers)); n != 0 {
		t.Fatalf("%d timers left after the end of the input with drain", n)
	}
}
