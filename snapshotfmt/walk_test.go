package snapshotfmt_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// bucketSavepoint writes a generated savepoint of two data files under
// in/ of a bucket on versitygw and opens it through a counting proxy, and
// also from its local copy.
func bucketSavepoint(t *testing.T) (srv *storetest.Server, p *storetest.Proxy, c *storage.Counters, r, local *snapshotfmt.Reader) {
	t.Helper()
	ctx := context.Background()
	srv = storetest.StartWithBucket(t, "state")
	// Pad makes the session segments about 120 KiB long: several go into a
	// read, and a file takes several reads.
	local = uploadGenerated(t, srv, spgen.Config{Seed: 9, Users: 600, Accounts: 50, Parallelism: 2, MaxParallelism: 128, Now: 1_700_000_000_000, Pad: 20000})
	p = storetest.NewProxy(t, srv.Endpoint())
	d, err := storage.OpenDir(ctx, storetest.URL(p.URL, "state", "in"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if r, err = snapshotfmt.Open(ctx, d); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return srv, p, storage.CountersOf(d), r, local
}

// uploadGenerated writes the savepoint cfg generates under in/ of the
// bucket state, and opens its local copy.
func uploadGenerated(t *testing.T, srv *storetest.Server, cfg spgen.Config) *snapshotfmt.Reader {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "in")
	if err := spgen.Write(dir, cfg); err != nil {
		t.Fatal(err)
	}
	srv.Upload(t, dir, "state", "in")
	return sptest.Open(t, dir)
}

// TestWalkOpensItsFilesTogether walks a bucket's savepoint of several data
// files, opened lazily: the walk opens them all before its first read, and
// each open is a round trip (a GET of the preamble, which also gives the
// object's size and version, and no HEAD), so it makes them together
// rather than one file after another. The proxy holds the GETs until one
// per file is in, and gives up after a while when they come one at a
// time. The walk then gives the entries the local copy gives.
func TestWalkOpensItsFilesTogether(t *testing.T) {
	ctx := context.Background()
	srv := storetest.StartWithBucket(t, "state")
	local := uploadGenerated(t, srv, spgen.Config{Seed: 4, Users: 300, Accounts: 40, Parallelism: 4, MaxParallelism: 128, Now: 1_700_000_000_000})
	p := storetest.NewProxy(t, srv.Endpoint())
	d, err := storage.OpenDir(ctx, storetest.URL(p.URL, "state", "in"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r, err := snapshotfmt.OpenLazily(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	files := len(r.DataFiles())
	if files < 4 {
		t.Fatalf("%d data files, want several", files)
	}
	heads, gets := p.Ops("HeadObject"), p.Ops("GetObject")
	preamblesTogether := p.Gather("GetObject", files, 3*time.Second)
	segs := inFileOrder(mustSegments(t, r))
	w := savepoint.WalkSegments(ctx, r, segs)
	defer w.Close()
	if !preamblesTogether() {
		t.Errorf("the %d data files were not opened together", files)
	}
	if got := p.Ops("HeadObject") - heads; got != 0 {
		t.Errorf("%d HEADs to open %d data files, want none", got, files)
	}
	n, want := 0, 0
	for i, seg := range segs {
		it := w.Entries(ctx, i)
		for it.Next() {
			n++
		}
		if err := it.Err(); err != nil {
			t.Fatalf("segment %d: %v", i, err)
		}
		it.Close()
		for it := savepoint.SegmentEntries(ctx, local, seg); it.Next(); {
			want++
		}
	}
	if n != want || n == 0 {
		t.Errorf("%d entries from the bucket, %d from the local copy", n, want)
	}
	t.Logf("%d files, %d entries, %d GETs", files, n, p.Ops("GetObject")-gets)
}

// inFileOrder is segs sorted by file and offset, as a scan takes them.
func inFileOrder(segs []savepoint.Segment) []savepoint.Segment {
	segs = slices.Clone(segs)
	slices.SortFunc(segs, func(a, b savepoint.Segment) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Offset, b.Offset))
	})
	return segs
}

// TestWalkReadsTheNextSegmentsAhead walks a bucket's segments: while the
// first segment's first entry is all that was read, the requests for the
// next segments are made; every segment then gives the entries the local
// copy gives; adjacent segments were read together, in fewer GETs than
// segments, and not a byte more than the segments was read.
func TestWalkReadsTheNextSegmentsAhead(t *testing.T) {
	ctx := context.Background()
	_, p, c, r, local := bucketSavepoint(t)
	segs := inFileOrder(mustSegments(t, r))
	var total int64
	for _, s := range segs {
		total += s.Length
	}
	t.Logf("%d segments, %d bytes, in %d files", len(segs), total, len(r.DataFiles()))
	before, read := p.Ops("GetObject"), c.BytesRead.Load()
	w := savepoint.WalkSegments(ctx, r, segs)
	defer w.Close()
	it := w.Entries(ctx, 0)
	if !it.Next() {
		t.Fatalf("segment 0: %v", it.Err())
	}
	for deadline := time.Now().Add(10 * time.Second); p.Ops("GetObject")-before < 4; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d GETs while the first segment is read, want the next segments' too", p.Ops("GetObject")-before)
		}
	}
	for i, seg := range segs {
		if i > 0 {
			it = w.Entries(ctx, i)
		}
		want := savepoint.SegmentEntries(ctx, local, seg)
		n := 0
		for first := i == 0; first || it.Next(); first = false {
			if !want.Next() || !sameEntries(it.Entry(), want.Entry()) {
				t.Fatalf("segment %d (%s at %d): entry %d differs from the local copy's", i, seg.File, seg.Offset, n)
			}
			n++
		}
		if it.Err() != nil || want.Next() {
			t.Fatalf("segment %d: %v after %d entries", i, it.Err(), n)
		}
		it.Close()
		want.Close()
	}
	gets := p.Ops("GetObject") - before
	if n := c.BytesRead.Load() - read; gets >= len(segs)/2 || n != total {
		t.Fatalf("%d GETs for %d segments, %d bytes read for %d", gets, len(segs), n, total)
	}
	t.Logf("%d GETs", gets)
}

