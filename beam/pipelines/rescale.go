package pipelines

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/stateproc/stateproc/rescale"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/shard"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// RescaleConfig is stateproc rescale's flags.
type RescaleConfig struct {
	Input, Out string
	Force      bool
	// MaxParallelism, Parallelism and Operator are rescale.Options'.
	MaxParallelism, Parallelism int
	Operator                    string
	// Sharding cuts the copy of the operators that are not re-bucketed.
	Sharding
}

// Rescale builds the rescale pipeline, the one with a shuffle
// (rescale.Shuffle):
//
//  1. Map: each segment of a re-bucketed operator becomes one element per
//     new key group it feeds (a block of entries, never one element per
//     entry), keyed by that key group.
//  2. GroupByKey: one new key group's blocks together; every new key group
//     is seeded with an empty block, so that one holding nothing still
//     gets its (empty) part and every subtask its file.
//  3. Reduce: per new key group, the blocks sorted by the CLI's sort and
//     written as the key group's segments into a part of its own.
//  4. Beside them, shards of the operators kept as they are copy their
//     segments into parts.
//  5. Commit: the parts assembled into the files stateproc rescale
//     writes, _metadata last.
//
// It returns the number of parts.
func Rescale(ctx context.Context, s beam.Scope, c RescaleConfig) (int, error) {
	src, err := open(ctx, c.Input)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	if _, ok := src.(*snapshotfmt.Reader); !ok {
		return 0, fmt.Errorf("%s: a %s savepoint is rescaled by stateproc rescale; the pipeline rewrites stateproc's layout", c.Input, src.Layout())
	}
	if err := rewrite.CheckTarget(c.Input, c.Out, c.Force); err != nil {
		return 0, err
	}
	opts := rescale.Options{MaxParallelism: c.MaxParallelism, Parallelism: c.Parallelism, Operator: c.Operator}
	sh, err := rescale.PlanShuffle(ctx, src, c.Input, opts)
	if err != nil {
		return 0, err
	}
	kept := sh.Kept()
	var keptBytes int64
	keptSegs := 0
	for _, fp := range kept {
		keptSegs += len(fp.Segments)
		keptBytes += rewrite.PlannedBytes([]rewrite.FilePlan{fp})
	}
	nKept := c.Shards
	if nKept <= 0 {
		target := c.ShardBytes
		if target <= 0 {
			target = DefaultShardBytes
		}
		nKept = shard.CountFor(keptBytes, target, keptSegs)
	}
	dests := sh.Destinations()
	moved := len(sh.Moved())
	var names []string
	for i := range nKept {
		names = append(names, rescale.KeptPart(c.Out, i))
	}
	for _, d := range dests {
		names = append(names, d.Part(c.Out))
	}

	s = s.Scope("rescale")
	plan := rescalePlan{Input: c.Input, Out: c.Out, MaxParallelism: c.MaxParallelism, Parallelism: c.Parallelism, Operator: c.Operator}
	done := []beam.PCollection{beam.ParDo(s, &keptFn{Plan: plan, Shards: nKept}, shards(s, nKept))}
	if len(dests) > 0 {
		in := []beam.PCollection{beam.ParDo(s, seed, beam.CreateList(s, indexes(len(dests))))}
		if moved > 0 {
			in = append(in, beam.ParDo(s, &moveFn{Plan: plan}, shards(s, moved)))
		}
		grouped := beam.GroupByKey(s, beam.Flatten(s, in...))
		done = append(done, beam.ParDo(s, &writeKeyGroupFn{Plan: plan}, grouped))
	}
	beam.ParDo0(s, &commitPartsFn{Out: c.Out, Force: c.Force, Names: names}, afterAll(s, beam.Flatten(s, done...)))
	return len(names), nil
}

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// seed is the empty block every new key group gets.
func seed(d int) (int, []byte) { return d, nil }

// rescalePlan is what a worker needs to plan the same Shuffle as the
// launcher: the input and the options.
type rescalePlan struct {
	Input, Out                  string
	MaxParallelism, Parallelism int
	Operator                    string
}

// shuffle opens the input and plans the rescale again; the plan depends
// on the index only, so every worker's is the launcher's.
func (p *rescalePlan) shuffle(ctx context.Context) (savepoint.Source, *rescale.Shuffle, error) {
	src, err := open(ctx, p.Input)
	if err != nil {
		return nil, nil, err
	}
	sh, err := rescale.PlanShuffle(ctx, src, p.Input, rescale.Options{MaxParallelism: p.MaxParallelism, Parallelism: p.Parallelism, Operator: p.Operator})
	if err != nil {
		src.Close()
		return nil, nil, err
	}
	return src, sh, nil
}

