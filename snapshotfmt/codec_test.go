package snapshotfmt_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// The codec a savepoint was written with: of an uncompressed savepoint of
// many segments in a bucket, from the index alone, reading nothing; of one
// of a few segments, from the first byte of each, read together (the proxy
// holds the GETs until all are in, and lets them on after a while when
// they come one at a time), a byte and a GET each; of a savepoint written
// with zstd, from the index alone.
func TestCodecOfASavepoint(t *testing.T) {
	ctx := context.Background()
	srv, p, c, r, local := bucketSavepoint(t)
	segs, err := savepoint.AllSegments(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) <= 16 {
		t.Fatalf("%d segments, want many", len(segs))
	}
	if want, err := local.Codec(ctx); err != nil || want != snapshotfmt.CodecNone {
		t.Fatalf("the uncompressed savepoint on disk: %v, %v", want, err)
	}
	gets, read := p.Ops("GetObject"), c.BytesRead.Load()
	codec, err := r.Codec(ctx)
	if err != nil || codec != snapshotfmt.CodecNone {
		t.Fatalf("the uncompressed savepoint in the bucket: %v, %v", codec, err)
	}
	if gets, read = p.Ops("GetObject")-gets, c.BytesRead.Load()-read; gets != 0 || read != 0 {
		t.Errorf("%d GETs for %d bytes, want none for %d segments", gets, read, len(segs))
	}

	small := filepath.Join(t.TempDir(), "small")
	if err := spgen.Write(small, spgen.Config{Seed: 4, Users: 3, Accounts: 1, Parallelism: 1, MaxParallelism: 2, Now: 1_700_000_000_000}); err != nil {
		t.Fatal(err)
	}
	srv.Upload(t, small, "state", "small")
	d, err := storage.OpenDir(ctx, storetest.URL(p.URL, "state", "small"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	sr, err := snapshotfmt.Open(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	if segs, err = savepoint.AllSegments(ctx, sr); err != nil || len(segs) < 2 || len(segs) > 16 {
		t.Fatalf("%d segments, %v; want a few", len(segs), err)
	}
	sc := storage.CountersOf(d)
	gets, read = p.Ops("GetObject"), sc.BytesRead.Load()
	together := p.Gather("GetObject", len(segs), 3*time.Second)
	if codec, err := sr.Codec(ctx); err != nil || codec != snapshotfmt.CodecNone {
		t.Fatalf("the small uncompressed savepoint in the bucket: %v, %v", codec, err)
	}
	if gets, read = p.Ops("GetObject")-gets, sc.BytesRead.Load()-read; gets != len(segs) || read != int64(len(segs)) || !together() {
		t.Errorf("%d GETs for %d bytes (together: %v), want a GET and a byte for each of %d segments", gets, read, together(), len(segs))
	}

	dir := filepath.Join(t.TempDir(), "zstd")
	if err := spgen.Write(dir, spgen.Config{Seed: 9, Users: 600, Accounts: 50, Parallelism: 2, MaxParallelism: 128, Now: 1_700_000_000_000,
		Compression: snapshotfmt.CodecZstd}); err != nil {
		t.Fatal(err)
	}
	var zc storage.Counters
	zd, err := storage.OpenDir(ctx, dir, storage.Options{Counters: &zc})
	if err != nil {
		t.Fatal(err)
	}
	defer zd.Close()
	z, err := snapshotfmt.Open(ctx, zd)
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
