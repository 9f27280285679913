package snapshotfmt_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateproc/stateproc/internal/crc"
	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// claimFiles starts writing the savepoint of r into w unchanged, each data
// file under its given name with ClaimCopy called before its segments are
// copied; it closes the files, or with stop set returns before the first
// segment of the first file, its writer left open as by a process that
// died there. It returns what ClaimCopy reported, file by file.
func claimFiles(t *testing.T, r *snapshotfmt.Reader, w *snapshotfmt.Writer, stop bool) []bool {
	t.Helper()
	ctx := context.Background()
	segs := mustSegments(t, r)
	slices.SortFunc(segs, func(a, b savepoint.Segment) int { return cmp.Compare(a.Offset, b.Offset) })
	var started []bool
	for _, name := range r.DataFiles() {
		f, err := w.CreateDataFile(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		var mine []savepoint.Segment
		for _, s := range segs {
			if s.File == name {
				mine = append(mine, s)
			}
		}
		started = append(started, f.ClaimCopy(ctx, r, mine))
		if stop {
			continue
		}
		a, err := r.ReadAhead(ctx, mine)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range mine {
			if err := f.CopySegmentAhead(ctx, a, s, s.Ref, s.KeyGroup); err != nil {
				t.Fatal(err)
			}
		}
		a.Close()
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return started
}

// upload puts the files of the local savepoint dir under prefix.
func upload(t *testing.T, c *s3.Client, dir, prefix string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String(prefix + "/" + e.Name()),
			Body: bytes.NewReader(mustRead(t, filepath.Join(dir, e.Name())))}); err != nil {
			t.Fatal(err)
		}
	}
}

