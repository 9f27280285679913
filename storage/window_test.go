package storage_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"testing"

	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/storage"
)

// A table's reader through a window on an object of 2 MiB: the footer and
// an index near the end are one GET of the last window, the blocks read in
// order from the start one GET per window, a read longer than the window
// one of its own, and every read gets the object's bytes; a read past the
// end is io.EOF.
func TestWindowedReadsAWindowAtATime(t *testing.T) {
	want := randomBytes(11, 2<<20)
	p, _, f := proxiedObject(t, want)
	const window = 512 << 10
	w := storage.Windowed(f, window)
	size := int64(len(want))
	read := func(off int64, n int) {
		t.Helper()
		b := make([]byte, n)
		if m, err := w.ReadAt(b, off); m != n || err != nil {
			t.Fatalf("ReadAt(%d bytes at %d): %d, %v", n, off, m, err)
		}
		if !bytes.Equal(b, want[off:off+int64(n)]) {
			t.Fatalf("ReadAt(%d bytes at %d): wrong bytes", n, off)
		}
	}
	gets := p.Ops("GetObject")
	read(size-8, 8)
	read(size-53, 53)
	read(size-300_000, 40_000)
	if g := p.Ops("GetObject") - gets; g != 1 {
		t.Errorf("the tail's reads: %d GETs, want 1", g)
	}
	gets = p.Ops("GetObject")
	for off := int64(0); off+4096 <= size-window; off += 4096 {
		read(off, 4096)
	}
	if g := int64(p.Ops("GetObject") - gets); g != (size-window)/window {
		t.Errorf("the blocks before the tail: %d GETs, want %d", g, (size-window)/window)
	}
	gets = p.Ops("GetObject")
	read(1000, window+1)
	if g := p.Ops("GetObject") - gets; g != 1 {
		t.Errorf("a read longer than the window: %d GETs, want 1", g)
	}
	b := make([]byte, 10)
	if n, err := w.ReadAt(b, size-4); n != 4 || err != io.EOF || !bytes.Equal(b[:4], want[size-4:]) {
		t.Errorf("a read across the end: %d, %v", n, err)
	}
	if n, err := w.ReadAt(b, size); n != 0 || err != io.EOF {
		t.Errorf("a read at the end: %d, %v", n, err)
	}
}

// OpenWindowed on S3 opens an object with the read of its tail: one GET and
// no HEAD, which serves every read within the last window; a read before
// it moves the window as Windowed does, bound to the version opened. An
// object shorter than the window comes whole with the open, an empty one
// opens, a missing one is fs.ErrNotExist.
func TestOpenWindowedReadsTheTailWithTheOpen(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	big, small := randomBytes(21, 2<<20), randomBytes(22, 100_000)
	putObject(t, srv, "sp/big", big)
	putObject(t, srv, "sp/small", small)
	putObject(t, srv, "sp/empty", nil)
	p := storetest.NewProxy(t, srv.Endpoint())
	d := openVia(t, p.URL, "sp", fastRetries)
	const window = 512 << 10
	requests := func() (gets, heads int) { return p.Ops("GetObject"), p.Ops("HeadObject") }
	check := func(name string, f storage.File, want []byte, off int64, n int) {
		t.Helper()
		b := make([]byte, n)
		if m, err := f.ReadAt(b, off); m != n || err != nil || !bytes.Equal(b, want[off:off+int64(n)]) {
			t.Fatalf("%s: ReadAt(%d bytes at %d): %d, %v, or the wrong bytes", name, n, off, m, err)
		}
	}

	gets, heads := requests()
	f, err := storage.OpenWindowed(ctx, d, "big", window)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(big))
	if f.Size() != size {
		t.Fatalf("big: size %d, want %d", f.Size(), size)
	}
	check("big", f, big, size-48, 48)
	check("big", f, big, size-window, window)
	check("big", f, big, size-300_000, 1000)
	if g, h := requests(); g-gets != 1 || h-heads != 0 {
		t.Errorf("big: the open and the tail's reads made %d GETs and %d HEADs, want 1 and 0", g-gets, h-heads)
	}
	check("big", f, big, 0, 4096)
	if g, _ := requests(); g-gets != 2 {
		t.Errorf("big: a read before the tail made %d GETs in all, want 2", g-gets)
	}

	gets, heads = requests()
	f, err = storage.OpenWindowed(ctx, d, "small", window)
	if err != nil {
		t.Fatal(err)
	}
	if f.Size() != int64(len(small)) {
		t.Fatalf("small: size %d, want %d", f.Size(), len(small))
	}
	check("small", f, small, 0, len(small))
	check("small", f, small, 5000, 17)
	if g, h := requests(); g-gets != 1 || h-heads != 0 {
		t.Errorf("small: %d GETs and %d HEADs, want 1 and 0", g-gets, h-heads)
	}

	f, err = storage.OpenWindowed(ctx, d, "empty", window)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.ReadAt(make([]byte, 1), 0); f.Size() != 0 || n != 0 || err != io.EOF {
		t.Errorf("empty: size %d, ReadAt: %d, %v", f.Size(), n, err)
	}
	if _, err := storage.OpenWindowed(ctx, d, "missing", window); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v, want fs.ErrNotExist", err)
	}

	f, err = storage.OpenWindowed(ctx, d, "big", window)
	if err != nil {
		t.Fatal(err)
	}
	replaced := bytes.Clone(big)
	replaced[0] ^= 1
	putObject(t, srv, "sp/big", replaced)
	if _, err := f.ReadAt(make([]byte, 10), 0); !errors.Is(err, storage.ErrChanged) {
		t.Errorf("a read of the object replaced since the open: %v, want ErrChanged", err)
	}
}

