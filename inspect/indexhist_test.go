package inspect_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/inspect"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/savepoint"
)

// What plain inspect derives from the index's histograms agrees with what
// a scan counts, on every checked-in savepoint of format version 2: each
// value-size percentile lies in the bucket the index gives, each age
// bucket's count and the expired count lie in the index's range, and at the
// creation time (the anchor of the engine's histograms give or take the
// subtasks' clocks, a bucket boundary) the expired count is exact. At a time
// off the boundaries a range is allowed, and some must be one.
func TestIndexFiguresAgreeWithTheScan(t *testing.T) {
	dirs, _ := filepath.Glob("../testdata/savepoints/v2/*")
	if len(dirs) == 0 {
		t.Skip("no checked-in savepoints")
	}
	ctx := context.Background()
	checked, ranges := 0, 0
	for _, dir := range dirs {
		src := sptest.Open(t, dir)
		created := src.Metadata().CreatedAt
		for _, now := range []int64{created, created + 1_234_567, created + 3*24*3600*1000 + 17} {
			plain, err := inspect.Inspect(ctx, src, inspect.Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			scanned, err := inspect.Inspect(ctx, src, inspect.Options{Now: now, Scan: true})
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range plain.States {
				s := scanned.States[i]
				where := filepath.Base(dir) + " " + p.Operator + "/" + p.Name
				if p.NeedsScan || p.ValueSize != nil || p.Ages != nil {
					t.Fatalf("%s: plain inspect needs a scan or scanned", where)
				}
				if p.Entries == 0 {
					continue
				}
				v := p.IndexValueSize
				for _, c := range []struct {
					name  string
					exact int
					r     inspect.SizeRange
				}{{"p50", s.ValueSize.P50, v.P50}, {"p99", s.ValueSize.P99, v.P99}, {"max", s.ValueSize.Max, v.Max}} {
					if uint64(c.exact) < c.r.From || uint64(c.exact) > c.r.To {
						t.Errorf("%s: value size %s %d, the index says %d to %d", where, c.name, c.exact, c.r.From, c.r.To)
					}
				}
				if p.TTL == nil {
					continue
				}
				a, exact := p.IndexAges, s.Ages
				in := func(what string, r inspect.CountRange, n uint64) {
					if n < r.Min || n > r.Max {
						t.Errorf("%s at %d: %s %d, the index says %d to %d", where, now, what, n, r.Min, r.Max)
					}
					if !r.Exact() {
						ranges++
					}
					checked++
				}
				for j, b := range a.Buckets {
					in("age bucket", b.Entries, exact.Buckets[j].Entries)
				}
				in("future", a.Future, exact.Future)
				in("expired", a.Expired, exact.Expired)
				if now == created && !a.Expired.Exact() && anchoredAtCreation(src, p.Operator, p.Name) {
					t.Errorf("%s: the expired count at the creation time is a range, %+v", where, a.Expired)
				}
			}
		}
	}
	if checked == 0 || ranges == 0 {
		t.Fatalf("%d counts checked, %d of them ranges: the test proves little", checked, ranges)
	}
	t.Logf("%d counts checked against the scan, %d of them ranges", checked, ranges)
}

// anchoredAtCreation reports whether every segment of the state has its
// last-modified histogram anchored at the savepoint's creation time.
func anchoredAtCreation(src savepoint.Source, op, state string) bool {
	m := src.Metadata()
	segs, err := savepoint.AllSegments(context.Background(), src)
	if err != nil {
		return false
	}
	for _, s := range segs {
		if m.Operators[s.Ref.Operator].UID == op && m.RefName(s.Ref) == state && s.Anchor != m.CreatedAt {
			return false
		}
	}
	return true
}