// moveFn is the map stage: the blocks of one moved segment, keyed by the
// index of their new key group in Destinations.
type moveFn struct {
	Plan rescalePlan
	src  savepoint.Source
	sh   *rescale.Shuffle
	segs []savepoint.Segment
	dest map[rescale.Destination]int
}

func (f *moveFn) Setup(ctx context.Context) error {
	var err error
	if f.src, f.sh, err = f.Plan.shuffle(ctx); err != nil {
		return err
	}
	f.segs = f.sh.Moved()
	f.dest = map[rescale.Destination]int{}
	for i, d := range f.sh.Destinations() {
		f.dest[d] = i
	}
	return nil
}

func (f *moveFn) ProcessElement(ctx context.Context, i int, emit func(int, []byte)) error {
	return f.sh.Blocks(ctx, f.src, f.segs[i], func(b rescale.Block) error {
		emit(f.dest[b.To], b.Data)
		return nil
	})
}

func (f *moveFn) Teardown() error {
	if f.src != nil {
		return f.src.Close()
	}
	return nil
}

// writeKeyGroupFn is the reduce stage: one new key group's part.
type writeKeyGroupFn struct {
	Plan  rescalePlan
	src   savepoint.Source
	sh    *rescale.Shuffle
	dests []rescale.Destination
}

func (f *writeKeyGroupFn) Setup(ctx context.Context) error {
	var err error
	if f.src, f.sh, err = f.Plan.shuffle(ctx); err != nil {
		return err
	}
	f.dests = f.sh.Destinations()
	return nil
}

func (f *writeKeyGroupFn) ProcessElement(ctx context.Context, d int, blocks func(*[]byte) bool) (int, error) {
	if d < 0 || d >= len(f.dests) {
		return 0, fmt.Errorf("rescale: no destination %d", d)
	}
	dest := f.dests[d]
	all := func(yield func([]byte) bool) {
		var b []byte
		for blocks(&b) {
			if !yield(b) {
				return
			}
		}
	}
	// A retried key group writes the same part again over its own.
	if err := f.sh.WriteKeyGroup(ctx, dest, all, 0, rewrite.Options{Out: dest.Part(f.Plan.Out), Force: true}); err != nil {
		return 0, fmt.Errorf("rescale: operator %d key group %d: %w", dest.Operator, dest.KeyGroup, err)
	}
	return d, nil
}

func (f *writeKeyGroupFn) Teardown() error {
	if f.src != nil {
		return f.src.Close()
	}
	return nil
}

// keptFn copies one shard of the kept operators' files into a part.
type keptFn struct {
	Plan   rescalePlan
	Shards int
}

func (f *keptFn) ProcessElement(ctx context.Context, i int) (int, error) {
	src, sh, err := f.Plan.shuffle(ctx)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	plans := shard.Files(sh.Kept(), shard.Spec{Index: i, Count: f.Shards})
	if err := sh.WriteKept(ctx, src, plans, rewrite.Options{Out: rescale.KeptPart(f.Plan.Out, i), Force: true}); err != nil {
		return 0, fmt.Errorf("rescale: kept shard %d/%d: %w", i, f.Shards, err)
	}
	return i, nil
}

// commitPartsFn assembles the parts once every one is written.
type commitPartsFn struct {
	Out   string
	Force bool
	Names []string
}

func (f *commitPartsFn) ProcessElement(ctx context.Context, done int) error {
	if done != len(f.Names) {
		return fmt.Errorf("commit: %d of %d parts written", done, len(f.Names))
	}
	return shard.CommitParts(ctx, f.Out, f.Names, rewrite.Options{Force: f.Force}, storage.Options{})
}

func init() {
	register.Function1x2(seed)
	register.DoFn3x1[context.Context, int, func(int, []byte), error](&moveFn{})
	register.Emitter2[int, []byte]()
	register.DoFn3x2[context.Context, int, func(*[]byte) bool, int, error](&writeKeyGroupFn{})
	register.Iter1[[]byte]()
	register.DoFn2x2[context.Context, int, int, error](&keptFn{})
	register.DoFn2x1[context.Context, int, error](&commitPartsFn{})
}
