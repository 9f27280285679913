package window

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/internal/sptest"
)

var processingTimeKinds = []struct {
	name string
	a    Assigner
	// copies is in how many windows each record is.
	copies int64
	ok     func(w Window) bool
}{
	{"tumbling", TumblingProcessingTime(time.Second), 1, func(w Window) bool { return w.Start%1000 == 0 && w.End-w.Start == 1000 }},
	{"sliding", SlidingProcessingTime(time.Second, 250*time.Millisecond), 4, func(w Window) bool { return w.Start%250 == 0 && w.End-w.Start == 1000 }},
	{"session", ProcessingTimeSession(100 * time.Millisecond), 1, func(w Window) bool { return w.End-w.Start >= 100 }},
}

// counted sums N over what the window contents of a savepoint hold.
func counted(t *testing.T, dir string, f fnKind) int64 {
	t.Helper()
	var n int64
	for _, e := range sptest.Entries(t, sptest.Open(t, dir), "windows", ContentsState) {
		switch f {
		case aggregateFn:
			a, err := accSer.Decode(e.Value)
			if err != nil {
				t.Fatal(err)
			}
			n += a.N
		default:
			ev, err := eventSer.Decode(e.Value)
			if err != nil {
				t.Fatal(err)
			}
			n += ev.N
		}
	}
	return n
}

// Processing-time windows on the deterministic clock: every record is
// counted once per window it is in, either in a window that fired or in
// one still open in the final savepoint; the windows are the assigner's;
// and two runs agree.
func TestProcessingTimeWindows(t *testing.T) {
	src := source{splits: 4, n: 1500, keys: 13}
	total := int64(src.splits * src.n)
	for _, k := range processingTimeKinds {
		for _, f := range fnKinds {
			for _, b := range backends {
				t.Run(fmt.Sprintf("%s/%s/%s", k.name, f, b), func(t *testing.T) {
					var runs [][]result
					for run := range 2 {
						sink := engine.NewCollectSink[result]()
						sp := filepath.Join(t.TempDir(), "sp")
						if _, err := engine.Run(context.Background(), windowJob(src, 2, k.a, f, sink, nil), engine.RunOptions{
							Backend: b, ProcessingTime: engine.DeterministicTime, SavepointDir: sp,
						}); err != nil {
							t.Fatal(err)
						}
						got := sorted(sink.Values())
						var fired int64
						for _, r := range got {
							if !k.ok(Window{Start: r.Start, End: r.End}) {
								t.Fatalf("window %v is none of the assigner's", r)
							}
							fired += r.N
						}
						open := counted(t, sp, f)
						if fired == 0 || fired+open != k.copies*total {
							t.Fatalf("run %d: %d records counted in fired windows and %d in open ones, want %d in all", run, fired, open, k.copies*total)
						}
						runs = append(runs, got)
					}
					if !slices.Equal(runs[0], runs[1]) {
						t.Fatal("two deterministic runs emitted different windows")
					}
				})
			}
		}
	}
}
