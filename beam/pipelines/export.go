package pipelines

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/shard"
	"github.com/stateproc/stateproc/storage"
)

// ExportConfig is stateproc export's flags.
type ExportConfig struct {
	// Out is a local directory or a bucket URL, as export --out's.
	Input, Out string
	Force      bool
	// Options are export's; KeyGroups must be unset (the shards cut key
	// groups) and Operator, when set, a uid, ID or name of an operator.
	Options export.Options
	Sharding
}

// Export builds the export pipeline: each shard exports its key groups
// (shard 0 also operator and broadcast state) into its part with
// export.Run, as stateproc export --shard I/N does, and the commit step
// (shard.CommitExport) puts the parts together at Out. It returns the
// number of shards.
func Export(ctx context.Context, s beam.Scope, c ExportConfig) (int, error) {
	src, err := open(ctx, c.Input)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	if c.Options.KeyGroups != nil {
		return 0, errors.New("export: a pipeline cuts the key groups itself; KeyGroups must be unset")
	}
	if loc, err := storage.ParseLocation(c.Out); err != nil {
		return 0, err
	} else if loc.IsBucket() {
		// The bucket target refuses a finished export without Force, at
		// the commit.
		if err := rewrite.CheckTarget(c.Input, c.Out, true); err != nil {
			return 0, err
		}
	}
	if c.Options.Operator != "" {
		m := src.Metadata()
		i, err := m.FindOperator(c.Options.Operator)
		if err != nil {
			return 0, err
		}
		c.Options.Operator = m.Operators[i].UID
	}
	n, err := c.count(ctx, src)
	if err != nil {
		return 0, err
	}
	o := c.Options
	fn := &exportShardFn{Input: c.Input, Out: c.Out, Shards: n,
		Format: string(o.Format), Compression: string(o.Compression), Operator: o.Operator, State: o.State,
		Now: o.Now, MaxRowsPerFile: o.MaxRowsPerFile, RowGroupRows: o.RowGroupRows, Workers: o.Workers}
	s = s.Scope("export")
	done := beam.ParDo(s, fn, shards(s, n))
	beam.ParDo0(s, &commitFn{Out: c.Out, Shards: n, Force: c.Force, Export: true}, afterAll(s, done))
	return n, nil
}

// exportShardFn exports one shard into its part. Its fields are
// export.Options' that a shard needs, as Beam encodes a DoFn's fields.
type exportShardFn struct {
	Input, Out          string
	Shards              int
	Format, Compression string
	Operator, State     string
	Now                 *int64
	MaxRowsPerFile      int64
	RowGroupRows        int
	Workers             int
}

func (f *exportShardFn) ProcessElement(ctx context.Context, i int) (int, error) {
	src, err := open(ctx, f.Input)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	o := export.Options{Format: export.Format(f.Format), Compression: export.Compression(f.Compression),
		Operator: f.Operator, State: f.State, Now: f.Now, MaxRowsPerFile: f.MaxRowsPerFile, RowGroupRows: f.RowGroupRows, Workers: f.Workers}
	sp := shard.Spec{Index: i, Count: f.Shards}
	if err := shard.NarrowExport(ctx, src, sp, &o); err != nil {
		return 0, err
	}
	// Each part records what it is a part of, for the commit to check.
	part := shard.ExportPartOf(src.Metadata(), o, sp)
	o.Part = part.JSON()
	// A retried shard replaces its part from the first attempt.
	out, err := exportPart(ctx, f.Input, sp.Part(f.Out))
	if err != nil {
		return 0, err
	}
	defer out.Close()
	if _, err := export.Run(ctx, src, out, o); err != nil {
		out.Abort()
		return 0, fmt.Errorf("export shard %s: %w", sp, err)
	}
	if err := shard.RecordPart(ctx, out, sp.Part(f.Out), part); err != nil {
		out.Abort()
		return 0, err
	}
	if err := out.Publish(ctx); err != nil {
		out.Abort()
		return 0, err
	}
	return i, nil
}

// exportPart opens a shard's part for writing: a directory staged beside
// it, or in a bucket, an export target finished by its marker, as export
// --out writes one.
func exportPart(ctx context.Context, input, part string) (interface {
	storage.Staging
	Close() error
}, error) {
	loc, err := storage.ParseLocation(part)
	if err != nil {
		return nil, err
	}
	if loc.IsBucket() {
		return storage.OpenTarget(ctx, part, storage.TargetOptions{Force: true, Marker: export.Marker})
	}
	st, err := export.Stage(input, part, true)
	if err != nil {
		return nil, err
	}
	return nopClose{st}, nil
}

type nopClose struct{ storage.Staging }

func (nopClose) Close() error { return nil }

func init() {
	register.DoFn2x2[context.Context, int, int, error](&exportShardFn{})
}
