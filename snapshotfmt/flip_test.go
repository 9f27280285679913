package snapshotfmt

import (
	"context"
	"errors"
	"testing"
)

// flipSavepoint is a small savepoint with every kind of data: TTL value and
// map states, a list, reducing state with window namespaces, timers,
// operator and broadcast state, and zstd on, in blocks small enough that
// some compress and some do not.
func flipSavepoint(t testing.TB) *memDir {
	data := testData(24)
	for _, sd := range data {
		for i := range sd.entries {
			if len(sd.entries[i].Value) > 100 {
				sd.entries[i].Value = sd.entries[i].Value[:100]
			}
		}
	}
	d := newMemDir()
	writeSavepoint(t, d, testMeta(), data, Options{Compression: CodecZstd, BlockSize: 200})
	return d
}

// The project's acceptance criterion: every single-byte change to any file
// of a savepoint is reported as an error by Open or Verify, and none panics.
func TestEveryFlipIsDetected(t *testing.T) {
	base := flipSavepoint(t)
	total, zstdBlocks := 0, 0
	for _, b := range base.files {
		total += len(b)
	}
	if total > 16<<10 {
		t.Fatalf("the savepoint is %d bytes; keep it under 16 KiB so that the test stays fast", total)
	}
	ctx := context.Background()
	r, err := Open(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	for op := range r.Metadata().Operators {
		for _, seg := range r.Segments(op) {
			br := newBlockReader(r.files[seg.File], seg.File, &seg)
			for br.next() == nil {
				if br.codec == CodecZstd {
					zstdBlocks++
				}
			}
		}
	}
	if zstdBlocks == 0 {
		t.Fatal("no block is compressed")
	}

	d := base.clone()
	for name, b := range d.files {
		for i := range b {
			for _, mask := range []byte{0xFF, 0x01} {
				b[i] ^= mask
				err := openAndVerify(ctx, d)
				b[i] ^= mask
				var e *Error
				switch {
				case err == nil:
					t.Errorf("%s: byte %d ^ %#02x read back without an error", name, i, mask)
				case !errors.As(err, &e):
					t.Errorf("%s: byte %d ^ %#02x: error %v is not an *Error", name, i, mask, err)
				case !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotSavepoint) &&
					!errors.Is(err, ErrNewerVersion) && !errors.Is(err, ErrUnsupportedVersion):
					t.Errorf("%s: byte %d ^ %#02x: error %v matches no sentinel", name, i, mask, err)
				}
			}
		}
	}
	t.Logf("%d bytes in %d files, %d zstd blocks, each byte flipped twice", total, len(d.files), zstdBlocks)
}

func openAndVerify(ctx context.Context, d *memDir) error {
	r, err := Open(ctx, d)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Verify(ctx)
}
