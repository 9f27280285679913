package storage_test

import (
	"bytes"
	"io"
	"testing"

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
