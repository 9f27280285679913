package rescale

import (
	"context"
	"fmt"
	"os"

	"github.com/stateproc/stateproc/internal/extsort"
	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
)

// OperatorReport says what a rescale does to one operator.
type OperatorReport struct {
	UID                  string `json:"uid"`
	Keyed                bool   `json:"keyed"`
	Action               Action `json:"action"`
	MaxParallelismBefore int    `json:"max_parallelism_before"`
	MaxParallelism       int    `json:"max_parallelism"`
	ParallelismBefore    int    `json:"parallelism_before"`
	Parallelism          int    `json:"parallelism"`
	// Segments, Entries and Bytes are the operator's data in the input's
	// index: what is moved when it is re-bucketed.
	Segments int    `json:"segments"`
	Entries  uint64 `json:"entries"`
	Bytes    int64  `json:"bytes"`
}

// Report lists every operator of the savepoint.
type Report struct {
	DryRun    bool             `json:"dry_run"`
	Operators []OperatorReport `json:"operators"`
}

// Run rescales src, the savepoint read from input, into out.Out.
func Run(ctx context.Context, src savepoint.Source, input string, opts Options, out rewrite.Options) (*Report, error) {
	pr, err := prepare(ctx, src, input, opts)
	if err != nil {
		return nil, err
	}
	m, plans, meta, kept, newFiles := src.Metadata(), pr.plans, pr.meta, pr.kept, pr.newFiles
	rep := report(plans, out.DryRun)
	copied := rewrite.PlannedBytes(kept)
	moved, spilled := rebucketedBytes(plans)
	if !out.DryRun {
		if out.Writer, err = rewrite.WriterOptions(ctx, src); err != nil {
			return nil, err
		}
		// The output takes about the input's size, and the spill files
		// about the raw size of the re-bucketed operators, when they go
		// beside it too.
		out.Need = copied + moved
		if opts.SpillDir == "" {
			out.Need += spilled
		}
	}
	meter := rewrite.NewMeter(copied+moved, out.Progress)
	err = rewrite.Execute(ctx, input, meta, out, func(ctx context.Context, o *rewrite.Output) error {
		if o == nil {
			return nil
		}
		if err := rewrite.WriteFiles(ctx, src, o, kept, opts.workers(), meter); err != nil {
			return err
		}
		for i := range plans {
			if plans[i].action != Rebucketed {
				continue
			}
			if takesDirect(plans[i].from.MaxParallelism, plans[i].maxP) {
				if err := rebucketDirect(ctx, m, src, o, &plans[i], newFiles[i], opts.workers(), meter); err != nil {
					return err
				}
				continue
			}
			dir, err := spillDir(o, opts.SpillDir)
			if err != nil {
				return err
			}
			err = rebucket(ctx, src, m, o, &plans[i], newFiles[i], dir, opts.workers(), opts.memory(), meter)
			// The operator's spill files go now, not with the output: the
			// next operator's spill is not to sit beside them.
			os.RemoveAll(dir)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// prepared is a rescale decided: what happens to every operator, the
// output's metadata, the files copied from the input, and the names of the
// re-bucketed operators' new files, by operator.
type prepared struct {
	plans    []opPlan
	meta     *savepoint.Metadata
	kept     []rewrite.FilePlan
	newFiles map[int][]string
}

func prepare(ctx context.Context, src savepoint.Source, input string, opts Options) (*prepared, error) {
	m := src.Metadata()
	plans, err := plan(m, opts)
	if err != nil {
		return nil, err
	}
	segs, err := savepoint.AllSegments(ctx, src)
	if err != nil {
		return nil, err
	}
	for _, s := range segs {
		p := &plans[s.Ref.Operator]
		p.segs = append(p.segs, s)
	}
	meta := rewrite.DeriveMetadata(input, m, describe(plans))
	for _, p := range plans {
		meta.Operators[p.index] = p.outputOperator()
	}
	kept, err := rewrite.SameLayout(ctx, src, func(seg savepoint.Segment) (rewrite.SegmentPlan, bool) {
		if plans[seg.Ref.Operator].action == Rebucketed {
			return rewrite.SegmentPlan{}, false
		}
		return rewrite.SegmentPlan{Src: seg, Dst: seg.Ref}, true
	})
	if err != nil {
		return nil, err
	}
	newFiles := map[int][]string{}
	for _, p := range plans {
		if p.action == Rebucketed {
			newFiles[p.index] = newFileNames(p.index, p.parallelism, p.maxP, &kept)
		}
	}
	return &prepared{plans: plans, meta: meta, kept: kept, newFiles: newFiles}, nil
}

// spillDir creates the directory one operator's spill files go to.
func spillDir(o *rewrite.Output, under string) (string, error) {
	if under == "" {
		return o.TempDir()
	}
	return o.TempDirUnder(under)
}

// minSortBudget is the least memory a sorter works with.
const minSortBudget = 64 << 10

// rebucket moves every entry of one operator to its new key group and
// writes the operator's new data files, one per new subtask.
func rebucket(ctx context.Context, src savepoint.Source, meta *savepoint.Metadata, o *rewrite.Output, p *opPlan, names []string, dir string, n, memory int,
	m *rewrite.Meter) error {
	writers := min(n, p.parallelism)
	// Each writer has two sorters: one loads the next bucket while the
	// other's is written.
	sortBudget := max(minSortBudget, memory/(2*writers))
	// A bucket should fit half a sort chunk (half the budget holds data),
	// leaving room for skew between key groups; the spill encoding takes
	// about the raw size of the entries.
	var raw uint64
	var owed int64 // what the meter counts in the second pass
	for _, s := range p.segs {
		raw += s.Bytes
		owed += s.Length - firstPassShare(s.Length)
	}
	sh := shapes(meta, p.index)
	bk := newBucketing(p.maxP, p.parallelism, int(raw/uint64(sortBudget/4))+1)
	// An operator whose spill records fit in the write buffers' share of
	// the budget keeps them there: no spill files.
	spills, err := partition(ctx, src, p, sh, bk, dir, n, memory/2, raw <= uint64(memory/2), m)
	if err != nil {
		return err
	}
	second := newSecondPass(m, owed, spills)
	written := make([][]uint64, writers)
	sorters := make([][2]*extsort.Sorter, writers)
	for wk := range writers {
		for i := range sorters[wk] {
			sorters[wk][i] = extsort.NewSorter(sortBudget, dir, fmt.Sprintf("sort%02d-%d", wk, i))
		}
		written[wk] = make([]uint64, len(sh))
	}
	err = workers.Run(ctx, p.parallelism, writers, func(ctx context.Context, wk, s int) error {
		n, err := writeSubtask(ctx, o, sh, names[s], bk, s, spills, sorters[wk], second)
		for ref := range n {
			written[wk][ref] += n[ref]
		}
		return err
	})
	if err != nil {
		return err
	}
	return checkWritten(meta, p, sh, written)
}

// writeSubtask writes the data file of one new subtask from its buckets,
// removing each bucket's spill files once they are read. A goroutine loads
// and sorts each next bucket into one of the two sorters while the bucket
// before is written from the other, so that reading the spill, sorting and
// writing the output overlap.
func writeSubtask(ctx context.Context, o *rewrite.Output, sh []refShape, name string, bk *bucketing, s int, spills spillFiles, srts [2]*extsort.Sorter,
	second *secondPass) ([]uint64, error) {
	f, err := o.CreateFile(ctx, name)
	if err != nil {
		return nil, err
	}
	sink := newSegmentSink(f, sh)
	err = loadAhead(ctx, bk.ofSubtask(s), spills, srts, func(b int, srt *extsort.Sorter) error {
		sink.kgs = bk.buckets[b].kgs
		return srt.Emit(ctx, sink.record)
	}, second)
	if cerr := sink.close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return sink.entries, err
}

// loaded is a bucket that one of the sorters holds, ready to emit.
type loaded struct {
	b    int
	size int64
	srt  *extsort.Sorter
	err  error
}

// loadAhead loads buckets, in order, into whichever of srts is free, on a
// goroutine of its own, and calls write with each bucket and the sorter
// that holds it, in order.
func loadAhead(ctx context.Context, buckets []int, spills spillFiles, srts [2]*extsort.Sorter, write func(b int, srt *extsort.Sorter) error,
	second *secondPass) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	free := make(chan *extsort.Sorter, len(srts))
	for _, srt := range srts {
		free <- srt
	}
	ready := make(chan loaded, len(srts))
	go func() {
		defer close(ready)
		for _, b := range buckets {
			var srt *extsort.Sorter
			select {
			case srt = <-free:
			case <-ctx.Done():
				return
			}
			files, size := spills.ofBucket(b)
			err := srt.Load(ctx, files)
			spills.release(b)
			ready <- loaded{b: b, size: size, srt: srt, err: err}
			if err != nil {
				return
			}
		}
	}()
	var err error
	for l := range ready {
		if err == nil {
			if err = l.err; err == nil {
				err = write(l.b, l.srt)
			}
		}
		if err != nil {
			// The loader stops at its next bucket; its last load, if
			// any, is dropped with the spill directory.
			cancel()
			continue
		}
		second.add(l.size)
		free <- l.srt
	}
	return err
}

func report(plans []opPlan, dryRun bool) *Report {
	rep := &Report{DryRun: dryRun}
	for _, p := range plans {
		r := OperatorReport{UID: p.from.UID, Keyed: p.from.Keyed(), Action: p.action,
			MaxParallelismBefore: p.from.MaxParallelism, MaxParallelism: p.maxP,
			ParallelismBefore: p.from.Parallelism, Parallelism: p.parallelism}
		for _, s := range p.segs {
			r.Segments++
			r.Entries += s.Entries
			r.Bytes += s.Length
		}
		rep.Operators = append(rep.Operators, r)
	}
	return rep
}

// rebucketedBytes sums the segments of the operators to re-bucket: what
// they take in their files, and the raw size of those that are spilled,
// about what their spill files take.
func rebucketedBytes(plans []opPlan) (stored, raw int64) {
	for _, p := range plans {
		if p.action != Rebucketed {
			continue
		}
		direct := takesDirect(p.from.MaxParallelism, p.maxP)
		for _, s := range p.segs {
			stored += s.Length
			if !direct {
				raw += int64(s.Bytes)
			}
		}
	}
	return stored, raw
}
