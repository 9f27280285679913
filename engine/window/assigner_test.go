package window

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestAssigners(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    Assigner
		ts   int64
		want []Window
	}{
		{"tumbling", TumblingEventTime(time.Second), 1999, []Window{{Start: 1000, End: 2000}}},
		{"tumbling before the epoch", TumblingEventTime(time.Second), -1, []Window{{Start: -1000, End: 0}}},
		{"tumbling with offset", TumblingEventTime(time.Second).WithOffset(300 * time.Millisecond), 1200, []Window{{Start: 300, End: 1300}}},
		{"sliding, latest first", SlidingEventTime(time.Second, 250*time.Millisecond), 1100,
			[]Window{{Start: 1000, End: 2000}, {Start: 750, End: 1750}, {Start: 500, End: 1500}, {Start: 250, End: 1250}}},
		{"session", EventTimeSession(100 * time.Millisecond), 42, []Window{{Start: 42, End: 142}}},
		{"tumbling at the earliest time", TumblingEventTime(time.Second), math.MinInt64, []Window{{Start: math.MinInt64, End: math.MinInt64 + 1000}}},
		{"sliding at the earliest time", SlidingEventTime(time.Second, 500*time.Millisecond), math.MinInt64, []Window{{Start: math.MinInt64, End: math.MinInt64 + 1000}}},
	} {
		if got := tc.a.Assign(nil, tc.ts, 0); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// Processing-time assigners read the processing time, not the record's.
	if got := TumblingProcessingTime(time.Second).Assign(nil, 5, 7300); !slices.Equal(got, []Window{{Start: 7000, End: 8000}}) {
		t.Errorf("processing time: %v", got)
	}
	for _, a := range []Assigner{TumblingEventTime(0), TumblingEventTime(time.Microsecond), SlidingEventTime(time.Second, 0),
		TumblingEventTime(time.Second).WithOffset(time.Second), EventTimeSession(-time.Second)} {
		if a.validate() == nil {
			t.Errorf("%#v: no error", a)
		}
	}
}

func TestSessionMergingSetAgreesWithFlink(t *testing.T) {
	m := &mergingSet{}
	var merges [][]Window
	add := func(w Window) Window {
		r, err := m.add(w, func(result Window, merged []Window, stateResult Window, mergedState []Window) error {
			merges = append(merges, append([]Window{result, stateResult}, merged...))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	add(Window{Start: 0, End: 10})
	add(Window{Start: 30, End: 40})
	if len(merges) != 0 || len(m.mapping) != 2 {
		t.Fatalf("disjoint windows merged: %v", merges)
	}
	// Touching counts as overlapping, as Flink's TimeWindow.intersects.
	if r := add(Window{Start: 10, End: 20}); r != (Window{Start: 0, End: 20}) {
		t.Fatalf("result %v", r)
	}
	if sw, _ := m.stateWindow(Window{Start: 0, End: 20}); sw != (Window{Start: 0, End: 10}) {
		t.Fatalf("state window %v, want the merged window's", sw)
	}
	// A window bridging two sessions merges them; the state stays under
	// the earliest one's state window.
	if r := add(Window{Start: 15, End: 35}); r != (Window{Start: 0, End: 40}) {
		t.Fatalf("result %v", r)
	}
	if sw, _ := m.stateWindow(Window{Start: 0, End: 40}); sw != (Window{Start: 0, End: 10}) || len(m.mapping) != 1 {
		t.Fatalf("state window %v, mapping %v", sw, m.mapping)
	}
	last := merges[len(merges)-1]
	if want := []Window{{Start: 0, End: 40}, {Start: 0, End: 10}, {Start: 0, End: 20}, {Start: 30, End: 40}}; !slices.Equal(last, want) {
		t.Fatalf("merge %v, want %v", last, want)
	}
}
