package sessions

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/engine"
)

func run(t testing.TB, cfg Config, sink engine.Sink[SessionSummary], opts engine.RunOptions) {
	t.Helper()
	src, err := NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	j, err := Build(cfg, src, sink)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Run(context.Background(), j, opts); err != nil {
		t.Fatal(err)
	}
}

func sortSummaries(s []SessionSummary) []SessionSummary {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b SessionSummary) int {
		if c := strings.Compare(a.UserID, b.UserID); c != 0 {
			return c
		}
		return int(a.StartTS - b.StartTS)
	})
	return s
}
