package pipelines

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/stateproc/stateproc/inspect"
	"github.com/stateproc/stateproc/shard"
)

// VerifyConfig is stateproc verify's flags.
type VerifyConfig struct {
	Input string
	Deep  bool
	// Summary, when set, is a local file the combined figures are written
	// to as JSON, by the worker that combines them; they are logged too.
	Summary string
	Sharding
}

// Figures are what verify read: the shards' add up to the savepoint's.
type Figures struct {
	Shards   int    `json:"shards"`
	Segments int    `json:"segments"`
	Entries  uint64 `json:"entries"`
	Bytes    int64  `json:"bytes"`
}

// Verify builds the verify pipeline: each shard reads its segments with
// inspect.Verify, as stateproc verify --shard I/N does, and a combine sums
// the figures. A corruption fails the shard that meets it, and so the
// pipeline, with inspect.Verify's error: the file, key group and offset.
func Verify(ctx context.Context, s beam.Scope, c VerifyConfig) (int, error) {
	src, err := open(ctx, c.Input)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	n, err := c.count(ctx, src)
	if err != nil {
		return 0, err
	}
	s = s.Scope("verify")
	figs := beam.ParDo(s, &verifyShardFn{Input: c.Input, Deep: c.Deep, Shards: n}, shards(s, n))
	beam.ParDo0(s, &summaryFn{Path: c.Summary}, beam.Combine(s, addFigures, figs))
	return n, nil
}

type verifyShardFn struct {
	Input  string
	Deep   bool
	Shards int
}

func (f *verifyShardFn) ProcessElement(ctx context.Context, i int) (Figures, error) {
	src, err := open(ctx, f.Input)
	if err != nil {
		return Figures{}, err
	}
	defer src.Close()
	sp := shard.Spec{Index: i, Count: f.Shards}
	v, err := inspect.Verify(ctx, src, inspect.VerifyOptions{Deep: f.Deep, Shard: sp})
	if err != nil {
		return Figures{}, fmt.Errorf("verify shard %s: %w", sp, err)
	}
	return Figures{Shards: 1, Segments: v.Segments, Entries: v.Entries, Bytes: v.Bytes}, nil
}

func addFigures(a, b Figures) Figures {
	return Figures{Shards: a.Shards + b.Shards, Segments: a.Segments + b.Segments, Entries: a.Entries + b.Entries, Bytes: a.Bytes + b.Bytes}
}

type summaryFn struct {
	Path string
}

func (f *summaryFn) ProcessElement(ctx context.Context, v Figures) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	log.Infof(ctx, "verify: whole: %s", b)
	if f.Path == "" {
		return nil
	}
	return os.WriteFile(f.Path, append(b, '\n'), 0o644)
}

func init() {
	register.DoFn2x2[context.Context, int, Figures, error](&verifyShardFn{})
	register.Function2x1(addFigures)
	register.DoFn2x1[context.Context, Figures, error](&summaryFn{})
}
