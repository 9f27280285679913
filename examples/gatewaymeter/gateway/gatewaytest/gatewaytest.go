// Package gatewaytest runs GatewayMeter in the tests of the tools that
// read and rewrite its savepoints (prune-ttl, rescale, diff): a run over
// the generated input, the outputs of runs in a form that compares across
// parallelisms and restarts, and the requests a run stopped after a number
// of records has started.
package gatewaytest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway"
	"github.com/stateproc/stateproc/examples/internal/detgen"
)

// Run builds GatewayMeter over its generated input and runs it.
func Run(t testing.TB, cfg gateway.Config, sinks gateway.Sinks, opts engine.RunOptions) {
	t.Helper()
	src, err := gateway.NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	j, err := gateway.Build(cfg, src, src.Prices(), sinks)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Run(context.Background(), j, opts); err != nil {
		t.Fatal(err)
	}
}

// Sorted renders outputs as a sorted multiset: several subtasks feed the
// sinks, so only the order within a key is fixed.
func Sorted[T any](vs ...[]T) []string {
	var out []string
	for _, v := range vs {
		for _, x := range v {
			out = append(out, fmt.Sprintf("%+v", x))
		}
	}
	slices.SortFunc(out, cmp.Compare)
	return out
}

// Started replays the source as far as a stop after n records takes it,
// and lists the requests it has started.
func Started(t testing.TB, src *gateway.Source, n int64) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for split := range src.Splits() {
		r, err := src.Open(context.Background(), split, 0)
		if err != nil {
			t.Fatal(err)
		}
		for range detgen.Share(n, split, src.Splits()) {
			e, _, ok, err := r.Next(context.Background())
			if err != nil || !ok {
				t.Fatalf("split %d ends early: %v", split, err)
			}
			if e.Kind == gateway.RequestStarted {
				out[e.RequestID] = true
			}
		}
	}
	return out
}