func sameEntries(a, b *savepoint.Entry) bool {
	return a.KeyGroup == b.KeyGroup && bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Namespace, b.Namespace) &&
		bytes.Equal(a.MapKey, b.MapKey) && bytes.Equal(a.Value, b.Value)
}

// TestWalkErrorNamesTheSegment replaces a data file after it was opened:
// the read ahead of its first segment, made while the segment before it
// is read, fails, and that segment's iterator reports it with its file
// and offset; the segment before reads to its end.
func TestWalkErrorNamesTheSegment(t *testing.T) {
	ctx := context.Background()
	srv, _, _, r, _ := bucketSavepoint(t)
	segs := inFileOrder(mustSegments(t, r))
	// The last segment of one file, then the first of the next.
	var pair []savepoint.Segment
	for i := 1; i < len(segs) && pair == nil; i++ {
		if segs[i-1].File != segs[i].File {
			pair = segs[i-1 : i+1]
		}
	}
	if pair == nil {
		t.Fatal("one data file only")
	}
	putObject := func(key string, b []byte) {
		if _, err := srv.Client(srv.Endpoint()).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String(key), Body: bytes.NewReader(b)}); err != nil {
			t.Fatal(err)
		}
	}
	putObject("in/"+pair[1].File, []byte("another file"))
	w := savepoint.WalkSegments(ctx, r, pair)
	defer w.Close()
	it := w.Entries(ctx, 0)
	for it.Next() {
	}
	if err := it.Err(); err != nil {
		t.Fatalf("the segment before the replaced file: %v", err)
	}
	it.Close()
	it = w.Entries(ctx, 1)
	defer it.Close()
	if it.Next() {
		t.Fatal("an entry of a replaced file")
	}
	var e *savepoint.Error
	if err := it.Err(); !errors.Is(err, storage.ErrChanged) || !errors.As(err, &e) || e.File != pair[1].File || e.Offset != pair[1].Offset || e.KeyGroup != pair[1].KeyGroup {
		t.Fatalf("reading the replaced file = %v, want ErrChanged at %s offset %d, key group %d", err, pair[1].File, pair[1].Offset, pair[1].KeyGroup)
	}
}

