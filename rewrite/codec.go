package rewrite

import (
	"context"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// Codec returns the compression the input was written with, so that the
// blocks a rewrite encodes are compressed as the engine would have
// compressed them: zstd when any segment starts with a compressed block.
// The writer stores a block compressed only when that is smaller, so a
// savepoint written with zstd on may still start segments uncompressed;
// every segment is looked at, one byte each, until one is compressed. A
// source with no stateproc data files gets no compression.
func Codec(ctx context.Context, src savepoint.Source) (snapshotfmt.Codec, error) {
	r, ok := canonical(src)
	if !ok {
		return snapshotfmt.CodecNone, nil
	}
	segs, err := savepoint.AllSegments(ctx, r)
	if err != nil {
		return 0, err
	}
	for _, s := range segs {
		c, err := r.SegmentCodec(s)
		if err != nil {
			return 0, err
		}
		if c == snapshotfmt.CodecZstd {
			return c, nil
		}
	}
	return snapshotfmt.CodecNone, nil
}
