package pipelines

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/stateproc/stateproc/prunettl"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/shard"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// PruneTTLConfig is stateproc prune-ttl's flags.
type PruneTTLConfig struct {
	Input, Out string
	Force      bool
	// Now is when entries are judged, in epoch milliseconds; nil means the
	// savepoint's creation time.
	Now *int64
	// TTL overrides the recorded TTL of states, by "uid/state".
	TTL map[string]time.Duration
	Sharding
}

// PruneTTL builds the prune-ttl pipeline: each shard rewrites its part
// with prunettl.Run, as stateproc prune-ttl --shard I/N does, and once
// every shard is done the commit step (shard.Commit) writes the savepoint,
// _metadata last. It returns the number of shards.
func PruneTTL(ctx context.Context, s beam.Scope, c PruneTTLConfig) (int, error) {
	src, err := open(ctx, c.Input)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	if _, ok := src.(*snapshotfmt.Reader); !ok {
		return 0, fmt.Errorf("%s: a %s savepoint is pruned by stateproc prune-ttl; the pipeline rewrites stateproc's layout", c.Input, src.Layout())
	}
	if err := rewrite.CheckTarget(c.Input, c.Out, c.Force); err != nil {
		return 0, err
	}
	n, err := c.count(ctx, src)
	if err != nil {
		return 0, err
	}
	now := src.Metadata().CreatedAt
	if c.Now != nil {
		now = *c.Now
	}
	ttl := map[string]int64{}
	for k, d := range c.TTL {
		ttl[k] = int64(d)
	}
	s = s.Scope("prune-ttl")
	done := beam.ParDo(s, &pruneShardFn{Input: c.Input, Out: c.Out, Now: now, TTL: ttl, Shards: n}, shards(s, n))
	beam.ParDo0(s, &commitFn{Out: c.Out, Shards: n, Force: c.Force}, afterAll(s, done))
	return n, nil
}

// pruneShardFn prunes one shard into its part.
type pruneShardFn struct {
	Input, Out string
	Now        int64
	TTL        map[string]int64 // nanoseconds, by "uid/state"
	Shards     int
}

func (f *pruneShardFn) ProcessElement(ctx context.Context, i int) (int, error) {
	src, err := open(ctx, f.Input)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	ttl := map[string]time.Duration{}
	for k, d := range f.TTL {
		ttl[k] = time.Duration(d)
	}
	sp := shard.Spec{Index: i, Count: f.Shards}
	// A retried shard finds its part, whole, from the first attempt: it
	// writes the same bytes again over it.
	_, err = prunettl.Run(ctx, src, f.Input, prunettl.Options{Now: f.Now, TTL: ttl, Shard: sp}, rewrite.Options{Out: sp.Part(f.Out), Force: true})
	if err != nil {
		return 0, fmt.Errorf("prune-ttl shard %s: %w", sp, err)
	}
	return i, nil
}

// commitFn runs the commit step once all shards are done.
type commitFn struct {
	Out    string
	Shards int
	Force  bool
	Export bool
}

func (f *commitFn) ProcessElement(ctx context.Context, done int) error {
	if done != f.Shards {
		return fmt.Errorf("commit: %d of %d shards done", done, f.Shards)
	}
	if f.Export {
		_, err := shard.CommitExport(ctx, f.Out, f.Shards, f.Force, storage.Options{})
		return err
	}
	return shard.Commit(ctx, f.Out, f.Shards, rewrite.Options{Force: f.Force}, storage.Options{})
}

func init() {
	register.DoFn2x2[context.Context, int, int, error](&pruneShardFn{})
	register.DoFn2x1[context.Context, int, error](&commitFn{})
}
