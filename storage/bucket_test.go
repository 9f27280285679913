package storage_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/storage"
	"github.com/stateproc/stateproc/storage/internal/storetest"
)

// newBucket starts versitygw with one bucket and returns the server and the
// location of prefix in it, through endpoint (the server's when "").
func newBucket(t *testing.T) *storetest.Server {
	t.Helper()
	srv := storetest.Start(t)
	srv.Env(t)
	srv.Bucket(t, "state")
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
	sum := sha256.Sum256(named)
	if want := storage.NameByContent("op-1", sum[:], ".data"); nw.Name() != want {
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
