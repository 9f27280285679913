package rewrite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// A rewrite that decodes every segment of a savepoint in a bucket (each
// value rewritten) reads the segments of each file ahead, adjacent ones in
// one request, each byte once, where it made a request per segment; what
// it writes is what the same rewrite writes from disk.
func TestWriteFilesReadsDecodedSegmentsAhead(t *testing.T) {
	ctx := context.Background()
	srv := storetest.Start(t)
	srv.Env(t)
	srv.Bucket(t, "state")
	in := filepath.Join(t.TempDir(), "in")
	// Compressed, so that the rewrite finds the codec from the index alone.
	if err := spgen.Write(in, spgen.Config{Seed: 4, Users: 400, Accounts: 40, Parallelism: 2, MaxParallelism: 128, Now: 1_700_000_000_000,
		Compression: snapshotfmt.CodecZstd}); err != nil {
		t.Fatal(err)
	}
	var data int64
	for name, n := range srv.Upload(t, in, "state", "in") {
		if name != savepoint.MetadataFile {
			data += n
		}
	}
	p := storetest.NewProxy(t, srv.Endpoint())
	var c storage.Counters
	loc := storetest.URL(p.URL, "state", "in")
	src, err := layouts.OpenLocation(ctx, loc, storage.Options{Counters: &c})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	sameValue := func(dst []byte, e *savepoint.Entry) ([]byte, error) { return append(dst, e.Value...), nil }
	rewriteTo := func(src savepoint.Source, input, out string) int {
		plans, err := rewrite.SameLayout(ctx, src, func(seg savepoint.Segment) (rewrite.SegmentPlan, bool) {
			return rewrite.SegmentPlan{Src: seg, Dst: seg.Ref, Value: sameValue}, true
		})
		if err != nil {
			t.Fatal(err)
		}
		segments := 0
		for _, fp := range plans {
			segments += len(fp.Segments)
		}
		err = rewrite.Execute(ctx, input, rewrite.DeriveMetadata(input, src.Metadata(), "test"), rewrite.Options{Out: out},
			func(ctx context.Context, o *rewrite.Output) error {
				return rewrite.WriteFiles(ctx, src, o, plans, 1, nil)
			})
		if err != nil {
			t.Fatal(err)
		}
		return segments
	}
	read, gets := c.BytesRead.Load(), p.Ops("GetObject")
	out := filepath.Join(t.TempDir(), "out")
	segments := rewriteTo(src, loc, out)
	read, gets = c.BytesRead.Load()-read, p.Ops("GetObject")-gets
	if read != data || gets > segments/10 {
		t.Errorf("the rewrite read %d bytes in %d GETs; want the %d of the data files in far fewer GETs than their %d segments", read, gets, data, segments)
	}
	want := filepath.Join(t.TempDir(), "want")
	rewriteTo(sptest.Open(t, in), in, want)
	sptest.SameFiles(t, want, out)
	t.Logf("%d segments, %d bytes, %d GETs", segments, read, gets)
}
