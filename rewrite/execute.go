package rewrite

import (
	"context"
	"slices"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// Execute runs one rewrite of the savepoint read from input into a new
// savepoint with metadata meta: it creates the output (see Create), calls
// fill with it, and commits. With opts.DryRun, it checks the target if one
// is given and calls fill with a nil output, which must then write
// nothing.
func Execute(ctx context.Context, input string, meta *savepoint.Metadata, opts Options,
	fill func(ctx context.Context, o *Output) error) error {
	if opts.DryRun {
		if opts.Out != "" {
			if err := CheckTarget(input, opts.Out, opts.Force); err != nil {
				return err
			}
		}
		return fill(ctx, nil)
	}
	o, err := Create(ctx, input, meta, opts)
	if err != nil {
		return err
	}
	defer o.Close()
	if err := fill(ctx, o); err != nil {
		return err
	}
	return o.Commit(ctx)
}

// DeriveMetadata returns the metadata of a rewrite's output: the input's,
// with its own copy of the operator list (each operator a copy that may be
// changed; their states are shared and must not be), and the lineage
// extended with did.
func DeriveMetadata(input string, in *savepoint.Metadata, did string) *savepoint.Metadata {
	out := *in
	out.Operators = slices.Clone(in.Operators)
	out.Lineage = Lineage(input, in, did)
	return &out
}

// WriterOptions returns the block options for rewriting src: the default
// block size, and the input's compression.
func WriterOptions(ctx context.Context, src savepoint.Source) (snapshotfmt.Options, error) {
	c, err := Codec(ctx, src)
	return snapshotfmt.Options{Compression: c}, err
}

// PlanOptions returns the block options for writing plans from src: those
// of WriterOptions where a plan streams entries into blocks of its own,
// and the defaults, without a byte read, where every segment is copied as
// bytes or dropped, so that no block is encoded. (Finding the input's
// compression reads a byte of every segment: a request each, in a bucket.)
func PlanOptions(ctx context.Context, src savepoint.Source, plans []FilePlan) (snapshotfmt.Options, error) {
	for _, fp := range plans {
		for i := range fp.Segments {
			if p := &fp.Segments[i]; !p.Drop {
				if _, ok := copied(src, p); !ok {
					return WriterOptions(ctx, src)
				}
			}
		}
	}
	return snapshotfmt.Options{}, nil
}

// BlockOptions returns the block options of a savepoint written from no
// input savepoint: the default block size, zstd blocks when zstd is set.
func BlockOptions(zstd bool) snapshotfmt.Options {
	if zstd {
		return snapshotfmt.Options{Compression: snapshotfmt.CodecZstd}
	}
	return snapshotfmt.Options{}
}
