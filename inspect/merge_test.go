package inspect_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stateproc/stateproc/inspect"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/shard"
)

// Shards scanned apart, their parts carried in binary and merged, give the
// report of one scan of the whole: value sizes, TTL ages, timers per key
// and the heaviest keys.
func TestScanPartsMergeToInspect(t *testing.T) {
	ctx := context.Background()
	src := sptest.Open(t, "../testdata/savepoints/v2/sessions-p2-heap")
	opts := inspect.Options{Now: src.Metadata().CreatedAt + 36*3600*1000, Scan: true, Top: 4, Workers: 2}
	whole, err := inspect.Inspect(ctx, src, opts)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(whole)
	ttlStates := 0
	for _, s := range whole.States {
		if s.Ages != nil {
			ttlStates++
		}
	}
	if ttlStates == 0 || whole.TopKeys == nil || len(whole.TopKeys.ByEntries) != 4 || len(whole.Timers) == 0 || whole.Timers[0].MaxPerKey == nil {
		t.Fatalf("the whole scan found too little to compare: %s", want)
	}
	for _, n := range []int{1, 3, 7} {
		var merged *inspect.ScanPart
		for i := range n {
			p, err := inspect.ScanShard(ctx, src, opts, shard.Spec{Index: i, Count: n})
			if err != nil {
				t.Fatal(err)
			}
			b, err := p.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var q inspect.ScanPart
			if err := q.UnmarshalBinary(b); err != nil {
				t.Fatal(err)
			}
			if merged == nil {
				merged = &q
			} else if err := merged.Merge(&q); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := merged.Report(ctx, src)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := json.Marshal(rep); string(got) != string(want) {
			t.Errorf("%d shards: report\n%s\nwant\n%s", n, got, want)
		}
	}
}

// Parts of scans at other times, or bytes that are no part, are refused.
func TestScanPartRefusals(t *testing.T) {
	ctx := context.Background()
	src := sptest.Open(t, "../testdata/savepoints/v2/sessions-p2-heap")
	a, err := inspect.ScanShard(ctx, src, inspect.Options{Now: 1, Scan: true}, shard.All)
	if err != nil {
		t.Fatal(err)
	}
	b, err := inspect.ScanShard(ctx, src, inspect.Options{Now: 2, Scan: true}, shard.All)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Merge(b); err == nil {
		t.Error("merged scans at different times")
	}
	for _, bad := range []string{"", "{", `{"top":-1}`, `{"states":[{"ref":{},"sizes":[[9,1]],"max_size":3}]}`, `{"states":[{"ref":{},"ttl_ms":5,"slots":[1]}]}`} {
		var p inspect.ScanPart
		if err := p.UnmarshalBinary([]byte(bad)); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
	other := sptest.Open(t, "../testdata/savepoints/v2/gateway-p1-heap")
	if _, err := a.Report(ctx, other); err == nil {
		t.Error("a scan of sessions made a report of gateway")
	}
}
