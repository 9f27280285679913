package report

import (
	"testing"

	"github.com/stateproc/stateproc/inspect"
	"github.com/stateproc/stateproc/internal/jsonvalue"
)

// The rule on series of every shape, whatever the creation times: the
// savepoints are spaced by their order.
func TestUnboundedRule(t *testing.T) {
	for _, c := range []struct {
		name string
		ys   []uint64
		want bool
	}{
		{"linear", []uint64{100, 200, 300, 400, 500}, true},
		{"accelerating", []uint64{100, 120, 180, 300, 600}, true},
		{"a leak over a buffer", []uint64{424, 492, 588, 662}, true},
		{"flat", []uint64{200, 200, 200, 200}, false},
		{"saturating", []uint64{100, 180, 195, 199, 200}, false},
		{"rising then level", []uint64{100, 200, 300, 310, 312, 313}, false},
		{"a buffer", []uint64{23, 33, 32, 37}, false},
		{"shrinking", []uint64{500, 400, 300}, false},
		{"a small rise", []uint64{1000, 1020, 1040, 1060}, false},
		{"a buffer rising by chance", []uint64{49, 51, 55, 61}, false},
		{"two savepoints", []uint64{100, 1000}, false},
	} {
		for _, still := range []bool{false, true} {
			var sps []Savepoint
			for i, y := range c.ys {
				created := int64(i) * 3600_000
				if still && i < 2 {
					created = 0
				}
				sps = append(sps, Savepoint{Inspect: &inspect.Report{
					Savepoint: inspect.SavepointInfo{Created: jsonvalue.Instant(created)},
					States:    []inspect.StateInfo{{Operator: "op", Name: "s", Kind: "value", Keys: y, Entries: y, Bytes: 10 * y}},
				}})
			}
			g := growth(sps)
			if len(g) != 1 || g[0].Unbounded != c.want {
				t.Errorf("%s %v (clock still %v): %+v", c.name, c.ys, still, g)
			}
			if c.want && (len(g[0].Growing) != 2 || g[0].Growing[0] != "entries") {
				t.Errorf("%s: growing %v", c.name, g[0].Growing)
			}
		}
	}
	empty := growth([]Savepoint{
		{Inspect: &inspect.Report{States: []inspect.StateInfo{{Operator: "op", Name: "s"}}}},
		{Inspect: &inspect.Report{States: []inspect.StateInfo{{Operator: "op", Name: "s"}}}},
	})
	if len(empty) != 0 {
		t.Errorf("a state empty in every savepoint has growth %+v", empty)
	}
}

// Histogram bins are powers of two, from the first that counts to the
// last.
func TestBins(t *testing.T) {
	var tl tally
	for _, size := range []int{0, 0, 5, 6, 7, 1000, 1023, 1024} {
		tl.bins[bitsLen(size)]++
	}
	got := tl.report()
	want := []Bin{{0, 0, 2}, {1, 1, 0}, {2, 3, 0}, {4, 7, 3}, {8, 15, 0}, {16, 31, 0}, {32, 63, 0}, {64, 127, 0}, {128, 255, 0}, {256, 511, 0}, {512, 1023, 2}, {1024, 2047, 1}}
	if len(got) != len(want) {
		t.Fatalf("bins %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("bin %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if (&tally{}).report() != nil {
		t.Error("an empty tally has bins")
	}
}
