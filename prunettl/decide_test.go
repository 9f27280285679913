package prunettl

import (
	"testing"

	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
)

// A segment is copied, dropped or filtered by its oldest and newest
// entries, on the TTL rule's boundary: t + d <= now is expired.
func TestDecide(t *testing.T) {
	const d, now = 100, 1000
	seg := func(minTS, maxTS int64) *rewrite.SegmentPlan {
		return &rewrite.SegmentPlan{Src: savepoint.Segment{Stats: savepoint.Stats{MinTimestamp: minTS, MaxTimestamp: maxTS}}}
	}
	for _, tc := range []struct {
		minTS, maxTS int64
		want         string
	}{
		{901, 2000, "copy"},
		{900, 2000, "filter"},
		{0, 900, "drop"},
		{0, 901, "filter"},
	} {
		p := seg(tc.minTS, tc.maxTS)
		decide(p, d, now)
		got := "copy"
		switch {
		case p.Drop:
			got = "drop"
		case p.KeepModified != nil:
			got = "filter"
			if p.KeepModified(900) || !p.KeepModified(901) {
				t.Errorf("the filter keeps an entry at 900 or drops one at 901")
			}
		}
		if got != tc.want {
			t.Errorf("segment %d..%d: %s, want %s", tc.minTS, tc.maxTS, got, tc.want)
		}
	}
}
