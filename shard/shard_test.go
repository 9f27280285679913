package shard

import (
	"errors"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
)

func TestParse(t *testing.T) {
	if s, err := Parse("2/7"); err != nil || s != (Spec{2, 7}) {
		t.Errorf("2/7: %v, %v", s, err)
	}
	for _, bad := range []string{"", "3", "3/3", "-1/3", "0/0", "a/3", "0/100000", "1/2/3"} {
		if _, err := Parse(bad); !errors.Is(err, ErrSpec) {
			t.Errorf("%q: %v, want ErrSpec", bad, err)
		}
	}
	if got := (Spec{2, 7}).Part("s3://b/out/"); got != "s3://b/out.shard-00002-of-00007" {
		t.Errorf("Part: %s", got)
	}
	if got := (Spec{0, 3}).Part("s3://b/out?endpoint=http://h:1&use_path_style=true"); got != "s3://b/out.shard-00000-of-00003?endpoint=http://h:1&use_path_style=true" {
		t.Errorf("Part of a URL with parameters: %s", got)
	}
}

// Of cuts contiguously, every shard gets about its share, and sums that
// would overflow an int64 do not.
func TestOf(t *testing.T) {
	const total, n = 1000, 7
	counts := make([]int, n)
	last := 0
	for b := int64(0); b < total; b++ {
		s := Of(b, total, n)
		if s < last {
			t.Fatalf("byte %d in shard %d after shard %d", b, s, last)
		}
		last = s
		counts[s]++
	}
	for i, c := range counts {
		if c < total/n || c > total/n+1 {
			t.Errorf("shard %d has %d of %d bytes", i, c, total)
		}
	}
	if got := Of(total, total, n); got != n-1 {
		t.Errorf("the end: shard %d", got)
	}
	if got := Of(1<<62, 1<<62+1<<61, 3); got != 2 {
		t.Errorf("large: shard %d, want 2", got)
	}
}

// Every segment of a plan goes to exactly one shard, in order, and an
// empty file to one shard.
func TestFilesPartition(t *testing.T) {
	seg := func(file string, off, n int64) rewrite.SegmentPlan {
		return rewrite.SegmentPlan{Src: savepoint.Segment{File: file, Offset: off, Length: n}}
	}
	plans := []rewrite.FilePlan{
		{Name: "a", Segments: []rewrite.SegmentPlan{seg("a", 12, 100), seg("a", 112, 5), seg("a", 117, 300)}},
		{Name: "b"},
		{Name: "c", Segments: []rewrite.SegmentPlan{seg("c", 12, 50), seg("c", 62, 50)}},
	}
	for _, n := range []int{1, 2, 3, 5, 9} {
		seen := map[string]int{}
		var order []int64
		for i := range n {
			for _, fp := range Files(plans, Spec{i, n}) {
				seen[fp.Name]++
				for _, p := range fp.Segments {
					order = append(order, p.Src.Offset)
				}
			}
		}
		if want := []int64{12, 112, 117, 12, 62}; !slices.Equal(order, want) {
			t.Errorf("%d shards: segments %v", n, order)
		}
		if seen["b"] != 1 {
			t.Errorf("%d shards: empty file b in %d shards", n, seen["b"])
		}
	}
}

func TestKeyGroupsCover(t *testing.T) {
	var segs []savepoint.Segment
	for _, g := range []struct {
		kg int
		n  int64
	}{{0, 10}, {5, 1000}, {90, 10}} {
		s := savepoint.Segment{Length: g.n}
		s.KeyGroup = g.kg
		segs = append(segs, s)
	}
	for _, n := range []int{1, 3, 7} {
		next := 0
		for i := range n {
			r, ok := KeyGroups(segs, 128, Spec{i, n})
			if !ok {
				continue
			}
			if r.Start != next || r.End < r.Start {
				t.Fatalf("%d shards, shard %d: %v after %d", n, i, r, next)
			}
			next = r.End + 1
		}
		if next != 128 {
			t.Errorf("%d shards cover key groups up to %d", n, next)
		}
	}
}
