package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/storage"
)

// newBucket starts versitygw with one bucket and returns the server and the
// location of prefix in it, through endpoint (the server's when "").
func newBucket(t *testing.T) *storetest.Server {
	t.Helper()
	srv := storetest.StartWithBucket(t, "state")
	return srv
}

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed+1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func writeAll(t *testing.T, w io.WriteCloser, b []byte) {
	t.Helper()
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, d storage.Dir, name string) []byte {
	t.Helper()
	f, err := d.Open(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, f.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return b
}

func TestBucketWriteThenRead(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	loc := storetest.URL(srv.Endpoint(), "state", "savepoints/sp-1")
	tg, err := storage.OpenTarget(ctx, loc, storage.TargetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	exact := randomBytes(1, 7<<20+13)
	w, err := tg.Create(ctx, "data-000")
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, exact)
	named := randomBytes(2, 1000)
	nw, err := tg.CreateNamed(ctx, "op-1", ".data")
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, nw, named)
	if want := storage.NameByContent("op-1", storage.ContentSum(named), ".data"); nw.Name() != want {
		t.Fatalf("content name %q, want %q", nw.Name(), want)
	}
	mw, err := tg.Create(ctx, storage.MetadataName)
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, mw, []byte("the metadata"))

	d, err := storage.OpenDir(ctx, loc, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Open(ctx, storage.MetadataName); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("_metadata before Publish: %v, want ErrNotExist", err)
	}
	if err := tg.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	names, err := d.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{storage.MetadataName, "data-000", nw.Name()}; !slices.Equal(names, want) {
		t.Fatalf("List = %v, want %v (no temporary upload left)", names, want)
	}
	if got := readAll(t, d, "data-000"); !bytes.Equal(got, exact) {
		t.Fatal("data-000 reads back different bytes")
	}
	if got := readAll(t, d, nw.Name()); !bytes.Equal(got, named) {
		t.Fatal("the content-named file reads back different bytes")
	}
	if got := readAll(t, d, storage.MetadataName); string(got) != "the metadata" {
		t.Fatalf("_metadata = %q", got)
	}
	f, err := d.Open(ctx, "data-000")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	if n, err := f.ReadAt(buf, 5<<20); err != nil || n != 100 || !bytes.Equal(buf, exact[5<<20:5<<20+100]) {
		t.Fatalf("ranged ReadAt = %d, %v", n, err)
	}
	if n, err := f.ReadAt(buf, f.Size()-10); n != 10 || err != io.EOF || !bytes.Equal(buf[:10], exact[len(exact)-10:]) {
		t.Fatalf("ReadAt past the end = %d, %v; want 10, io.EOF", n, err)
	}
	if _, err := storage.OpenTarget(ctx, loc, storage.TargetOptions{}); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("OpenTarget over a savepoint = %v, want ErrExists", err)
	}
	c := storage.CountersOf(d)
	if c.BytesRead.Load() < int64(len(exact)+len(named)) || c.Requests.Load() == 0 {
		t.Fatalf("counters: read %d bytes in %d requests", c.BytesRead.Load(), c.Requests.Load())
	}
}

