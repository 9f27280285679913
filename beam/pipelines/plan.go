package pipelines

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/shard"
	"github.com/stateproc/stateproc/storage"
)

// DefaultShardBytes is the bytes of savepoint a shard reads when no count
// is given: a minute or so of one core's work, and few enough shards that
// the commit step's listing stays short.
const DefaultShardBytes = 256 << 20

// Sharding says how many shards a pipeline's map stage has: Shards if set,
// else enough for about ShardBytes (DefaultShardBytes if 0) each.
type Sharding struct {
	Shards     int
	ShardBytes int64
}

// open opens a savepoint where a launcher or a worker finds it: a local
// directory or a bucket URL, read with ranged reads.
func open(ctx context.Context, location string) (savepoint.Source, error) {
	src, err := layouts.OpenLocation(ctx, location, storage.Options{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", location, err)
	}
	return src, nil
}

// count plans the number of shards of src from its index.
func (s Sharding) count(ctx context.Context, src savepoint.Source) (int, error) {
	if s.Shards > 0 {
		if s.Shards > shard.MaxCount {
			return 0, fmt.Errorf("%w: %d shards: at most %d", shard.ErrSpec, s.Shards, shard.MaxCount)
		}
		return s.Shards, nil
	}
	segs, err := savepoint.AllSegments(ctx, src)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, g := range segs {
		total += g.Length
	}
	target := s.ShardBytes
	if target <= 0 {
		target = DefaultShardBytes
	}
	return shard.CountFor(total, target, len(segs)), nil
}

// shards is the PCollection of the shard indexes 0 .. n-1, one element
// each, which the runner spreads over its workers.
func shards(s beam.Scope, n int) beam.PCollection {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return beam.Reshuffle(s, beam.CreateList(s, idx))
}

// afterAll is a single element, the number of shards done, once every
// element of done is there: what a commit step waits for.
func afterAll(s beam.Scope, done beam.PCollection) beam.PCollection {
	return stats.Sum(s, beam.ParDo(s, one, done))
}

func one(int) int { return 1 }

func init() {
	register.Function1x1(one)
}
