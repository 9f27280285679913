package storage_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/storage"
)

// TestClaimedCopyIsRemovedOnlyIfStillItsOwn: a claimed copy is made on the
// server, create-only; discarded, it is deleted, but not once another
// writer has put a file of its own under the name; a name that exists
// fails the copy with ErrConflict and leaves the file; an abort removes
// the claims still open; a kept claim stays through an abort.
func TestClaimedCopyIsRemovedOnlyIfStillItsOwn(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	src := randomBytes(21, 6<<20)
	putObject(t, srv, "in/data-000", src)
	p := storetest.NewProxy(t, srv.Endpoint())
	in := openVia(t, p.URL, "in", fastRetries)
	f, err := in.Open(ctx, "data-000")
	if err != nil {
		t.Fatal(err)
	}
	tg := openTarget(t, storetest.URL(p.URL, "state", "out"), false)
	out := openVia(t, srv.Endpoint(), "out", storage.RetryPolicy{})
	exists := func(name string) bool {
		g, err := out.Open(ctx, name)
		if err == nil {
			g.Close()
		}
		return err == nil
	}
	claim := func(name string) *storage.ClaimedCopy {
		c := storage.StartClaimedCopy(ctx, tg, f, name)
		if c == nil {
			t.Fatalf("no claimed copy to %s", name)
		}
		return c
	}

	c := claim("a")
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, out, "a"), src) || p.BodyBytes() != 0 {
		t.Fatalf("the copy differs from its source, or %d bytes went through the client", p.BodyBytes())
	}
	if err := c.Discard(ctx); err != nil {
		t.Fatal(err)
	}
	if exists("a") {
		t.Fatal("a discarded copy is still there")
	}

	c = claim("b")
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	other := []byte("written by another run")
	putObject(t, srv, "out/b", other)
	if err := c.Discard(ctx); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, out, "b"), other) {
		t.Fatal("discarding a copy removed the file another run put under its name")
	}

	if err := claim("b").Wait(); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("a copy to a name that exists: %v, want ErrConflict", err)
	}
	if !bytes.Equal(readAll(t, out, "b"), other) {
		t.Fatal("a failed claim changed the file under its name")
	}

	kept, open := claim("c"), claim("d")
	if err := kept.Wait(); err != nil {
		t.Fatal(err)
	}
	kept.Keep()
	if err := tg.Abort(); err != nil {
		t.Fatal(err)
	}
	if !exists("c") || exists("d") {
		t.Fatalf("after an abort: kept copy there %v, open claim there %v; want true, false", exists("c"), exists("d"))
	}
	if err := open.Wait(); err != nil {
		t.Fatal(err)
	}
}
