package ttl

import (
	"math"
	"testing"
	"time"
)

func TestExpiredBoundary(t *testing.T) {
	for _, tc := range []struct {
		t, d, now int64
		want      bool
	}{
		{1000, 500, 1499, false},
		{1000, 500, 1500, true}, // t + d == now is expired
		{1000, 500, 1501, true},
		{math.MaxInt64 - 10, 100, math.MaxInt64 - 1, false}, // saturates, never wraps to negative
		{math.MaxInt64 - 10, 100, math.MaxInt64, true},
		{-5000, 1000, -4000, true},
		{-5000, 1000, -4001, false},
	} {
		if got := Expired(tc.t, tc.d, tc.now); got != tc.want {
			t.Errorf("Expired(%d, %d, %d) = %v, want %v", tc.t, tc.d, tc.now, got, tc.want)
		}
	}
}

// LastExpired is the same rule as Expired, put as a threshold: check it
// against Expired at and around the threshold, for ordinary and extreme
// times and TTLs.
func TestLastExpiredAgreesWithExpired(t *testing.T) {
	times := []int64{math.MinInt64, math.MinInt64 + 1, -1 << 40, -5000, -1, 0, 1, 1000, 1 << 40, math.MaxInt64 - 1, math.MaxInt64}
	ttls := []int64{1, 500, 7 * 24 * 3600 * 1000, 1 << 62, math.MaxInt64, 0, -1, math.MinInt64 + 1}
	for _, now := range times {
		for _, d := range ttls {
			last, ok := LastExpired(d, now)
			probes := append([]int64{}, times...)
			if ok {
				probes = append(probes, last)
				if last < math.MaxInt64 {
					probes = append(probes, last+1)
				}
				if last > math.MinInt64 {
					probes = append(probes, last-1)
				}
			}
			for _, lm := range probes {
				want := Expired(lm, d, now)
				got := ok && lm <= last
				if got != want {
					t.Fatalf("now %d ttl %d last-modified %d: threshold (%d, %v) says %v, Expired says %v", now, d, lm, last, ok, got, want)
				}
			}
		}
	}
}

func TestConfigExpiredUsesMillis(t *testing.T) {
	c := New(7 * 24 * time.Hour)
	week := int64(7 * 24 * 3600 * 1000)
	if c.Expired(0, week-1) || !c.Expired(0, week) {
		t.Fatalf("a 7-day TTL must expire at exactly %d ms", week)
	}
}

func TestValidate(t *testing.T) {
	if err := New(time.Second).Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []Config{
		{TTL: 0, Update: OnCreateAndWrite, Visibility: NeverReturnExpired},
		{TTL: time.Second, Update: 9, Visibility: NeverReturnExpired},
		{TTL: time.Second, Update: OnReadAndWrite, Visibility: 0},
		{TTL: time.Second, Update: OnReadAndWrite, Visibility: NeverReturnExpired, CleanupIncremental: -1},
	}
	for _, c := range bad {
		if c.Validate() == nil {
			t.Errorf("Validate(%+v) accepted a bad config", c)
		}
	}
}
