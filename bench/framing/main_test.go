package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

const golden = "../../testdata/savepoints/v2/"

// TestWalkCountsWhatTheReaderReads holds the walk's totals against the
// reader's: every entry it iterates and the raw bytes the index gives.
func TestWalkCountsWhatTheReaderReads(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"sessions-p2-heap", "sessions-p3-pebble-maxp720", "gateway-p2-pebble"} {
		dir := golden + name
		got, err := walkSavepoint(ctx, dir)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r, err := snapshotfmt.Open(ctx, storage.LocalDir(dir))
		if err != nil {
			t.Fatal(err)
		}
		segs, err := savepoint.AllSegments(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		var entries, bytes uint64
		for _, seg := range segs {
			it := savepoint.SegmentEntries(ctx, r, seg)
			for it.Next() {
				entries++
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			it.Close()
			bytes += seg.Bytes
		}
		r.Close()
		if entries == 0 || got.entries != entries || got.bytes != bytes || got.segments != uint64(len(segs)) {
			t.Errorf("%s: walked %d entries, %d bytes, %d segments; the reader reads %d, %d, %d",
				name, got.entries, got.bytes, got.segments, entries, bytes, len(segs))
		}
		if got.blocks < got.segments {
			t.Errorf("%s: %d blocks in %d segments", name, got.blocks, got.segments)
		}
	}
}

func TestWalkRefusesABadBlock(t *testing.T) {
	src := golden + "sessions-p2-heap"
	dir := t.TempDir()
	names, _ := filepath.Glob(src + "/*")
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(n, ".data") {
			b[len(b)/2] ^= 0x40 // a byte in the middle of some block
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(n)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := walkSavepoint(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("walk of a flipped byte: %v, want a checksum mismatch", err)
	}
	_, err := walkSavepoint(context.Background(), golden+"gateway-p3-heap-zstd")
	if err == nil || !strings.Contains(err.Error(), "compressed block") {
		t.Errorf("walk of a compressed savepoint: %v, want it refused", err)
	}
}
