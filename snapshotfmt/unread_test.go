package snapshotfmt_test

import (
	"bytes"
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// unreadFiles writes the savepoint of r into w unchanged, each data file
// under its given name through CopyUnread, and through CopySegment where
// CopyUnread declines; anchor, when set, anchors every file's histograms
// there. It closes the files and reports, file by file, whether CopyUnread
// took it.
func unreadFiles(t *testing.T, r *snapshotfmt.Reader, w *snapshotfmt.Writer, anchor *int64) []bool {
	t.Helper()
	ctx := context.Background()
	segs := mustSegments(t, r)
	slices.SortFunc(segs, func(a, b savepoint.Segment) int { return cmp.Compare(a.Offset, b.Offset) })
	var took []bool
	for _, name := range r.DataFiles() {
		f, err := w.CreateDataFile(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if anchor != nil {
			f.AnchorAt(*anchor)
		}
		var mine []savepoint.Segment
		var dst []savepoint.StateRef
		for _, s := range segs {
			if s.File == name {
				mine, dst = append(mine, s), append(dst, s.Ref)
			}
		}
		ok, err := f.CopyUnread(r, mine, dst)
		if err != nil {
			t.Fatal(err)
		}
		took = append(took, ok)
		if ok {
			// Nothing more goes into a file copied whole.
			if _, err := f.Segment(mine[0].Ref, mine[0].KeyGroup); err == nil || !strings.Contains(err.Error(), "is a copy of") {
				t.Fatalf("a segment after CopyUnread: %v, want a refusal", err)
			}
		} else {
			for _, s := range mine {
				if err := f.CopySegment(ctx, r, s, s.Ref, s.KeyGroup); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return took
}

// TestCopyUnread: a data file written unchanged into a bucket of the store
// its input lies in is copied by the server without a byte of it read,
// and the output is byte for byte the one a reading copy writes. Its name
// is taken on trust: a savepoint whose names lie gives an output whose
// names lie alike. A file whose histograms are counted again, a target on
// disk, an input on disk and a file only partly copied are read instead.
func TestCopyUnread(t *testing.T) {
	ctx := context.Background()
	fx := newCopyFixture(t)
	files := len(fx.want) - 1

	t.Run("unread", func(t *testing.T) {
		r := fx.open(t, "in")
		_, w := fx.target(t, "unread")
		before, served := fx.ops(), fx.p.ServedBytes()
		took := unreadFiles(t, r, w, nil)
		if err := w.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(took, false) {
			t.Errorf("CopyUnread took %v, want every file", took)
		}
		n := fx.since(before)
		if n["GetObject"] != 0 || fx.p.ServedBytes() != served {
			t.Errorf("%d GETs, %d bytes served; want none", n["GetObject"], fx.p.ServedBytes()-served)
		}
		if n["CopyObject"] != files || n["UploadPartCopy"] != 0 {
			t.Errorf("requests %v, want %d CopyObject and no UploadPartCopy", n, files)
		}
		fx.check(t, "unread")
	})

	t.Run("lying names carried over", func(t *testing.T) {
		r := fx.open(t, "lying")
		_, w := fx.target(t, "unread-lying")
		if took := unreadFiles(t, r, w, nil); slices.Contains(took, false) {
			t.Fatalf("CopyUnread took %v, want every file", took)
		}
		if err := w.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		if got, want := objectNames(t, fx.direct, "unread-lying"), objectNames(t, fx.direct, "lying"); !slices.Equal(got, want) {
			t.Fatalf("the output holds %v, want the input's names %v", got, want)
		}
		in, out := fx.open(t, "lying"), fx.open(t, "unread-lying")
		for _, name := range in.DataFiles() {
			if !bytes.Equal(readObject(t, fx.dir(t, "unread-lying"), name), readObject(t, fx.dir(t, "lying"), name)) {
				t.Errorf("%s: other bytes than the input's", name)
			}
		}
		if err := sptest.Verify(out); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("names taken", func(t *testing.T) {
		// What a dead run left under the names is replaced.
		r := fx.open(t, "in")
		for _, name := range r.DataFiles() {
			if _, err := fx.direct.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String("unread-taken/" + name),
				Body: strings.NewReader("left by a dead run")}); err != nil {
				t.Fatal(err)
			}
		}
		_, w := fx.target(t, "unread-taken")
		if took := unreadFiles(t, r, w, nil); slices.Contains(took, false) {
			t.Fatalf("CopyUnread took %v, want every file", took)
		}
		if err := w.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		fx.check(t, "unread-taken")
	})

	t.Run("read where the bytes are needed", func(t *testing.T) {
		r := fx.open(t, "in")
		// Histograms anchored elsewhere are counted again from the records
		// of a file with TTL state; a file without takes no anchor.
		_, w := fx.target(t, "reanchored")
		anchor := r.Metadata().CreatedAt - 3_600_000
		var want []bool
		for _, name := range r.DataFiles() {
			withTTL := false
			for _, s := range mustSegments(t, r) {
				withTTL = withTTL || s.File == name && !s.Ref.Timer && r.Metadata().Operators[s.Ref.Operator].States[s.Ref.State].TTL != nil
			}
			want = append(want, !withTTL)
		}
		if !slices.Contains(want, false) {
			t.Fatal("no data file with TTL state")
		}
		if took := unreadFiles(t, r, w, &anchor); !slices.Equal(took, want) {
			t.Errorf("with another anchor CopyUnread took %v, want %v (the files without TTL state)", took, want)
		}
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
		// A target on disk; an input on disk into a bucket.
		st, err := storage.Stage(filepath.Join(t.TempDir(), "out"), false)
		if err != nil {
			t.Fatal(err)
		}
		onDisk, err := snapshotfmt.NewWriter(st, r.Metadata(), snapshotfmt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if took := unreadFiles(t, r, onDisk, nil); slices.Contains(took, true) {
			t.Errorf("into a directory CopyUnread took %v, want no file", took)
		}
		if err := onDisk.Abort(); err != nil {
			t.Fatal(err)
		}
		_, w = fx.target(t, "from-disk")
		if took := unreadFiles(t, sptest.Open(t, fx.local), w, nil); slices.Contains(took, true) {
			t.Errorf("from a directory CopyUnread took %v, want no file", took)
		}
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
		// Part of a file.
		_, w = fx.target(t, "part")
		segs := mustSegments(t, r)
		slices.SortFunc(segs, func(a, b savepoint.Segment) int { return cmp.Compare(a.Offset, b.Offset) })
		f, err := w.CreateDataFile(ctx, r.DataFiles()[0])
		if err != nil {
			t.Fatal(err)
		}
		var mine []savepoint.Segment
		for _, s := range segs {
			if s.File == r.DataFiles()[0] {
				mine = append(mine, s)
			}
		}
		part := mine[:len(mine)-1]
		refs := make([]savepoint.StateRef, len(part))
		for i, s := range part {
			refs[i] = s.Ref
		}
		if ok, err := f.CopyUnread(r, part, refs); ok || err != nil {
			t.Errorf("CopyUnread of all but the last segment: %v, %v; want false", ok, err)
		}
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
	})
}

// dir opens prefix of the test's bucket directly.
func (f *copyFixture) dir(t *testing.T, prefix string) storage.Dir {
	t.Helper()
	d, err := storage.OpenDir(context.Background(), storetest.URL(f.srv.Endpoint(), "state", prefix), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
