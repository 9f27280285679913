package snapshotfmt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCopySegmentIsByteIdentical(t *testing.T) {
	ctx := context.Background()
	src := newMemDir()
	writeSavepoint(t, src, testMeta(), testData(300), Options{Compression: CodecZstd, BlockSize: 700})
	r, err := Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	dst := newMemDir()
	w, err := NewWriter(dst, testMeta(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	files := make([]*DataFileWriter, 2)
	for i := range files {
		files[i], _ = w.CreateDataFile(ctx, fmt.Sprintf("data-%03d", i))
	}
	for _, seg := range opSegments(r, 0) {
		if err := files[seg.KeyGroup%2].CopySegment(ctx, r, seg, seg.Ref, seg.KeyGroup); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	for name, b := range src.files {
		if !bytes.Equal(dst.files[name], b) {
			t.Errorf("%s differs after copying every segment", name)
		}
	}
	if len(dst.files) != len(src.files) {
		t.Errorf("%d files, want %d", len(dst.files), len(src.files))
	}
}

func TestCopySegmentRefuses(t *testing.T) {
	ctx := context.Background()
	src := newMemDir()
	writeSavepoint(t, src, testMeta(), testData(100), Options{})
	r, err := Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	segs := opSegments(r, 0)
	seg := segs[0] // ref 0: the TTL value state

	w, _ := NewWriter(newMemDir(), testMeta(), Options{})
	f, _ := w.CreateDataFile(ctx, "d")
	if err := f.CopySegment(ctx, r, seg, flatRef(f.w.meta, 0, 3), seg.KeyGroup); err == nil || !strings.Contains(err.Error(), "records differ") {
		t.Errorf("copy into a state of another shape = %v", err)
	}
	if err := f.CopySegment(ctx, r, seg, flatRef(f.w.meta, 0, 0), (seg.KeyGroup+1)%16); err == nil || !strings.Contains(err.Error(), "wrong key group") {
		t.Errorf("copy into another key group = %v", err)
	}
	if err := f.CopySegment(ctx, r, seg, flatRef(f.w.meta, 1, 0), 0); err == nil {
		t.Error("copy into a non-keyed operator accepted")
	}

	// A damaged source block fails the copy and the file.
	bad := src.clone()
	bad.files[seg.File][seg.Offset+blockHeaderLen] ^= 0x40
	rb, err := Open(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	err = f.CopySegment(ctx, rb, seg, flatRef(f.w.meta, 0, 0), seg.KeyGroup)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("copy of a damaged block = %v", err)
	}
	if err := f.Close(); err == nil {
		t.Error("a file with a failed copy closed cleanly")
	}
}
