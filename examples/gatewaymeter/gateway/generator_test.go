package gateway

import (
	"context"
	"testing"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/examples/internal/detgen"
	"github.com/stateproc/stateproc/ttl"
)

func readSplit(t *testing.T, src *Source, split int, offset int64) []Event {
	t.Helper()
	r, err := src.Open(context.Background(), split, offset)
	if err != nil {
		t.Fatal(err)
	}
	return readAll(t, r)
}

func readAll(t *testing.T, r engine.SplitReader[Event]) []Event {
	t.Helper()
	var out []Event
	for {
		e, ts, ok, err := r.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		if ts != e.TS {
			t.Fatalf("event time %d, event says %d", ts, e.TS)
		}
		out = append(out, e)
	}
}

func TestSplitsHoldTheirShareInEventTimeOrder(t *testing.T) {
	for _, leak := range []bool{false, true} {
		src, err := NewSource(Config{Seed: 3, Events: 20011, Parallelism: 1, Leak: leak})
		if err != nil {
			t.Fatal(err)
		}
		starts, completions := map[string]int64{}, 0
		for s := 0; s < Splits; s++ {
			evs := readSplit(t, src, s, 0)
			if want := detgen.Share(src.Events(), s, Splits); int64(len(evs)) != want {
				t.Errorf("leak=%v split %d: %d events, want %d", leak, s, len(evs), want)
			}
			for i, e := range evs {
				if i > 0 && e.TS < evs[i-1].TS {
					t.Fatalf("split %d: event %d at %d after one at %d", s, i, e.TS, evs[i-1].TS)
				}
				switch e.Kind {
				case RequestStarted:
					starts[e.RequestID] = e.TS
				case RequestCompleted:
					st, ok := starts[e.RequestID]
					if !ok || e.TS-st < MinLatencyMs || e.TS-st >= MaxLatencyMs {
						t.Fatalf("completion of %s at %d, start %d (%v)", e.RequestID, e.TS, st, ok)
					}
					completions++
				}
			}
		}
		if got := int64(len(starts) - completions); got != src.Abandoned() {
			t.Errorf("leak=%v: %d requests without completion, Abandoned() = %d", leak, got, src.Abandoned())
		}
		if a := src.Abandoned(); a < src.Requests()/100 || a > src.Requests()*3/100 {
			t.Errorf("leak=%v: %d of %d requests abandoned, want about 2%%", leak, a, src.Requests())
		}
	}
}

func TestOpenAtOffsetContinuesTheSplit(t *testing.T) {
	src, err := NewSource(Config{Seed: 9, Events: 5000, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	all := readSplit(t, src, 5, 0)
	for _, off := range []int64{0, 1, 17, int64(len(all)) / 2, int64(len(all))} {
		rest := readSplit(t, src, 5, off)
		if len(rest) != len(all)-int(off) {
			t.Fatalf("offset %d: %d events left, want %d", off, len(rest), len(all)-int(off))
		}
		for i := range rest {
			if rest[i] != all[int(off)+i] {
				t.Fatalf("offset %d: event %d differs: %+v vs %+v", off, i, rest[i], all[int(off)+i])
			}
		}
	}
	if _, err := src.Open(context.Background(), 5, int64(len(all))+1); err == nil {
		t.Fatal("opening beyond the end of a split succeeded")
	}
}

// In the leak variant the input runs on for more than a TTL of `open` after
// the last abandoned start, so a savepoint at its end finds every leaked
// entry expired.
func TestLeakInputEndsWithAQuietTTL(t *testing.T) {
	src, err := NewSource(Config{Seed: 4, Events: 3000, Parallelism: 1, Leak: true})
	if err != nil {
		t.Fatal(err)
	}
	var end, lastAbandoned int64
	for s := 0; s < Splits; s++ {
		completed := map[string]bool{}
		evs := readSplit(t, src, s, 0)
		for _, e := range evs {
			end = max(end, e.TS)
			if e.Kind == RequestCompleted {
				completed[e.RequestID] = true
			}
		}
		for _, e := range evs {
			if e.Kind == RequestStarted && !completed[e.RequestID] {
				lastAbandoned = max(lastAbandoned, e.TS)
			}
		}
	}
	if !ttl.Expired(lastAbandoned, OpenTTL.Milliseconds(), end) {
		t.Fatalf("last abandoned start %d is not a TTL before the end %d", lastAbandoned, end)
	}
}

func TestConfigChecks(t *testing.T) {
	for _, c := range []Config{{Events: MinEvents - 1, Parallelism: 1}, {Events: 1000}, {Events: 1000, Parallelism: 4, MaxParallelism: 2}} {
		if _, err := NewSource(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
