package jsonvalue

import "testing"

func TestDuration(t *testing.T) {
	for ms, want := range map[int64]string{
		0: "0s", 604_800_000: "7d", 151_200_000: "1d18h", 5_400_000: "1h30m", 1500: "1s500ms", -60_000: "-1m",
	} {
		if got := Duration(ms); got != want {
			t.Errorf("Duration(%d) = %q, want %q", ms, got, want)
		}
	}
}