// OpenWindowed's read of the tail is retried as any read is: under
// throttling, a reset before the answer and a body cut in its middle, the
// open gives the object's tail, in at most the policy's attempts.
func TestOpenWindowedRetries(t *testing.T) {
	ctx := context.Background()
	want := randomBytes(23, 1<<20)
	srv := newBucket(t)
	putObject(t, srv, "sp/table", want)
	p := storetest.NewProxy(t, srv.Endpoint())
	d := openVia(t, p.URL, "sp", fastRetries)
	const window = 256 << 10
	for _, tc := range []struct {
		name   string
		inject func()
	}{
		{"503 SlowDown", func() { p.Throttle("GetObject", 2) }},
		{"reset before the answer", func() { p.Inject(storetest.Reset, "GetObject", 2, 0, "", 0) }},
		{"body cut after 100 kB", func() { p.Inject(storetest.CutBody, "GetObject", 1, 0, "", 100_000) }},
	} {
		gets := p.Ops("GetObject")
		tc.inject()
		f, err := storage.OpenWindowed(ctx, d, "table", window)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if p.Pending() != 0 {
			t.Fatalf("%s: %d injected faults never struck", tc.name, p.Pending())
		}
		g := p.Ops("GetObject") - gets
		got := make([]byte, window)
		if n, err := f.ReadAt(got, int64(len(want)-window)); n != window || err != nil || !bytes.Equal(got, want[len(want)-window:]) {
			t.Fatalf("%s: the tail: %d, %v, or the wrong bytes", tc.name, n, err)
		}
		if p.Ops("GetObject")-gets != g || g > fastRetries.Attempts {
			t.Fatalf("%s: %d GETs to open, %d in all; want the tail served by the open, in at most %d", tc.name, g, p.Ops("GetObject")-gets, fastRetries.Attempts)
		}
		t.Logf("%s: %d GETs", tc.name, g)
	}
}

// A server may answer a ranged GET without the object's length ("bytes
// 0-99/*"), and the client then gives the body's length as the object's.
// Opened by such an answer, a file takes its size from a request for the
// object's attributes, and reads its tail, or its head, as any read: the
// file is the object, not the few bytes the answer held.
func TestOpenWithoutTheObjectsLength(t *testing.T) {
	ctx := context.Background()
	obj := randomBytes(23, 300_000)
	p, d := proxiedDir(t, "table", obj)
	heads := p.Ops("HeadObject")

	p.Inject(storetest.UnknownLength, "GetObject", 1, 0, "", 0)
	f, err := storage.OpenWindowed(ctx, d, "table", 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	tail := make([]byte, 1000)
	if f.Size() != int64(len(obj)) {
		t.Fatalf("OpenWindowed: size %d, want %d", f.Size(), len(obj))
	}
	if n, err := f.ReadAt(tail, f.Size()-1000); n != 1000 || err != nil || !bytes.Equal(tail, obj[len(obj)-1000:]) {
		t.Errorf("OpenWindowed: the last 1000 bytes read %d, %v, or other bytes", n, err)
	}

	p.Inject(storetest.UnknownLength, "GetObject", 1, 0, "", 0)
	g, head, err := storage.OpenHead(ctx, d, "table", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if g.Size() != int64(len(obj)) || !bytes.Equal(head, obj[:1000]) {
		t.Errorf("OpenHead: size %d and %d bytes of head, want %d and the object's first 1000", g.Size(), len(head), len(obj))
	}
	if h := p.Ops("HeadObject") - heads; h != 2 {
		t.Errorf("%d HEADs, want one for each open whose answer left the length out", h)
	}
}

// A server that refuses a suffix range longer than the object (416, where
// HTTP says to serve the whole object) does not make the object look
// changed: the file is opened by its attributes and its tail read as any
// read. The head of an object that has bytes is refused as changed.
func TestOpenWindowedWhenTheSuffixIsRefused(t *testing.T) {
	ctx := context.Background()
	obj := randomBytes(24, 50_000)
	p, d := proxiedDir(t, "short", obj)
	p.Inject(storetest.Status, "GetObject", 1, http.StatusRequestedRangeNotSatisfiable, "InvalidRange", 0)
	f, err := storage.OpenWindowed(ctx, d, "short", 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(obj))
	if n, err := f.ReadAt(got, 0); f.Size() != int64(len(obj)) || n != len(obj) || err != nil || !bytes.Equal(got, obj) {
		t.Errorf("size %d, read %d bytes (%v), want the object's %d", f.Size(), n, err, len(obj))
	}
	p.Inject(storetest.Status, "GetObject", 1, http.StatusRequestedRangeNotSatisfiable, "InvalidRange", 0)
	if _, _, err := storage.OpenHead(ctx, d, "short", 1000); !errors.Is(err, storage.ErrChanged) {
		t.Errorf("OpenHead whose first bytes were refused: %v, want ErrChanged", err)
	}
}
