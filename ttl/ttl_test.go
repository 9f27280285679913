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
