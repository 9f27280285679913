package sessions

import (
	"context"
	"testing"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/examples/internal/detgen"
)

func readSplit(t *testing.T, src *Source, split int, offset int64) []Click {
	t.Helper()
	r, err := src.Open(context.Background(), split, offset)
	if err != nil {
		t.Fatal(err)
	}
	return readAll(t, r)
}

func readAll(t *testing.T, r engine.SplitReader[Click]) []Click {
	t.Helper()
	var out []Click
	for {
		c, ts, ok, err := r.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		if ts != c.TS {
			t.Fatalf("event time %d, click says %d", ts, c.TS)
		}
		out = append(out, c)
	}
}

func TestSplitsHoldTheirShareInEventTimeOrder(t *testing.T) {
	for _, users := range []int64{8, 13, 1001} {
		src, err := NewSource(Config{Seed: 2, Users: users, Parallelism: 1})
		if err != nil {
			t.Fatal(err)
		}
		byUser := map[string][]Click{}
		for s := 0; s < Splits; s++ {
			clicks := readSplit(t, src, s, 0)
			if want := detgen.Share(src.Clicks(), s, Splits); int64(len(clicks)) != want {
				t.Errorf("%d users, split %d: %d clicks, want %d", users, s, len(clicks), want)
			}
			for i, c := range clicks {
				if i > 0 && c.TS < clicks[i-1].TS {
					t.Fatalf("split %d: click %d at %d after one at %d", s, i, c.TS, clicks[i-1].TS)
				}
				byUser[c.UserID] = append(byUser[c.UserID], c)
			}
		}
		if int64(len(byUser)) != users {
			t.Fatalf("%d users clicked, want %d", len(byUser), users)
		}
		for u := int64(0); u < users; u++ {
			want := src.UserClicks(u)
			got := byUser[userID(u)]
			if len(got) != len(want) {
				t.Fatalf("user %d: %d clicks in the splits, UserClicks gives %d", u, len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("user %d click %d: %+v in the splits, %+v from UserClicks", u, i, got[i], want[i])
				}
			}
		}
	}
}

// Each user's clicks span less than the category counts' TTL, touch about
// CategoriesPerUser categories, and fall into sessions separated by at
// least SessionGap, with shorter gaps inside them.
func TestUsersLookLikeTheSeed(t *testing.T) {
	src, err := NewSource(Config{Seed: 6, Users: 500, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	var categories, sessions int
	for u := int64(0); u < src.Users(); u++ {
		clicks := src.UserClicks(u)
		if span := clicks[len(clicks)-1].TS - clicks[0].TS; span >= CountsTTL.Milliseconds() || clicks[0].TS < Epoch {
			t.Fatalf("user %d spans %d ms from %d", u, span, clicks[0].TS)
		}
		seen := map[string]bool{}
		for i, c := range clicks {
			seen[c.Category] = true
			if i == 0 || c.TS-clicks[i-1].TS >= SessionGap.Milliseconds() {
				sessions++
			}
		}
		if len(seen) != min(len(clicks), CategoriesPerUser) {
			t.Errorf("user %d: %d clicks in %d categories", u, len(clicks), len(seen))
		}
		categories += len(seen)
	}
	if avg := float64(categories) / float64(src.Users()); avg < 18 || avg > 20 {
		t.Errorf("%.1f categories per user", avg)
	}
	if got := len(src.ExpectedSummaries()); got != sessions {
		t.Errorf("ExpectedSummaries has %d sessions, the clicks have %d gaps of SessionGap or more", got, sessions)
	}
	if avg := float64(sessions) / float64(src.Users()); avg < MinSessions || avg > MaxSessions {
		t.Errorf("%.1f sessions per user", avg)
	}
}

func TestOpenAtOffsetContinuesTheSplit(t *testing.T) {
	src, err := NewSource(Config{Seed: 9, Users: 200, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	all := readSplit(t, src, 3, 0)
	for _, off := range []int64{1, 99, int64(len(all)) - 1, int64(len(all))} {
		rest := readSplit(t, src, 3, off)
		if len(rest) != len(all)-int(off) || len(rest) > 0 && rest[0] != all[off] {
			t.Fatalf("offset %d: %d clicks left, want %d", off, len(rest), len(all)-int(off))
		}
	}
	if _, err := src.Open(context.Background(), 3, int64(len(all))+1); err == nil {
		t.Fatal("opening beyond the end of a split succeeded")
	}
}
