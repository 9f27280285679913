package rewrite

import "github.com/stateproc/stateproc/snapshotfmt"

// Codec returns the compression the input was written with, so that the
// blocks a rewrite encodes are compressed as the engine would have
// compressed them: zstd when any segment starts with a compressed block.
// The writer stores a block compressed only when that is smaller, so a
// savepoint written with zstd on may still start segments uncompressed;
// every segment is looked at, one byte each, until one is compressed.
func Codec(r *snapshotfmt.Reader) (snapshotfmt.Codec, error) {
	for op := range r.Metadata().Operators {
		for _, s := range r.Segments(op) {
			c, err := r.SegmentCodec(s)
			if err != nil {
				return 0, err
			}
			if c == snapshotfmt.CodecZstd {
				return c, nil
			}
		}
	}
	return snapshotfmt.CodecNone, nil
}
