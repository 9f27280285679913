package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/engine"
)

// run builds the job of cfg over its generated input and runs it.
func run(t testing.TB, cfg Config, sinks Sinks, opts engine.RunOptions) *engine.Result {
	t.Helper()
	src, err := NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	j, err := Build(cfg, src, src.Prices(), sinks)
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine.Run(context.Background(), j, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func sortTotals(ts []TenantTotal) []TenantTotal {
	ts = slices.Clone(ts)
	slices.SortFunc(ts, func(a, b TenantTotal) int {
		if c := strings.Compare(a.TenantID, b.TenantID); c != 0 {
			return c
		}
		if a.TS != b.TS {
			return int(a.TS - b.TS)
		}
		return int(a.USDMicrosTotal - b.USDMicrosTotal)
	})
	return ts
}

func equalTotals(t *testing.T, what string, got, want []TenantTotal) {
	t.Helper()
	got, want = sortTotals(got), sortTotals(want)
	if slices.Equal(got, want) {
		return
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("%s: %d totals, want %d; first difference at %d: %+v, want %+v", what, len(got), len(want), i, got[i], want[i])
		}
	}
	t.Fatalf("%s: %d totals, want %d", what, len(got), len(want))
}

// equalRecords compares request records as sorted multisets: several
// subtasks feed the sink, so their order is not fixed.
func equalRecords(t *testing.T, what string, got, want []RequestRecord) {
	t.Helper()
	g, w := sortedRecords(got), sortedRecords(want)
	if slices.Equal(g, w) {
		return
	}
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			t.Fatalf("%s: %d records, want %d; first difference at %d: %s, want %s", what, len(g), len(w), i, g[i], w[i])
		}
	}
	t.Fatalf("%s: %d records, want %d", what, len(g), len(w))
}

func sortedRecords(rs []RequestRecord) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%+v", r)
	}
	slices.Sort(out)
	return out
}