// lie copies the savepoint at dir to a new directory with the content
// suffixes of its data files rotated, in their names and in the
// metadata: a savepoint that reads and verifies, whose names claim digests
// their bytes do not have.
func lie(t *testing.T, dir string) string {
	t.Helper()
	r := sptest.Open(t, dir)
	names := r.DataFiles()
	if len(names) < 2 {
		t.Fatalf("%d data files, want several", len(names))
	}
	suffix := func(n string) string { return n[len(n)-len("0123456789abcdef.data"):] }
	// Each file gets the suffix of the next.
	swapped := map[string]string{}
	for i, n := range names {
		swapped[n] = strings.TrimSuffix(n, suffix(n)) + suffix(names[(i+1)%len(names)])
	}
	out := filepath.Join(t.TempDir(), "lying")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := mustRead(t, filepath.Join(dir, storage.MetadataName))
	for from, to := range swapped {
		if bytes.Count(meta, []byte(from)) != 1 {
			t.Fatalf("the metadata names %s %d times", from, bytes.Count(meta, []byte(from)))
		}
		if err := os.WriteFile(filepath.Join(out, to), mustRead(t, filepath.Join(dir, from)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for from, to := range swapped {
		copy(meta[bytes.Index(meta, []byte(from)):], to)
	}
	const preambleLen = 12
	binary.BigEndian.PutUint32(meta[len(meta)-4:], crc.Checksum(meta[preambleLen:len(meta)-4]))
	if err := os.WriteFile(filepath.Join(out, storage.MetadataName), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := sptest.Verify(sptest.Open(t, out)); err != nil {
		t.Fatalf("the savepoint with swapped names does not verify: %v", err)
	}
	return out
}

// objectNames lists the objects under prefix.
func objectNames(t *testing.T, c *s3.Client, prefix string) []string {
	t.Helper()
	out, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("state"), Prefix: aws.String(prefix + "/")})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range out.Contents {
		names = append(names, strings.TrimPrefix(aws.ToString(o.Key), prefix+"/"))
	}
	slices.Sort(names)
	return names
}

// copyFixture is a generated savepoint on disk ("in" and, with its files'
// names swapped, "lying", in a bucket of a versitygw started for the test,
// reached through a proxy that counts requests), and the files that a copy
// of it writes without claims.
type copyFixture struct {
	srv    *storetest.Server
	direct *s3.Client
	p      *storetest.Proxy
	local  string
	ref    string
	want   []string
}

func newCopyFixture(t *testing.T) *copyFixture {
	t.Helper()
	srv := storetest.StartWithBucket(t, "state")
	f := &copyFixture{srv: srv, direct: srv.Client(srv.Endpoint()), local: filepath.Join(t.TempDir(), "in")}
	if err := spgen.Write(f.local, spgen.Config{Seed: 9, Users: 3000, Accounts: 200, Parallelism: 2, MaxParallelism: 128,
		Now: 1_700_000_000_000, Pad: 3000}); err != nil {
		t.Fatal(err)
	}
	upload(t, f.direct, f.local, "in")
	upload(t, f.direct, lie(t, f.local), "lying")
	f.ref = filepath.Join(t.TempDir(), "ref")
	st, err := storage.Stage(f.ref, false)
	if err != nil {
		t.Fatal(err)
	}
	copyInto(t, sptest.Open(t, f.local), st, func(savepoint.Segment) bool { return false }, false)
	f.want = append(sptest.Open(t, f.ref).DataFiles(), storage.MetadataName)
	slices.Sort(f.want)
	f.p = storetest.NewProxy(t, srv.Endpoint())
	return f
}

// open opens the savepoint at prefix through the proxy.
func (f *copyFixture) open(t *testing.T, prefix string) *snapshotfmt.Reader {
	t.Helper()
	d, err := storage.OpenDir(context.Background(), storetest.URL(f.p.URL, "state", prefix), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	r, err := snapshotfmt.Open(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// target opens prefix as a target through the proxy, with a writer of the
// metadata of "in".
func (f *copyFixture) target(t *testing.T, prefix string) (snapshotfmt.Target, *snapshotfmt.Writer) {
	t.Helper()
	tg, err := storage.OpenTarget(context.Background(), storetest.URL(f.p.URL, "state", prefix), storage.TargetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	w, err := snapshotfmt.NewWriter(tg, f.open(t, "in").Metadata(), snapshotfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tg, w
}

// ops counts the requests of the operations copies make.
func (f *copyFixture) ops() map[string]int {
	m := map[string]int{}
	for _, op := range []string{"CopyObject", "UploadPartCopy", "DeleteObject", "GetObject"} {
		m[op] = f.p.Ops(op)
	}
	return m
}

// since counts the requests made since ops returned before.
func (f *copyFixture) since(before map[string]int) map[string]int {
	m := f.ops()
	for k := range m {
		m[k] -= before[k]
	}
	return m
}

// check compares the output at prefix with the one written locally
// without claims: the same objects, none other, the same bytes.
func (f *copyFixture) check(t *testing.T, prefix string) {
	t.Helper()
	if got := objectNames(t, f.direct, prefix); !slices.Equal(got, f.want) {
		t.Fatalf("%s holds %v, want %v", prefix, got, f.want)
	}
	out := f.dir(t, prefix)
	for _, name := range f.want {
		if !bytes.Equal(readObject(t, out, name), mustRead(t, filepath.Join(f.ref, name))) {
			t.Fatalf("%s/%s: other bytes than written without claims", prefix, name)
		}
	}
	if err := sptest.Verify(f.open(t, prefix)); err != nil {
		t.Fatal(err)
	}
}

// TestClaimedCopies: a data file written unchanged from a bucket input
// whose names claim their digests is copied by the server while it is
// read and checked, and the copy is kept; a claim that is false (files
// renamed), or a name that is taken already, never leaves a misnamed
// file: the output is byte for byte the one written without claims, and
// holds nothing else; a run that dies after the copies leaves no
// savepoint, and its copies are orphans.
func TestClaimedCopies(t *testing.T) {
	ctx := context.Background()
	fx := newCopyFixture(t)
	direct := fx.direct
	files := len(fx.want) - 1

	t.Run("true claims", func(t *testing.T) {
		before := fx.ops()
		_, w := fx.target(t, "true")
		started := claimFiles(t, fx.open(t, "in"), w, false)
		if err := w.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		n := fx.since(before)
		if slices.Contains(started, false) {
			t.Errorf("claims started %v, want all", started)
		}
		// One part copied per file, and no copy after the read.
		if n["UploadPartCopy"] != files || n["CopyObject"] != 0 || n["DeleteObject"] != 0 {
			t.Errorf("requests %v, want %d UploadPartCopy and no CopyObject nor DeleteObject", n, files)
		}
		fx.check(t, "true")
	})

	t.Run("false claims", func(t *testing.T) {
		lying := fx.open(t, "lying")
		before := fx.ops()
		_, w := fx.target(t, "false")
		started := claimFiles(t, lying, w, false)
		if err := w.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		n := fx.since(before)
		if slices.Contains(started, false) {
			t.Errorf("claims started %v, want all", started)
		}
		// Each file copied twice, under the name it claims and under its
		// own, and the first deleted.
		if n["UploadPartCopy"] != files || n["CopyObject"] != files || n["DeleteObject"] != files {
			t.Errorf("requests %v, want %d UploadPartCopy, CopyObject and DeleteObject", n, files)
		}
		fx.check(t, "false")
	})

	t.Run("names taken", func(t *testing.T) {
		// A file under a claimed name already, as a dead run leaves it:
		// the claim fails create-only, and the file is copied over it.
		r := fx.open(t, "in")
		for _, name := range r.DataFiles() {
			if _, err := direct.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String("taken/" + name),
				Body: strings.NewReader("left by a dead run")}); err != nil {
				t.Fatal(err)
			}
		}
		before := fx.ops()
		_, w := fx.target(t, "taken")
		claimFiles(t, r, w, false)
		if err := w.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		if n := fx.since(before); n["CopyObject"] != files || n["DeleteObject"] != 0 {
			t.Errorf("requests %v, want %d CopyObject and no DeleteObject", n, files)
		}
		fx.check(t, "taken")
	})

	t.Run("died after the copies", func(t *testing.T) {
		for _, src := range []string{"in", "lying"} {
			prefix := "dead-" + src
			r := fx.open(t, src)
			_, w := fx.target(t, prefix)
			if started := claimFiles(t, r, w, true); slices.Contains(started, false) {
				t.Fatalf("claims started %v, want all", started)
			}
			// The process dies once the server has copied, before any byte
			// was checked: the writer is neither finished nor aborted.
			deadline := time.Now().Add(time.Minute)
			for len(objectNames(t, direct, prefix)) < files {
				if time.Now().After(deadline) {
					t.Fatalf("%s: the claimed copies did not land", prefix)
				}
				time.Sleep(10 * time.Millisecond)
			}
			d, err := storage.OpenDir(ctx, storetest.URL(fx.srv.Endpoint(), "state", prefix), storage.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if _, err := snapshotfmt.Open(ctx, d); err == nil {
				t.Fatalf("%s: a savepoint is visible after the run died", prefix)
			}
			orphans, err := storage.Orphans(ctx, d, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, o := range orphans {
				names = append(names, o.Name)
			}
			if !slices.Equal(names, r.DataFiles()) {
				t.Errorf("%s: orphans %v, want the claimed copies %v", prefix, names, r.DataFiles())
			}
		}
		// The next run into the target of the truthful input writes over
		// what the dead one left and publishes.
		_, w := fx.target(t, "dead-in")
		claimFiles(t, fx.open(t, "in"), w, false)
		if err := w.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		fx.check(t, "dead-in")
	})

	t.Run("aborted", func(t *testing.T) {
		// An abort before the check removes the claimed copies.
		_, w := fx.target(t, "aborted")
		claimFiles(t, fx.open(t, "lying"), w, true)
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
		if got := objectNames(t, direct, "aborted"); len(got) != 0 {
			t.Errorf("an aborted run left %v", got)
		}
	})
}
