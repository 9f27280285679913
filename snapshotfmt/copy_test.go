package snapshotfmt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/savepoint"
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

// TestCopySegmentChecksRecords: a copy refuses what a reader refuses, under
// valid checksums: keys of another key group, lengths and counts beyond the
// block, an index that claims more than the data holds, a zstd payload
// longer than its raw length.
func TestCopySegmentChecksRecords(t *testing.T) {
	ctx := context.Background()
	d, _, idx := decodedSmall(t)
	segs := idx.segments[0]
	first := segs[0]
	stored := func(s savepoint.Segment) []byte { return d.files[s.File][s.Offset : s.Offset+s.Length] }
	var other []byte
	for _, s := range segs[1:] {
		if s.Ref == first.Ref && s.KeyGroup != first.KeyGroup {
			other = stored(s)
			break
		}
	}
	if other == nil {
		t.Fatal("no segment of the same state in another key group")
	}
	raw := func(payload []byte) []byte {
		b, _ := sealBlock(append(make([]byte, blockHeaderLen), payload...), nil, nil)
		return b
	}
	uv := func(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }
	for _, tc := range []struct {
		name  string
		block []byte
		stats func(*savepoint.Stats)
		want  string
	}{
		{"key of another key group", other, nil, "belongs to key group"},
		{"key length 2^62", raw(uv(nil, 1<<62)), nil, "key: length 4611686018427387904 beyond"},
		{"item count 2^31", raw(append(uv(uv(uv(nil, 0), 0), 1<<31), 0)), nil, "count 2147483648 beyond"},
		{"index claims more entries", stored(first), func(s *savepoint.Stats) {
			s.Entries++
			// The histograms agree with the figure, so that the copy, not
			// the metadata's reader, meets the lie.
			s.Sizes[0].Count++
			if s.Modified != nil {
				s.Modified[0].Count++
			}
		}, "the index says"},
		{"zstd payload longer than its raw length", func() []byte {
			b := bytes.Clone(zeroBlock(t, 1000))
			binary.BigEndian.PutUint32(b[5:], 999)
			return reseal(b)
		}(), nil, "decompress"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := withBlocks(t, [][]byte{tc.block})
			if tc.stats != nil {
				_, m, idx := decodedSmallOf(t, src)
				tc.stats(&idx.segments[0][0].Stats)
				src.files[MetadataName] = metadataFile(encodeMetadataBody(m, idx))
			}
			r, err := Open(ctx, src)
			if err != nil {
				t.Fatal(err)
			}
			seg := opSegments(r, 0)[0]
			w, _ := NewWriter(newMemDir(), testMeta(), Options{})
			f, _ := w.CreateDataFile(ctx, "d")
			wantCorrupt(t, f.CopySegment(ctx, r, seg, seg.Ref, seg.KeyGroup), tc.want)
			if err := f.Close(); err == nil {
				t.Error("a file with a refused copy closed cleanly")
			}
		})
	}
}

// decodedSmallOf decodes the metadata of d for a test to change it.
func decodedSmallOf(t *testing.T, d *memDir) (*memDir, *savepoint.Metadata, *index) {
	b := d.files[MetadataName]
	m, idx, err := decodeMetadataBody(b[metadataHeaderLen:len(b)-4], NewestVersion)
	if err != nil {
		t.Fatal(err)
	}
	return d, m, idx
}

// copyAll copies every segment of operator 0 of r into a new savepoint of
// meta, key group kg into file kg mod 2, and returns it opened.
func copyAll(t *testing.T, r *Reader, meta *savepoint.Metadata) (*Reader, error) {
	t.Helper()
	ctx := context.Background()
	dst := newMemDir()
	w, err := NewWriter(dst, meta, Options{})
	if err != nil {
		t.Fatal(err)
	}
	files := make([]*DataFileWriter, 2)
	for i := range files {
		files[i], _ = w.CreateDataFile(ctx, fmt.Sprintf("data-%03d", i))
	}
	for _, seg := range opSegments(r, 0) {
		if err := files[seg.KeyGroup%2].CopySegment(ctx, r, seg, seg.Ref, seg.KeyGroup); err != nil {
			return nil, err
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
	out, err := Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	return out, nil
}

// TestCopySegmentHistograms: a copy into a savepoint of another creation
// time, or whose state has another TTL, counts the last-modified histogram
// again at its own anchor and TTL, so that reading the copy to its end (which
// checks every histogram against the data) passes; one into the same time and
// TTL carries the source's over.
func TestCopySegmentHistograms(t *testing.T) {
	ctx := context.Background()
	src := newMemDir()
	writeSavepoint(t, src, testMeta(), testData(300), Options{BlockSize: 700})
	r, err := Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	later := testMeta()
	later.CreatedAt += 36 * 3600 * 1000
	shorter := testMeta()
	day := *shorter.Operators[0].States[2].TTL
	day.TTL /= 7
	shorter.Operators[0].States[2].TTL = &day
	for _, tc := range []struct {
		name    string
		meta    *savepoint.Metadata
		carried bool
	}{{"same anchor and TTL", testMeta(), true}, {"later anchor", later, false}, {"shorter TTL", shorter, false}} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := copyAll(t, r, tc.meta)
			if err != nil {
				t.Fatal(err)
			}
			if err := verify(ctx, out); err != nil {
				t.Fatalf("reading the copy: %v", err)
			}
			in, got := opSegments(r, 0), opSegments(out, 0)
			differ := 0
			for i := range in {
				if in[i].Ref.Timer || tc.meta.Operators[0].States[in[i].Ref.State].TTL == nil {
					continue
				}
				if !slices.Equal(in[i].Sizes, got[i].Sizes) {
					t.Errorf("key group %d: value sizes %v, the source's %v", in[i].KeyGroup, got[i].Sizes, in[i].Sizes)
				}
				if got[i].Anchor != tc.meta.CreatedAt {
					t.Errorf("key group %d: anchored at %d, want the creation time %d", in[i].KeyGroup, got[i].Anchor, tc.meta.CreatedAt)
				}
				if !slices.Equal(in[i].Modified, got[i].Modified) {
					differ++
				}
			}
			if tc.carried && differ > 0 || !tc.carried && differ == 0 {
				t.Errorf("%d segments' last-modified histograms differ from the source's", differ)
			}
		})
	}
}

// TestCopySegmentChecksCarriedHistogram: a last-modified histogram that a
// copy carries over must span the buckets of the times the copy counts.
func TestCopySegmentChecksCarriedHistogram(t *testing.T) {
	ctx := context.Background()
	d, m, idx := decodedSmall(t)
	var seg *savepoint.Segment
	for i := range idx.segments[0] {
		if s := &idx.segments[0][i]; s.Modified != nil && s.Entries > 1 {
			seg = s
			break
		}
	}
	if seg == nil {
		t.Fatal("no segment of several entries with a last-modified histogram")
	}
	last := &seg.Modified[len(seg.Modified)-1]
	if len(seg.Modified) > 1 {
		// The highest bucket's items move one bucket up: the counts still
		// add up to the entries, so only the copy's check can tell.
		last.Bucket++
	} else {
		seg.Modified = savepoint.Histogram{{Bucket: last.Bucket, Count: last.Count - 1}, {Bucket: last.Bucket + 1, Count: 1}}
	}
	d = d.clone()
	d.files[MetadataName] = metadataFile(encodeMetadataBody(m, idx))
	r, err := Open(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	_, err = copyAll(t, r, m)
	wantCorrupt(t, err, "last-modified histogram spans buckets")
}
