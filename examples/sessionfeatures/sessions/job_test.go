package sessions

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/serializers"
)

// Run to the end with drain, the job emits every session the generator
// made, and nothing else.
func TestSessionsEmittedAreTheSessionsGenerated(t *testing.T) {
	for _, c := range []struct {
		backend engine.BackendKind
		p       int
	}{{engine.Heap, 3}, {engine.Pebble, 2}} {
		t.Run(fmt.Sprintf("%s/p%d", c.backend, c.p), func(t *testing.T) {
			cfg := Config{Seed: 4, Users: 600, Parallelism: c.p}
			src, err := NewSource(cfg)
			if err != nil {
				t.Fatal(err)
			}
			sink := engine.NewCollectSink[SessionSummary]()
			run(t, cfg, sink, engine.RunOptions{Backend: c.backend})
			got, want := sortSummaries(sink.Values()), sortSummaries(src.ExpectedSummaries())
			if !slices.Equal(got, want) {
				t.Fatalf("%d sessions emitted, %d generated", len(got), len(want))
			}
		})
	}
}

// A savepoint at the end of the input, without drain, holds for every user
// the category counts computed from the generator, each stamped with the
// processing time of the category's last click (under DeterministicTime, a
// watermark behind the click), and the user's last session if the watermark has not closed it, with its
// timer.
func TestFinalStateMatchesTheGenerator(t *testing.T) {
	for _, backend := range []engine.BackendKind{engine.Heap, engine.Pebble} {
		t.Run(string(backend), func(t *testing.T) {
			cfg := Config{Seed: 12, Users: 400, Parallelism: 2, MaxParallelism: 256}
			src, err := NewSource(cfg)
			if err != nil {
				t.Fatal(err)
			}
			sp := filepath.Join(t.TempDir(), "sp")
			emitted := engine.NewCollectSink[SessionSummary]()
			run(t, cfg, emitted, engine.RunOptions{Backend: backend, ProcessingTime: engine.DeterministicTime, StopAfter: src.Clicks(), SavepointDir: sp})
			r := sptest.Open(t, sp)

			type count struct{ n, last int64 }
			want := map[[2]string]count{}
			lastSession := map[string]SessionAgg{}
			watermark := int64(1<<63 - 1)
			for s := 0; s < Splits; s++ {
				clicks := readSplit(t, src, s, 0)
				watermark = min(watermark, clicks[len(clicks)-1].TS-1)
			}
			for u := int64(0); u < src.Users(); u++ {
				var agg SessionAgg
				for _, c := range src.UserClicks(u) {
					k := [2]string{c.UserID, c.Category}
					want[k] = count{n: want[k].n + 1, last: c.TS}
					if agg.Clicks == 0 || c.TS >= agg.end() {
						agg = SessionAgg{StartTS: c.TS}
					}
					agg.LastTS = c.TS
					agg.Clicks++
				}
				if agg.end() > watermark {
					lastSession[userID(u)] = agg
				}
			}

			counts := sptest.Entries(t, r, FeaturesUID, CountsState)
			if len(counts) != len(want) {
				t.Errorf("%d category counts, want %d", len(counts), len(want))
			}
			for _, e := range counts {
				ts, v := sptest.SplitTTL(t, e.Value)
				n, err := serializers.Int64().Decode(v)
				if err != nil {
					t.Fatal(err)
				}
				// Processing time is the watermark, which trails the clicks
				// of each split.
				if w := want[[2]string{string(e.Key), string(e.MapKey)}]; n != w.n || ts >= w.last {
					t.Fatalf("%s/%s: count %d last written %d, want %d, written before %d", e.Key, e.MapKey, n, ts, w.n, w.last)
				}
			}

			open := sptest.Entries(t, r, FeaturesUID, SessionState)
			timers := sptest.Timers(t, r, FeaturesUID, engine.EventTimeTimers)
			if len(open) != len(lastSession) || len(timers) != len(open) || len(open) == 0 {
				t.Fatalf("%d open sessions and %d timers, want %d of each", len(open), len(timers), len(lastSession))
			}
			timerAt := map[string]int64{}
			for _, tm := range timers {
				timerAt[string(tm.Key)] = tm.Timestamp
			}
			for _, e := range open {
				agg, err := SessionAggSerializer().Decode(e.Value)
				if err != nil {
					t.Fatal(err)
				}
				if agg != lastSession[string(e.Key)] {
					t.Fatalf("%s: open session %+v, want %+v", e.Key, agg, lastSession[string(e.Key)])
				}
				if at, ok := timerAt[string(e.Key)]; !ok || at != agg.end() {
					t.Fatalf("%s: timer at %d (%v), want one at %d", e.Key, at, ok, agg.end())
				}
			}
			if got, want := len(emitted.Values())+len(open), len(src.ExpectedSummaries()); got != want {
				t.Errorf("%d sessions emitted and %d open, %d generated", len(emitted.Values()), len(open), want)
			}
		})
	}
}

// The same seed and flags give byte-identical savepoints, taken mid-stream
// without draining, at parallelism 1, 2 and 4.
func TestSavepointsAreDeterministic(t *testing.T) {
	for _, p := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) {
			cfg := Config{Seed: 3, Users: 500, Parallelism: p, MaxParallelism: 128}
			var dirs []string
			for range 2 {
				sp := filepath.Join(t.TempDir(), "sp")
				run(t, cfg, nil, engine.RunOptions{Backend: engine.Heap, ProcessingTime: engine.DeterministicTime, StopAfter: 9001, SavepointDir: sp})
				dirs = append(dirs, sp)
			}
			sptest.SameFiles(t, dirs[0], dirs[1])
		})
	}
}
