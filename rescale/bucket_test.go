package rescale_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/rescale"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// A rescale of a savepoint in a bucket reads the segments ahead of its
// workers, as a scan does: on one worker, once the data files are open,
// the GETs of the first segments are in flight together (the proxy holds
// them until two are in, and lets them on after a while when they come
// one at a time), adjacent segments in one request, each byte once. The
// output is that of a rescale from disk, byte for byte.
func TestRescaleReadsABucketAhead(t *testing.T) {
	ctx := context.Background()
	srv := storetest.StartWithBucket(t, "state")
	in := filepath.Join(t.TempDir(), "in")
	// Compressed, so that the rewrite finds the codec from the index alone.
	if err := spgen.Write(in, spgen.Config{Seed: 6, Users: 400, Accounts: 40, Parallelism: 2, MaxParallelism: 128, Now: 1_700_000_000_000,
		Compression: snapshotfmt.CodecZstd}); err != nil {
		t.Fatal(err)
	}
	local := sptest.Open(t, in)
	var segBytes int64
	segs, err := savepoint.AllSegments(ctx, local)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range segs {
		segBytes += s.Length
	}
	srv.Upload(t, in, "state", "in")
	p := storetest.NewProxy(t, srv.Endpoint())
	var c storage.Counters
	loc := storetest.URL(p.URL, "state", "in")
	src, err := layouts.OpenLocation(ctx, loc, storage.Options{Counters: &c})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	opts := rescale.Options{MaxParallelism: 720, Workers: 1}
	read, gets := c.BytesRead.Load(), p.Ops("GetObject")
	// The first operator's two data files: their heads, then their
	// segments, adjacent ones in one GET.
	p.Gather("GetObject", 2, 3*time.Second)
	segments := p.Gather("GetObject", 2, 3*time.Second)
	out := filepath.Join(t.TempDir(), "out")
	if _, err := rescale.Run(ctx, src, loc, opts, rewrite.Options{Out: out}); err != nil {
		t.Fatal(err)
	}
	if !segments() {
		t.Errorf("the first segments were not read together")
	}
	preambles := int64(12 * len(local.DataFiles()))
	if read, gets = c.BytesRead.Load()-read, p.Ops("GetObject")-gets; read != segBytes+preambles || gets >= len(segs) {
		t.Errorf("the rescale read %d bytes in %d GETs; want the %d of its %d segments, and the files' heads, in fewer GETs",
			read, gets, segBytes, len(segs))
	}
	want := filepath.Join(t.TempDir(), "want")
	if _, err := rescale.Run(ctx, local, in, opts, rewrite.Options{Out: want}); err != nil {
		t.Fatal(err)
	}
	sptest.SameFiles(t, want, out)
	t.Logf("%d segments, %d bytes, in %d GETs", len(segs), read, gets)
}

// A rescale by a factor of two up, or of four down, takes the direct path,
// which reads each new key group's input segments as it writes it: from a
// bucket, the walks read them ahead, adjacent segments in one request, so
// that the writers do not wait a round trip for each. The output is that
// of a rescale from disk, byte for byte.
func TestRescaleDirectReadsABucketAhead(t *testing.T) {
	ctx := context.Background()
	srv := storetest.StartWithBucket(t, "state")
	in := filepath.Join(t.TempDir(), "in")
	if err := spgen.Write(in, spgen.Config{Seed: 7, Users: 400, Accounts: 40, Parallelism: 2, MaxParallelism: 128, Now: 1_700_000_000_000,
		Compression: snapshotfmt.CodecZstd}); err != nil {
		t.Fatal(err)
	}
	local := sptest.Open(t, in)
	segs, err := savepoint.AllSegments(ctx, local)
	if err != nil {
		t.Fatal(err)
	}
	var keyedBytes int64
	keyed := 0
	for _, s := range segs {
		if local.Metadata().Operators[s.Ref.Operator].Keyed() {
			keyedBytes += s.Length
			keyed++
		}
	}
	srv.Upload(t, in, "state", "in")
	p := storetest.NewProxy(t, srv.Endpoint())
	loc := storetest.URL(p.URL, "state", "in")
	for _, c := range []struct {
		maxP int
		// reads is how many times each segment is read: once for each
		// new key group that takes some of its keys.
		reads int64
	}{{256, 2}, {32, 1}} {
		var cnt storage.Counters
		src, err := layouts.OpenLocation(ctx, loc, storage.Options{Counters: &cnt})
		if err != nil {
			t.Fatal(err)
		}
		opts := rescale.Options{MaxParallelism: c.maxP}
		read, gets := cnt.BytesRead.Load(), p.Ops("GetObject")
		out := filepath.Join(t.TempDir(), "out")
		if _, err := rescale.Run(ctx, src, loc, opts, rewrite.Options{Out: out}); err != nil {
			t.Fatal(err)
		}
		src.Close()
		read, gets = cnt.BytesRead.Load()-read, p.Ops("GetObject")-gets
		preambles := int64(12 * len(local.DataFiles()))
		if read != c.reads*keyedBytes+preambles || gets >= keyed {
			t.Errorf("max parallelism %d: read %d bytes in %d GETs; want %d times the %d bytes of the %d keyed segments, and the files' heads, in fewer GETs",
				c.maxP, read, gets, c.reads, keyedBytes, keyed)
		}
		want := filepath.Join(t.TempDir(), "want")
		if _, err := rescale.Run(ctx, local, in, opts, rewrite.Options{Out: want}); err != nil {
			t.Fatal(err)
		}
		sptest.SameFiles(t, want, out)
		t.Logf("max parallelism %d: %d keyed segments, %d bytes, in %d GETs", c.maxP, keyed, read, gets)
	}
}