// Entries over a range of key groups of a savepoint in a bucket reads the
// segments through a walk, the next ones while one is iterated: each in
// one GET, where iterating them one by one took two, and the entries are
// those of the local copy.
func TestEntriesOfABucketRangeReadAhead(t *testing.T) {
	ctx := context.Background()
	_, p, _, r, local := bucketSavepoint(t)
	ref := savepoint.StateRef{Operator: spgen.OpFeatures, State: spgen.RefCounts}
	kgs := keygroup.All(r.Metadata().Operators[ref.Operator].MaxParallelism)
	segs, err := r.Segments(ctx, ref, kgs)
	if err != nil || len(segs) < 3 {
		t.Fatalf("%d segments (%v), want several", len(segs), err)
	}
	gets := p.Ops("GetObject")
	it := r.Entries(ctx, ref, kgs)
	defer it.Close()
	if !it.Next() {
		t.Fatalf("no entry: %v", it.Err())
	}
	n := 1
	for it.Next() {
		n++
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	want := 0
	for it := local.Entries(ctx, ref, kgs); it.Next(); {
		want++
	}
	if n != want {
		t.Errorf("%d entries from the bucket, %d from the local copy", n, want)
	}
	if g := p.Ops("GetObject") - gets; g > len(segs) {
		t.Errorf("%d GETs for %d segments, want one each at most", g, len(segs))
	}
	t.Logf("%d segments, %d entries, %d GETs", len(segs), n, p.Ops("GetObject")-gets)
}

// A walk that holds a share of one walk's budget (one of eight that run at
// once) still keeps several requests in flight where its segments are
// small and lie apart (those of one state, between the other states'), as
// many as the full walk: its budget bounds the bytes, not the requests.
// The proxy holds the GETs until three are in, and lets them on after a
// while when they come one at a time.
func TestSharedWalkKeepsSmallReadsInFlight(t *testing.T) {
	ctx := context.Background()
	_, p, _, r, _ := bucketSavepoint(t)
	all := inFileOrder(mustSegments(t, r))
	// The segments of one state in one file, of the least bytes among
	// those of eight segments or more.
	type group struct {
		ref  savepoint.StateRef
		file string
	}
	groups := map[group][]savepoint.Segment{}
	for _, s := range all {
		g := group{s.Ref, s.File}
		groups[g] = append(groups[g], s)
	}
	var segs []savepoint.Segment
	var least int64
	for _, g := range groups {
		var n int64
		for _, s := range g {
			n += s.Length
		}
		if len(g) >= 8 && (segs == nil || n < least) {
			segs, least = g, n
		}
	}
	if segs == nil {
		t.Fatal("no state has eight segments in a file")
	}
	for i := 1; i < len(segs); i++ {
		if segs[i].Offset == segs[i-1].Offset+segs[i-1].Length {
			t.Fatalf("segments %d and %d are adjacent", i-1, i)
		}
	}
	together := p.Gather("GetObject", 3, 3*time.Second)
	w := savepoint.WalkSegmentsShared(ctx, r, segs, 8)
	defer w.Close()
	for i := range segs {
		it := w.Entries(ctx, i)
		for it.Next() {
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
	}
	if !together() {
		t.Errorf("the walk's reads of %d small segments that lie apart were not in flight together", len(segs))
	}
}
