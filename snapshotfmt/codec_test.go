package snapshotfmt_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// The codec a savepoint was written with: of an uncompressed savepoint in
// a bucket, from the first byte of every segment, read 16 at a time (the
// proxy holds the GETs until 16 are in, and lets them on after a while
// when they come one at a time), a byte and a GET each; of a savepoint
// written with zstd, from the index alone, reading nothing.
func TestCodecOfASavepoint(t *testing.T) {
	ctx := context.Background()
	_, p, c, r, local := bucketSavepoint(t)
	segs, err := savepoint.AllSegments(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if want, err := local.Codec(ctx); err != nil || want != snapshotfmt.CodecNone {
		t.Fatalf("the uncompressed savepoint on disk: %v, %v", want, err)
	}
	gets, read := p.Ops("GetObject"), c.BytesRead.Load()
	together := p.Gather("GetObject", 16, 3*time.Second)
	codec, err := r.Codec(ctx)
	if err != nil || codec != snapshotfmt.CodecNone {
		t.Fatalf("the uncompressed savepoint in the bucket: %v, %v", codec, err)
	}
	if gets, read = p.Ops("GetObject")-gets, c.BytesRead.Load()-read; gets != len(segs) || read != int64(len(segs)) || !together() {
		t.Errorf("%d GETs for %d bytes (16 together: %v), want a GET and a byte for each of %d segments", gets, read, together(), len(segs))
	}

	dir := filepath.Join(t.TempDir(), "zstd")
	if err := spgen.Write(dir, spgen.Config{Seed: 9, Users: 600, Accounts: 50, Parallelism: 2, MaxParallelism: 128, Now: 1_700_000_000_000,
		Compression: snapshotfmt.CodecZstd}); err != nil {
		t.Fatal(err)
	}
	var zc storage.Counters
	d, err := storage.OpenDir(ctx, dir, storage.Options{Counters: &zc})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	z, err := snapshotfmt.Open(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	read = zc.BytesRead.Load()
	if codec, err := z.Codec(ctx); err != nil || codec != snapshotfmt.CodecZstd {
		t.Fatalf("the zstd savepoint: %v, %v", codec, err)
	}
	if n := zc.BytesRead.Load() - read; n != 0 {
		t.Errorf("the codec of the zstd savepoint read %d bytes, want none", n)
	}
}
