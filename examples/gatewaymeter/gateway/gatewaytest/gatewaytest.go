// Package gatewaytest runs GatewayMeter in the tests of the tools that
// rewrite its savepoints (prune-ttl, rescale): a run over the generated
// input, and the outputs of runs in a form that compares across
// parallelisms and restarts.
package gatewaytest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway"
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
