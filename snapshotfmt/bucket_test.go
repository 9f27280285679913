package snapshotfmt_test

import (
	"bytes"
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// copyInto writes the savepoint of r into target as a rewrite that changes
// nothing but what drop leaves out: every data file under its given name,
// its segments copied in file order, read ahead when ahead is set.
func copyInto(t *testing.T, r *snapshotfmt.Reader, target snapshotfmt.Target, drop func(savepoint.Segment) bool, ahead bool) {
	t.Helper()
	ctx := context.Background()
	w, err := snapshotfmt.NewWriter(target, r.Metadata(), snapshotfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	segs, err := savepoint.AllSegments(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(segs, func(a, b savepoint.Segment) int { return cmp.Compare(a.Offset, b.Offset) })
	for _, name := range r.DataFiles() {
		f, err := w.CreateDataFile(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		var kept []savepoint.Segment
		for _, s := range segs {
			if s.File == name && !drop(s) {
				kept = append(kept, s)
			}
		}
		var a *snapshotfmt.Ahead
		if ahead {
			if a, err = r.ReadAhead(ctx, kept); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range kept {
			if a != nil {
				err = f.CopySegmentAhead(ctx, a, s, s.Ref, s.KeyGroup)
			} else {
				err = f.CopySegment(ctx, r, s, s.Ref, s.KeyGroup)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		a.Close()
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestWritesIntoABucket writes savepoints into versitygw, through the proxy
// that counts requests and holds S3's part rule, and the same savepoints
// into local directories: the names and bytes agree, a data file that
// is a source file whole is one CopyObject, long runs of a file in the same
// bucket are copied by the server, and the rest goes through the client.
func TestWritesIntoABucket(t *testing.T) {
	ctx := context.Background()
	srv := storetest.StartWithBucket(t, "state")
	local := filepath.Join(t.TempDir(), "in")
	if err := spgen.Write(local, spgen.Config{Seed: 4, Users: 4200, Accounts: 100, Parallelism: 1, MaxParallelism: 128,
		Now: 1_700_000_000_000, Pad: 14000}); err != nil {
		t.Fatal(err)
	}
	in := sptest.Open(t, local)
	big := ""
	for _, name := range in.DataFiles() {
		b, err := os.ReadFile(filepath.Join(local, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 2*16<<20+1<<20 {
			big = name
		}
		if _, err := srv.Client(srv.Endpoint()).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String("in/" + name), Body: bytes.NewReader(b)}); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes", name, len(b))
	}
	if _, err := srv.Client(srv.Endpoint()).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String("in/_metadata"), Body: bytes.NewReader(mustRead(t, filepath.Join(local, "_metadata")))}); err != nil {
		t.Fatal(err)
	}
	if big == "" {
		t.Fatal("no data file is long enough for two runs the server copies")
	}
	p := storetest.NewProxy(t, srv.Endpoint())
	dir, err := storage.OpenDir(ctx, storetest.URL(p.URL, "state", "in"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	fromBucket, err := snapshotfmt.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fromBucket.Close()

	// middle drops one segment from the middle of the big file, which
	// leaves a run on each side.
	bigSegs := 0
	for _, s := range mustSegments(t, in) {
		if s.File == big {
			bigSegs++
		}
	}
	seen := 0
	middle := func(s savepoint.Segment) bool {
		if s.File != big {
			return false
		}
		seen++
		return seen == bigSegs/2
	}
	keepAll := func(savepoint.Segment) bool { return false }

	for _, tc := range []struct {
		name string
		src  *snapshotfmt.Reader
		drop func(savepoint.Segment) bool
		// copies and partCopies are the CopyObject and UploadPartCopy
		// requests the write must make.
		copies, partCopies int
		ahead              bool
	}{
		{"unchanged, bucket to bucket", fromBucket, keepAll, len(in.DataFiles()), 0, false},
		{"unchanged, bucket to bucket, read ahead", fromBucket, keepAll, len(in.DataFiles()), 0, true},
		{"a segment dropped, bucket to bucket", fromBucket, middle, len(in.DataFiles()) - 1, 2, false},
		{"a segment dropped, bucket to bucket, read ahead", fromBucket, middle, len(in.DataFiles()) - 1, 2, true},
		{"local to bucket", in, keepAll, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen = 0
			ref := filepath.Join(t.TempDir(), "ref")
			st, err := storage.Stage(ref, false)
			if err != nil {
				t.Fatal(err)
			}
			copyInto(t, in, st, tc.drop, false)
			want := sptest.Open(t, ref)

			seen = 0
			copies, partCopies, sent := p.Ops("CopyObject"), p.Ops("UploadPartCopy"), p.BodyBytes()
			prefix := "out/" + filepath.Base(t.Name())
			tg, err := storage.OpenTarget(ctx, storetest.URL(p.URL, "state", prefix), storage.TargetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer tg.Close()
			served := p.ServedBytes()
			p.TakeConcurrency("GetObject")
			copyInto(t, tc.src, tg, tc.drop, tc.ahead)
			copies, partCopies, sent = p.Ops("CopyObject")-copies, p.Ops("UploadPartCopy")-partCopies, p.BodyBytes()-sent
			gets, _ := p.TakeConcurrency("GetObject")
			served = p.ServedBytes() - served

			out, err := storage.OpenDir(ctx, storetest.URL(srv.Endpoint(), "state", prefix), storage.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			got, err := snapshotfmt.Open(ctx, out)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Close()
			if err := sptest.Verify(got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.DataFiles(), want.DataFiles()) {
				t.Fatalf("in the bucket %v, locally %v", got.DataFiles(), want.DataFiles())
			}
			var total int64
			for _, name := range append(want.DataFiles(), storage.MetadataName) {
				b := mustRead(t, filepath.Join(ref, name))
				total += int64(len(b))
				if !bytes.Equal(readObject(t, out, name), b) {
					t.Fatalf("%s: other bytes in the bucket than locally", name)
				}
			}
			if copies != tc.copies || partCopies < tc.partCopies || (tc.partCopies == 0 && partCopies != 0) {
				t.Errorf("%d CopyObject and %d UploadPartCopy requests, want %d and %d", copies, partCopies, tc.copies, tc.partCopies)
			}
			copied := storage.CountersOf(tg).BytesCopied.Load()
			if copied+sent < total || (tc.copies > 0 && sent > total/100) {
				t.Errorf("%d bytes copied by the server and %d sent, of %d", copied, sent, total)
			}
			if tc.src == fromBucket {
				// Each segment kept is read once, reading ahead or not: the
				// output's segments are those bytes.
				var kept int64
				for _, s := range mustSegments(t, got) {
					kept += s.Length
				}
				if served != kept {
					t.Errorf("read %d bytes of the source, its segments kept hold %d", served, kept)
				}
				// A segment at a time is one read in flight; reading ahead
				// keeps several.
				if tc.ahead && gets < 2 || !tc.ahead && gets != 1 {
					t.Errorf("at most %d GETs in flight", gets)
				}
			}
			t.Logf("%d bytes: %d copied by the server, %d sent, %d read; %d CopyObject, %d UploadPartCopy; at most %d GETs in flight",
				total, copied, sent, served, copies, partCopies, gets)
		})
	}
}

// TestCopySegmentAheadInOrder: the segments read ahead are copied in the
// order they were given, or the copy is refused.
func TestCopySegmentAheadInOrder(t *testing.T) {
	ctx := context.Background()
	srv := storetest.StartWithBucket(t, "state")
	local := filepath.Join(t.TempDir(), "in")
	if err := spgen.Write(local, spgen.Config{Seed: 4, Users: 200, Accounts: 10, Parallelism: 1, MaxParallelism: 128, Now: 1_700_000_000_000}); err != nil {
		t.Fatal(err)
	}
	in := sptest.Open(t, local)
	for _, name := range append(in.DataFiles(), storage.MetadataName) {
		if _, err := srv.Client(srv.Endpoint()).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String("in/" + name),
			Body: bytes.NewReader(mustRead(t, filepath.Join(local, name)))}); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := storage.OpenDir(ctx, storetest.URL(srv.Endpoint(), "state", "in"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	r, err := snapshotfmt.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var segs []savepoint.Segment
	for _, s := range mustSegments(t, r) {
		if s.File == r.DataFiles()[0] {
			segs = append(segs, s)
		}
	}
	slices.SortFunc(segs, func(a, b savepoint.Segment) int { return cmp.Compare(a.Offset, b.Offset) })
	if len(segs) < 2 {
		t.Fatalf("%d segments in %s, want two at least", len(segs), r.DataFiles()[0])
	}
	a, err := r.ReadAhead(ctx, segs)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	st, err := storage.Stage(filepath.Join(t.TempDir(), "out"), false)
	if err != nil {
		t.Fatal(err)
	}
	w, err := snapshotfmt.NewWriter(st, r.Metadata(), snapshotfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	f, err := w.CreateDataFile(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.CopySegmentAhead(ctx, a, segs[1], segs[1].Ref, segs[1].KeyGroup); err == nil || !strings.Contains(err.Error(), "not the next segment read ahead") {
		t.Fatalf("copying the second segment read ahead first = %v", err)
	}
	if err := f.CopySegmentAhead(ctx, a, segs[0], segs[0].Ref, segs[0].KeyGroup); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustSegments(t *testing.T, r *snapshotfmt.Reader) []savepoint.Segment {
	t.Helper()
	segs, err := savepoint.AllSegments(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return segs
}

func readObject(t *testing.T, d storage.Dir, name string) []byte {
	t.Helper()
	f, err := d.Open(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, f.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

// Segments copied from a bucket are read ahead with adjacent ones in one
// request: a file of small segments takes far fewer GETs than segments,
// reads each byte once, and copies to what a copy from disk gives.
func TestCopyAheadReadsAdjacentSegmentsTogether(t *testing.T) {
	ctx := context.Background()
	srv := storetest.StartWithBucket(t, "state")
	local := filepath.Join(t.TempDir(), "in")
	if err := spgen.Write(local, spgen.Config{Seed: 8, Users: 300, Accounts: 20, Parallelism: 2, MaxParallelism: 128, Now: 1_700_000_000_000}); err != nil {
		t.Fatal(err)
	}
	in := sptest.Open(t, local)
	srv.Upload(t, local, "state", "in")
	p := storetest.NewProxy(t, srv.Endpoint())
	dir, err := storage.OpenDir(ctx, storetest.URL(p.URL, "state", "in"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	r, err := snapshotfmt.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	segs := mustSegments(t, r)
	var segBytes int64
	for _, s := range segs {
		segBytes += s.Length
	}
	keepAll := func(savepoint.Segment) bool { return false }
	ref := filepath.Join(t.TempDir(), "ref")
	st, err := storage.Stage(ref, false)
	if err != nil {
		t.Fatal(err)
	}
	copyInto(t, in, st, keepAll, false)
	gets, served := p.Ops("GetObject"), p.ServedBytes()
	out := filepath.Join(t.TempDir(), "out")
	st, err = storage.Stage(out, false)
	if err != nil {
		t.Fatal(err)
	}
	copyInto(t, r, st, keepAll, true)
	gets, served = p.Ops("GetObject")-gets, p.ServedBytes()-served
	// Each byte once: the segments', and the files' heads if the copies
	// open the files.
	heads := int64(12 * len(r.DataFiles()))
	if gets*10 > len(segs) || served < segBytes || served > segBytes+heads {
		t.Errorf("%d GETs for %d bytes, want a tenth of the %d segments' at most, for their %d bytes and the files' heads", gets, served, len(segs), segBytes)
	}
	sptest.SameFiles(t, ref, out)
	t.Logf("%d segments, %d bytes, in %d GETs", len(segs), served, gets)
}
