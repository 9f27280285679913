package snapshotfmt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/savepoint"
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
	if err := verify(ctx, r); err != nil {
		t.Fatal(err)
	}
	for op := range r.Metadata().Operators {
		for _, seg := range opSegments(r, op) {
			br := newBlockReader(ctx, r.files[seg.File].f, seg.File, &seg)
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

	checkEveryFlip(t, base)
	t.Logf("%d bytes in %d files, %d zstd blocks, each byte flipped twice", total, len(base.files), zstdBlocks)
}

// checkEveryFlip flips every byte of every file of base, one at a time,
// with two masks, and requires Open or Verify to report each flip as a
// located error that matches a sentinel.
func checkEveryFlip(t *testing.T, base *memDir) {
	t.Helper()
	ctx := context.Background()
	d := base.clone()
	for name, b := range d.files {
		for i := range b {
			for _, mask := range []byte{0xFF, 0x01} {
				b[i] ^= mask
				err := openAndVerify(ctx, d)
				b[i] ^= mask
				var e *savepoint.Error
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
}

// The same for the checked-in golden savepoint that the example jobs write,
// so that real data (Avro values, TTL, timers, operator and broadcast
// state) is covered too.
func TestEveryFlipOfTheGoldenSavepointIsDetected(t *testing.T) {
	dir := filepath.Join("..", "testdata", "savepoints", "v2", "tiny")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("golden savepoint not available: %v", err)
	}
	base := newMemDir()
	total := 0
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		base.files[e.Name()] = b
		total += len(b)
	}
	if total > 16<<10 {
		t.Fatalf("the golden savepoint is %d bytes, above 16 KiB", total)
	}
	if err := openAndVerify(context.Background(), base); err != nil {
		t.Fatalf("the golden savepoint does not read back whole: %v", err)
	}
	checkEveryFlip(t, base)
	t.Logf("%d bytes in %d files, each byte flipped twice", total, len(base.files))
}

func openAndVerify(ctx context.Context, d *memDir) error {
	r, err := Open(ctx, d)
	if err != nil {
		return err
	}
	defer r.Close()
	return verify(ctx, r)
}
