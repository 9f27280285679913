package rescale

import (
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"

	"github.com/stateproc/stateproc/internal/extsort"
	"github.com/stateproc/stateproc/internal/workdir"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// Shuffle is a rescale cut for an engine with a shuffle (the Beam
// pipeline): the decisions, output metadata and file names of Run, with
// its two phases exposed. The map stage (Blocks) encodes each input
// segment of a re-bucketed operator into one block per new key group it
// feeds; the engine groups the blocks by new key group; the reduce stage
// (WriteKeyGroup) sorts one new key group's blocks exactly as Run's sort
// phase sorts a bucket and writes its segments into a part of its own; the
// kept files (Kept) are copied into parts by rewrite.WriteFiles; and the
// commit step (rewrite.Assemble) puts the parts, in Parts order, together
// into the files Run writes, byte for byte.
type Shuffle struct {
	input string
	pr    *prepared
	// shapes of the re-bucketed operators, by operator.
	shapes map[int][]refShape
	// writer is the block options of the blocks the parts encode: the
	// input's compression, as Run keeps it.
	writer rewrite.Options
}

// PlanShuffle decides the rescale of src, the savepoint read from input,
// as Run does, refusing what Run refuses.
func PlanShuffle(ctx context.Context, src savepoint.Source, input string, opts Options) (*Shuffle, error) {
	pr, err := prepare(ctx, src, input, opts)
	if err != nil {
		return nil, err
	}
	sh := &Shuffle{input: input, pr: pr, shapes: map[int][]refShape{}}
	if sh.writer.Writer, err = rewrite.WriterOptions(ctx, src); err != nil {
		return nil, err
	}
	for _, p := range pr.plans {
		if p.action == Rebucketed {
			sh.shapes[p.index] = shapes(src.Metadata(), p.index)
		}
	}
	return sh, nil
}

// Metadata is the output's.
func (sh *Shuffle) Metadata() *savepoint.Metadata { return sh.pr.meta }

// Kept is the files copied from the input: the operators not re-bucketed,
// in the input's layout.
func (sh *Shuffle) Kept() []rewrite.FilePlan { return sh.pr.kept }

// Moved lists the segments of the re-bucketed operators, in file order:
// the map stage's input.
func (sh *Shuffle) Moved() []savepoint.Segment {
	var out []savepoint.Segment
	for _, p := range sh.pr.plans {
		if p.action == Rebucketed {
			out = append(out, p.segs...)
		}
	}
	return out
}

// Destination is a new key group of a re-bucketed operator: a reduce
// stage's key.
type Destination struct {
	Operator, KeyGroup int
}

// Destinations lists every new key group of the re-bucketed operators, in
// the order their parts are assembled: by operator, then key group.
func (sh *Shuffle) Destinations() []Destination {
	var out []Destination
	for _, p := range sh.pr.plans {
		if p.action != Rebucketed {
			continue
		}
		for kg := range p.maxP {
			out = append(out, Destination{Operator: p.index, KeyGroup: kg})
		}
	}
	return out
}

// Block is the spill records one input segment sends to one new key
// group, in the segment's order.
type Block struct {
	To   Destination
	Data []byte
}

// Blocks reads the input segment seg and calls emit with one block per new
// key group its entries go to, in the order of each key group's first
// entry. Memory holds the segment's entries in spill encoding, about its
// raw size: a segment is one state in one key group.
func (sh *Shuffle) Blocks(ctx context.Context, src savepoint.Source, seg savepoint.Segment, emit func(Block) error) error {
	p := &sh.pr.plans[seg.Ref.Operator]
	if p.action != Rebucketed {
		return fmt.Errorf("rescale: a segment of operator %d, which is not re-bucketed", seg.Ref.Operator)
	}
	var order []int
	bufs := map[int]*memOut{}
	pw := &partitioner{hash: p.from.KeyHash, maxP: uint32(p.maxP), shapes: sh.shapes[p.index],
		to: func(kg int) *memOut {
			b, ok := bufs[kg]
			if !ok {
				b = &memOut{}
				bufs[kg] = b
				order = append(order, kg)
			}
			return b
		}}
	if err := pw.segment(seg, savepoint.SegmentEntries(ctx, src, seg)); err != nil {
		return err
	}
	for _, kg := range order {
		if err := emit(Block{To: Destination{Operator: p.index, KeyGroup: kg}, Data: bufs[kg].b}); err != nil {
			return err
		}
	}
	return nil
}

type memOut struct{ b []byte }

// WriteKept copies plans, a share of Kept (see shard.Files), into a part
// at out.Out, as Run copies the kept files.
func (sh *Shuffle) WriteKept(ctx context.Context, src savepoint.Source, plans []rewrite.FilePlan, out rewrite.Options) error {
	out.Writer = sh.writer.Writer
	return rewrite.Execute(ctx, sh.input, sh.pr.meta, out, func(ctx context.Context, o *rewrite.Output) error {
		return rewrite.WriteFiles(ctx, src, o, plans, 0, rewrite.NewMeter(0, nil))
	})
}

// Part is where the part of new key group d goes, beside target.
func (d Destination) Part(target string) string {
	return fmt.Sprintf("%s.rescale-op%03d-kg%05d", target, d.Operator, d.KeyGroup)
}

// KeptPart is where the i-th part of the kept files goes, beside target.
func KeptPart(target string, i int) string { return fmt.Sprintf("%s.rescale-kept-%05d", target, i) }

// WriteKeyGroup sorts the blocks of new key group d, in any order (a key
// comes from one input key group, so the blocks of two segments hold no
// group in common and the sort's order does not depend on theirs), as
// Run's sort phase sorts a bucket, and writes them as the key group's
// segments into a part at out.Out: a savepoint with the output's metadata
// and the file of the subtask owning d, holding only them. Spill files
// beyond memory bytes (0: Options' default) go to the system's temporary
// directory.
func (sh *Shuffle) WriteKeyGroup(ctx context.Context, d Destination, blocks iter.Seq[[]byte], memory int, out rewrite.Options) error {
	p := &sh.pr.plans[d.Operator]
	if p.action != Rebucketed || d.KeyGroup < 0 || d.KeyGroup >= p.maxP {
		return fmt.Errorf("rescale: no new key group %d of operator %d", d.KeyGroup, d.Operator)
	}
	if memory <= 0 {
		memory = (&Options{}).memory()
	}
	work, err := workdir.Create("", storage.TempPrefix+"rescale-")
	if err != nil {
		return err
	}
	defer work.Remove()
	dir := work.Path
	// One spill file, as if one worker had read every contributing
	// segment: the sort merges the ascending runs whatever their order.
	path := filepath.Join(dir, "in.spill")
	var size int64
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	for b := range blocks {
		if _, err := f.Write(b); err != nil {
			f.Close()
			return err
		}
		size += int64(len(b))
	}
	if err := f.Close(); err != nil {
		return err
	}
	out.Writer = sh.writer.Writer
	o, err := rewrite.Create(ctx, sh.input, sh.pr.meta, out)
	if err != nil {
		return err
	}
	defer o.Close()
	subtask := keygroup.Subtask(d.KeyGroup, p.parallelism, p.maxP)
	df, err := o.CreateFile(ctx, sh.pr.newFiles[d.Operator][subtask])
	if err != nil {
		return err
	}
	sink := newSegmentSink(df, sh.shapes[d.Operator])
	sink.kgs = keygroup.Range{Start: d.KeyGroup, End: d.KeyGroup}
	srt := extsort.NewSorter(max(minSortBudget, memory), dir, "sort")
	err = srt.SortRecords(ctx, []extsort.Spill{{Path: path, Size: size}}, sink.record)
	if cerr := sink.close(); err == nil {
		err = cerr
	}
	if cerr := df.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return o.Commit(ctx)
}
