package cli

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"7d": 7 * 24 * time.Hour, "36h": 36 * time.Hour, "1d12h": 36 * time.Hour, "90m": 90 * time.Minute, "0.5d": 12 * time.Hour,
	} {
		got, err := parseDuration(in)
		if err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "d", "x", "7dd", "-1h", "0s", "3 days"} {
		if _, err := parseDuration(bad); ExitCode(err) != ExitUsage {
			t.Errorf("parseDuration(%q) = %v, want a usage error", bad, err)
		}
	}
}

func TestParseTime(t *testing.T) {
	for in, want := range map[string]int64{
		"1700000000000": 1700000000000, "2023-11-14T22:13:20Z": 1700000000000, "2023-11-14T22:13:20.5Z": 1700000000500, "-5": -5,
	} {
		got, err := parseTime(in)
		if err != nil || got != want {
			t.Errorf("parseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseTime("yesterday"); ExitCode(err) != ExitUsage {
		t.Errorf("parseTime(yesterday) = %v, want a usage error", err)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[float64]string{999: "999 B", 1000: "1.0 kB", 44e9: "44.0 GB", 1.4e9: "1.4 GB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%v) = %q, want %q", n, got, want)
		}
	}
}