// A file named after its bytes goes up in one PutObject under its name
// when it is small (8 MiB at most), where it took an upload under a
// temporary name, a copy and a delete; a longer one still takes those,
// and leaves no temporary object. Both read back, under their content
// names.
func TestNamedFilesInOneRequest(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	p := storetest.NewProxy(t, srv.Endpoint())
	loc := storetest.URL(p.URL, "state", "named")
	tg, err := storage.OpenTarget(ctx, loc, storage.TargetOptions{Marker: "_SUCCESS"})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	ops := func() [3]int { return [3]int{p.Ops("PutObject"), p.Ops("CopyObject"), p.Ops("DeleteObject")} }
	for _, c := range []struct {
		size int
		want [3]int // PUTs (and part uploads), copies, deletes
	}{{100_000, [3]int{1, 0, 0}}, {9 << 20, [3]int{0, 1, 1}}} {
		body := randomBytes(uint64(c.size), c.size)
		before := ops()
		w, err := tg.CreateNamed(ctx, fmt.Sprintf("part-%d", c.size), ".parquet")
		if err != nil {
			t.Fatal(err)
		}
		// In pieces, as a writer writes.
		for off := 0; off < len(body); off += 300_000 {
			if _, err := w.Write(body[off:min(off+300_000, len(body))]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		after := ops()
		got := [3]int{after[0] - before[0], after[1] - before[1], after[2] - before[2]}
		if c.size > 8<<20 {
			// The upload of a long file is multipart or one PUT.
			got[0] = 0
		}
		if got != c.want {
			t.Errorf("%d bytes: %v PUTs, copies and deletes, want %v", c.size, got, c.want)
		}
		if want := storage.NameByContent(fmt.Sprintf("part-%d", c.size), storage.ContentSum(body), ".parquet"); w.Name() != want {
			t.Errorf("%d bytes: named %q, want %q", c.size, w.Name(), want)
		}
		d, err := storage.OpenDir(ctx, loc, storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, d, w.Name()); !bytes.Equal(got, body) {
			t.Errorf("%d bytes: %s reads back other bytes", c.size, w.Name())
		}
		d.Close()
	}
	objs, err := srv.Client(srv.Endpoint()).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("state"), Prefix: aws.String("named/")})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.Contents) != 2 {
		var keys []string
		for _, o := range objs.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		t.Errorf("the bucket holds %v, want the two named files and no temporary object", keys)
	}
}

// A file named after its bytes is put once: a second Close writes nothing
// and returns what the first did, so that a Close retried after a failed
// put cannot leave an empty object under the name of the bytes; a Write
// after Close fails.
func TestNamedFileClosesOnce(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	p := storetest.NewProxy(t, srv.Endpoint())
	tg, err := storage.OpenTarget(ctx, storetest.URL(p.URL, "state", "once"), storage.TargetOptions{Options: storage.Options{Retry: fastRetries}})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	body := randomBytes(31, 1000)
	write := func() storage.NamedWriter {
		t.Helper()
		w, err := tg.CreateNamed(ctx, "part", ".bin")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(body); err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := write()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	puts := p.Ops("PutObject")
	if err := w.Close(); err != nil || p.Ops("PutObject") != puts {
		t.Errorf("a second Close: %v, and %d more PUTs, want nil and none", err, p.Ops("PutObject")-puts)
	}
	if _, err := w.Write(body); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("a Write after Close: %v, want fs.ErrClosed", err)
	}
	d := openVia(t, srv.Endpoint(), "once", fastRetries)
	defer d.Close()
	if got := readAll(t, d, w.Name()); !bytes.Equal(got, body) {
		t.Errorf("%s holds %d bytes, want the %d written", w.Name(), len(got), len(body))
	}

	// A put refused; the Close tried again is refused alike, and writes
	// nothing.
	body = randomBytes(32, 1000)
	w = write()
	p.Inject(storetest.Status, "PutObject", 1, 403, "AccessDenied", 0)
	err1 := w.Close()
	puts = p.Ops("PutObject")
	if err2 := w.Close(); err1 == nil || err2 != err1 || p.Ops("PutObject") != puts {
		t.Errorf("a Close after a refused one: %v after %v, and %d more PUTs, want the same error and none", err2, err1, p.Ops("PutObject")-puts)
	}
	if _, err := d.Open(ctx, storage.NameByContent("part", storage.ContentSum(body), ".bin")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused file: %v, want it missing", err)
	}
}

// An empty object preloaded twice, or opened by OpenHead after it was
// preloaded, is opened as an empty file, not refused (nor a panic).
func TestPreloadEmptyTwice(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	putObject(t, srv, "sp/empty", nil)
	d := openVia(t, srv.Endpoint(), "sp", fastRetries)
	defer d.Close()
	for i := range 2 {
		if err := storage.Preload(ctx, d, "empty", 1<<20); err != nil {
			t.Fatalf("Preload %d: %v", i+1, err)
		}
	}
	f, head, err := storage.OpenHead(ctx, d, "empty", 1<<20)
	if err != nil || f.Size() != 0 || len(head) != 0 {
		t.Fatalf("OpenHead of the preloaded empty object: %v, size %v, %d bytes", err, f, len(head))
	}
}
