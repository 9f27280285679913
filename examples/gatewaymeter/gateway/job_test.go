package gateway

import (
	"fmt"
	"testing"

	"github.com/stateproc/stateproc/engine"
)

// The job's outputs over the whole input are the direct computation from
// the generator, on both backends and at several parallelisms.
func TestRunToTheEndMatchesTheGenerator(t *testing.T) {
	for _, c := range []struct {
		backend engine.BackendKind
		p       int
		leak    bool
	}{{engine.Heap, 1, false}, {engine.Heap, 3, false}, {engine.Pebble, 2, false}, {engine.Heap, 2, true}} {
		t.Run(fmt.Sprintf("%s/p%d/leak=%v", c.backend, c.p, c.leak), func(t *testing.T) {
			cfg := Config{Seed: 11, Events: 20000, Parallelism: c.p, Leak: c.leak}
			src, err := NewSource(cfg)
			if err != nil {
				t.Fatal(err)
			}
			totals, records := engine.NewCollectSink[TenantTotal](), engine.NewCollectSink[RequestRecord]()
			run(t, cfg, Sinks{Totals: totals, Records: records}, engine.RunOptions{Backend: c.backend})
			equalTotals(t, "totals", totals.Values(), src.ExpectedTotals())
			var abandoned int64
			for _, r := range records.Values() {
				if r.Status == StatusAbandoned {
					abandoned++
				}
			}
			want := src.Abandoned()
			if c.leak {
				want = 0
			}
			if abandoned != want {
				t.Errorf("%d records abandoned, want %d", abandoned, want)
			}
		})
	}
}
