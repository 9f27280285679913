package rewrite

import (
	"context"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// Codec returns the compression the input was written with, so that the
// blocks a rewrite encodes are compressed as the engine would have
// compressed them (snapshotfmt.Reader.Codec). A source with no stateproc
// data files gets no compression.
func Codec(ctx context.Context, src savepoint.Source) (snapshotfmt.Codec, error) {
	r, ok := canonical(src)
	if !ok {
		return snapshotfmt.CodecNone, nil
	}
	return r.Codec(ctx)
}
