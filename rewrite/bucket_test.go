package rewrite_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

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
	srv := storetest.StartWithBucket(t, "state")
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

// A rewrite into a bucket that keeps many files whole has the store copy
// them with many requests in flight, not as many as it has workers: the
// proxy holds the CopyObject requests until eight are in (and lets them
// on after a while when they come fewer at a time). The bucket then holds
// the files the rewrite writes on disk.
func TestWriteFilesCopiesManyFilesAtOnce(t *testing.T) {
	ctx := context.Background()
	srv := storetest.StartWithBucket(t, "state")
	in := filepath.Join(t.TempDir(), "in")
	if err := spgen.Write(in, spgen.Config{Seed: 5, Users: 200, Accounts: 20, Parallelism: 8, MaxParallelism: 128, Now: 1_700_000_000_000}); err != nil {
		t.Fatal(err)
	}
	srv.Upload(t, in, "state", "in")
	p := storetest.NewProxy(t, srv.Endpoint())
	loc := storetest.URL(p.URL, "state", "in")
	src, err := layouts.OpenLocation(ctx, loc, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	rewriteTo := func(src savepoint.Source, input, out string) int {
		plans, err := rewrite.SameLayout(ctx, src, func(seg savepoint.Segment) (rewrite.SegmentPlan, bool) {
			return rewrite.SegmentPlan{Src: seg, Dst: seg.Ref}, true
		})
		if err != nil {
			t.Fatal(err)
		}
		err = rewrite.Execute(ctx, input, rewrite.DeriveMetadata(input, src.Metadata(), "test"), rewrite.Options{Out: out},
			func(ctx context.Context, o *rewrite.Output) error {
				return rewrite.WriteFiles(ctx, src, o, plans, 2, nil)
			})
		if err != nil {
			t.Fatal(err)
		}
		return len(plans)
	}
	copies := p.Ops("CopyObject")
	together := p.Gather("CopyObject", 8, 3*time.Second)
	files := rewriteTo(src, loc, storetest.URL(p.URL, "state", "out"))
	if files < 8 {
		t.Fatalf("%d data files, want many", files)
	}
	if n := p.Ops("CopyObject") - copies; n != files || !together() {
		t.Errorf("%d CopyObject requests for %d files (eight in flight together: %v), want one each, many at once", n, files, together())
	}
	// The data files; _metadata names the input, which differs.
	want := filepath.Join(t.TempDir(), "want")
	rewriteTo(sptest.Open(t, in), in, want)
	names, err := filepath.Glob(filepath.Join(want, "*.data"))
	if err != nil || len(names) != files {
		t.Fatalf("%d data files on disk, %v", len(names), err)
	}
	c := srv.Client(srv.Endpoint())
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("state"), Key: aws.String("out/" + filepath.Base(name))})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(obj.Body)
		obj.Body.Close()
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s differs in the bucket (%v)", filepath.Base(name), err)
		}
	}
}
