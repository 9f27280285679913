package rescale

import (
	"fmt"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
)

// newFileNames names the data files of a re-bucketed operator, one per new
// subtask. The engine's name is used unless a file kept from the input
// already has it: an empty kept file of that name is most likely the
// operator's own old one and is dropped; a file that still holds segments
// of other operators keeps its name, and the new file gets a suffix.
func newFileNames(op, parallelism, maxP int, kept *[]rewrite.FilePlan) []string {
	names := make([]string, parallelism)
	for s := range names {
		// The engine's name, so that a rescaled operator looks as if the
		// engine had written it at its new parallelism.
		name := rewrite.EngineFileName(op, s)
		for i := 0; i < len(*kept); i++ {
			fp := (*kept)[i]
			if fp.Name != name {
				continue
			}
			if len(fp.Segments) == 0 {
				*kept = append((*kept)[:i], (*kept)[i+1:]...)
				break
			}
			name = fmt.Sprintf("op%03d-%05d-maxp%d.data", op, s, maxP)
		}
		names[s] = name
	}
	return names
}

// maxBuckets bounds the spill files each partition worker keeps open.
const maxBuckets = 256

// bucket is a range of new key groups within one new subtask: the unit the
// partition phase spills into and the sort phase sorts.
type bucket struct {
	subtask int
	kgs     keygroup.Range
}

// bucketing splits the new key groups into buckets in key-group order,
// none straddling two subtasks.
type bucketing struct {
	buckets []bucket
	// of maps a new key group to its bucket.
	of []int32
}

// newBucketing makes about want buckets (at least one per subtask, at
// most maxBuckets or one per key group), each subtask's key groups split
// into equal ranges. Fewer, larger buckets cost fewer spill files; the
// caller sizes them to fit a sort chunk.
func newBucketing(maxP, parallelism, want int) *bucketing {
	perSubtask := max(1, min(want, maxBuckets)/parallelism)
	b := &bucketing{of: make([]int32, maxP)}
	for s := range parallelism {
		r := keygroup.ForSubtask(s, parallelism, maxP)
		n := min(perSubtask, r.Len())
		for i := range n {
			kgs := keygroup.Range{Start: r.Start + i*r.Len()/n, End: r.Start + (i+1)*r.Len()/n - 1}
			for kg := kgs.Start; kg <= kgs.End; kg++ {
				b.of[kg] = int32(len(b.buckets))
			}
			b.buckets = append(b.buckets, bucket{subtask: s, kgs: kgs})
		}
	}
	return b
}

// ofSubtask returns the indexes of the buckets of subtask s, in order.
func (b *bucketing) ofSubtask(s int) []int {
	var out []int
	for i, bk := range b.buckets {
		if bk.subtask == s {
			out = append(out, i)
		}
	}
	return out
}
