package pipelines

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/stateproc/stateproc/inspect"
	"github.com/stateproc/stateproc/shard"
	"github.com/stateproc/stateproc/storage"
)

// InspectConfig is stateproc inspect --scan's flags.
type InspectConfig struct {
	Input string
	// Now is when TTL ages are taken, in epoch milliseconds; nil means the
	// savepoint's creation time.
	Now *int64
	// Top, when above 0, also lists the Top heaviest keys (inspect --top).
	Top int
	// Summary, when set, is a local file the report is written to as JSON,
	// stateproc inspect --scan -o json's, by the worker that writes it; it
	// is logged too.
	Summary string
	Sharding
}

// Inspect builds the inspect --scan pipeline: each shard scans its
// segments with inspect.ScanShard, a combine merges the shards' parts
// (inspect.ScanPart.Merge), and one worker turns the merged part and the
// savepoint's index into the report the CLI prints. A corruption fails
// the shard that meets it, and so the pipeline, with the scan's error: the
// file, key group and offset.
func Inspect(ctx context.Context, s beam.Scope, c InspectConfig) (int, error) {
	src, err := open(ctx, c.Input)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	if c.Top < 0 {
		return 0, fmt.Errorf("inspect: top %d: want 0 or more", c.Top)
	}
	if err := src.Metadata().CheckRead(-1); err != nil {
		return 0, err
	}
	now := src.Metadata().CreatedAt
	if c.Now != nil {
		now = *c.Now
	}
	n, err := c.count(ctx, src)
	if err != nil {
		return 0, err
	}
	s = s.Scope("inspect")
	parts := beam.ParDo(s, &scanShardFn{Input: c.Input, Now: now, Top: c.Top, Shards: n}, shards(s, n))
	beam.ParDo0(s, &reportFn{Input: c.Input, Path: c.Summary}, beam.Combine(s, mergeScanParts, parts))
	return n, nil
}

type scanShardFn struct {
	Input  string
	Now    int64
	Top    int
	Shards int
}

func (f *scanShardFn) ProcessElement(ctx context.Context, i int) ([]byte, error) {
	src, err := open(ctx, f.Input)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	sp := shard.Spec{Index: i, Count: f.Shards}
	p, err := inspect.ScanShard(ctx, src, inspect.Options{Now: f.Now, Scan: true, Top: f.Top}, sp)
	if err != nil {
		return nil, fmt.Errorf("inspect shard %s: %w", sp, err)
	}
	return p.MarshalBinary()
}

// mergeScanParts merges two encoded inspect.ScanParts.
func mergeScanParts(a, b []byte) ([]byte, error) {
	var x, y inspect.ScanPart
	if err := x.UnmarshalBinary(a); err != nil {
		return nil, err
	}
	if err := y.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	if err := x.Merge(&y); err != nil {
		return nil, err
	}
	return x.MarshalBinary()
}

type reportFn struct {
	Input, Path string
}

func (f *reportFn) ProcessElement(ctx context.Context, b []byte) error {
	src, err := open(ctx, f.Input)
	if err != nil {
		return err
	}
	defer src.Close()
	var p inspect.ScanPart
	if err := p.UnmarshalBinary(b); err != nil {
		return err
	}
	rep, err := p.Report(ctx, src)
	if err != nil {
		return err
	}
	rep.Savepoint.Path = f.Input
	if loc, err := storage.ParseLocation(f.Input); err == nil && loc.IsBucket() {
		rep.Savepoint.Path = loc.String()
	}
	// As stateproc inspect -o json writes it, type names unescaped.
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rep); err != nil {
		return err
	}
	log.Infof(ctx, "inspect: %s", out.Bytes())
	if f.Path == "" {
		return nil
	}
	return os.WriteFile(f.Path, out.Bytes(), 0o644)
}

func init() {
	register.DoFn2x2[context.Context, int, []byte, error](&scanShardFn{})
	register.Function2x2(mergeScanParts)
	register.DoFn2x1[context.Context, []byte, error](&reportFn{})
}
