package shard

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
)

// MaxCount bounds N: far more tasks than any scheduler runs against one
// savepoint, and few enough that part names stay five digits.
const MaxCount = 99999

// Spec is shard Index of Count, Index counted from 0 as a Kubernetes
// Indexed Job's JOB_COMPLETION_INDEX is.
type Spec struct {
	Index, Count int
}

// All is the one shard that is the whole work.
var All = Spec{Index: 0, Count: 1}

// ErrSpec is wrapped by the errors of a malformed shard spec.
var ErrSpec = errors.New("shard: bad shard spec")

// Parse reads "I/N": 0 <= I < N <= MaxCount.
func Parse(s string) (Spec, error) {
	i, n, ok := strings.Cut(s, "/")
	if !ok {
		return Spec{}, fmt.Errorf("%w %q: want I/N, such as 0/4", ErrSpec, s)
	}
	index, err1 := strconv.Atoi(i)
	count, err2 := strconv.Atoi(n)
	switch {
	case err1 != nil || err2 != nil:
		return Spec{}, fmt.Errorf("%w %q: I and N are whole numbers", ErrSpec, s)
	case count < 1 || count > MaxCount:
		return Spec{}, fmt.Errorf("%w %q: N is from 1 to %d", ErrSpec, s, MaxCount)
	case index < 0 || index >= count:
		return Spec{}, fmt.Errorf("%w %q: I is from 0 to N-1 (%d)", ErrSpec, s, count-1)
	}
	return Spec{Index: index, Count: count}, nil
}

func (s Spec) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Part is where the part of a writing command's shard lies: beside the
// target, named after it and the shard, so that the commit step finds
// every part from the target and N alone.
// A bucket URL's parameters (?endpoint=...) stay at its end.
func (s Spec) Part(target string) string {
	query := ""
	if strings.Contains(target, "://") {
		if i := strings.IndexByte(target, '?'); i >= 0 {
			target, query = target[:i], target[i:]
		}
	}
	return fmt.Sprintf("%s.shard-%05d-of-%05d%s", strings.TrimRight(target, "/"), s.Index, s.Count, query)
}

// Parts lists the parts of every shard of n, in shard order.
func Parts(target string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = Spec{Index: i, Count: n}.Part(target)
	}
	return out
}

// CountFor is the number of shards of about target bytes each that cut
// work of total bytes: at least 1, at most MaxCount and at most items, the
// number of pieces there are to share out.
func CountFor(total, target int64, items int) int {
	if target <= 0 || total <= 0 || items <= 1 {
		return 1
	}
	n := (total + target - 1) / target
	return int(min(n, int64(items), MaxCount))
}

// Of returns the shard of n that an item belongs to when it starts at
// before bytes of total: contiguous runs of about total/n bytes each. An
// item at the very end (a file with no segment, after every byte) goes to
// the last shard.
func Of(before, total int64, n int) int {
	if total <= 0 || n <= 1 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(before), uint64(n))
	if hi >= uint64(total) {
		return n - 1
	}
	q, _ := bits.Div64(hi, lo, uint64(total))
	return min(int(q), n-1)
}

// Files keeps, of the plans of a rewrite that keeps its input's layout
// (rewrite.SameLayout), the segments of shard s, in the same files and
// order. A file goes to every shard that holds one of its segments; a file
// with no segment, written as an empty data file, to the shard its place
// falls in.
func Files(plans []rewrite.FilePlan, s Spec) []rewrite.FilePlan {
	if s.Count <= 1 {
		return plans
	}
	total := rewrite.PlannedBytes(plans)
	var out []rewrite.FilePlan
	var before int64
	for _, fp := range plans {
		mine := rewrite.FilePlan{Name: fp.Name}
		if len(fp.Segments) == 0 {
			if Of(before, total, s.Count) == s.Index {
				out = append(out, mine)
			}
			continue
		}
		for _, p := range fp.Segments {
			if Of(before, total, s.Count) == s.Index {
				mine.Segments = append(mine.Segments, p)
			}
			before += p.Src.Length
		}
		if len(mine.Segments) > 0 {
			out = append(out, mine)
		}
	}
	return out
}

// FileOrder sorts segments as a single run reads them: by file, offset,
// then key group and state for those kept in no file of their own.
func FileOrder(segs []savepoint.Segment) []savepoint.Segment {
	out := slices.Clone(segs)
	slices.SortStableFunc(out, func(a, b savepoint.Segment) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Offset, b.Offset),
			cmp.Compare(a.KeyGroup, b.KeyGroup), a.Ref.Compare(b.Ref))
	})
	return out
}

// Segments keeps the segments of shard s, cut in file order.
func Segments(segs []savepoint.Segment, s Spec) []savepoint.Segment {
	segs = FileOrder(segs)
	if s.Count <= 1 {
		return segs
	}
	var total, before int64
	for _, g := range segs {
		total += g.Length
	}
	var out []savepoint.Segment
	for _, g := range segs {
		if Of(before, total, s.Count) == s.Index {
			out = append(out, g)
		}
		before += g.Length
	}
	return out
}

// KeyGroups cuts the key groups 0 .. maxP-1 that the segments lie in into
// n contiguous ranges of about equal bytes, the key groups of every
// operator together, and returns that of shard s; ok is false for a shard
// that gets no key group (more shards than key groups hold bytes). It is
// the cut of a command that works key group by key group across operators
// (export, whose files follow key-group order).
func KeyGroups(segs []savepoint.Segment, maxP int, s Spec) (r keygroup.Range, ok bool) {
	if maxP < 1 {
		return keygroup.Range{}, false
	}
	if s.Count <= 1 {
		return keygroup.All(maxP), true
	}
	weight := make([]int64, maxP)
	var total int64
	for _, g := range segs {
		if g.KeyGroup >= 0 && g.KeyGroup < maxP {
			weight[g.KeyGroup] += g.Length
			total += g.Length
		}
	}
	if total == 0 {
		// Nothing to weigh by: key groups alike.
		for i := range weight {
			weight[i] = 1
		}
		total = int64(maxP)
	}
	r = keygroup.Range{Start: -1}
	var before int64
	for kg, w := range weight {
		// The last shard takes the key groups after the last byte.
		if Of(before, total, s.Count) == s.Index {
			if r.Start < 0 {
				r.Start = kg
			}
			r.End = kg
		}
		before += w
	}
	return r, r.Start >= 0
}
