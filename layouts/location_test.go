package layouts_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/internal/flinkgen"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// A Flink savepoint in a bucket reads through the storage seam as it does
// from disk: its metadata names its state files relative to itself, and
// they are read from the same prefix. The broadcast states hold what
// Flink's BroadcastStateMigration job wrote, keys 0 to 3 mapped to
// themselves. layouts still refuses it, as it does on disk.
func TestFlinkSavepointInABucket(t *testing.T) {
	const fixture = "../../shared/flink-savepoints/flink-tests/src/test/resources/new-stateful-broadcast-udf-migration-itcase-flink1.15-hashmap-savepoint"
	if _, err := os.Stat(fixture); err != nil {
		t.Skipf("the Flink savepoints are not here (%v)", err)
	}
	srv := storetest.StartWithBucket(t, "flink")
	srv.Upload(t, fixture, "flink", "savepoints/savepoint-15")
	ctx := context.Background()
	loc := storetest.URL(srv.Endpoint(), "flink", "savepoints/savepoint-15")
	dir, err := storage.OpenDir(ctx, loc, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	r, err := flinkfmt.Open(ctx, dir, flinkfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, op := range r.Metadata().Operators {
		states, _, err := r.OperatorStates(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range states {
			if s.Mode != flinkfmt.Broadcast {
				continue
			}
			var keys []string
			for _, e := range s.Entries {
				k, err := s.Key.Decode(e.Key)
				if err != nil {
					t.Fatal(err)
				}
				v, err := s.Value.Decode(e.Value)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(k) != fmt.Sprint(v) {
					t.Errorf("%s maps %v to %v", s.Name, k, v)
				}
				keys = append(keys, fmt.Sprint(k))
			}
			sort.Strings(keys)
			got[s.Name] = strings.Join(keys, ",")
		}
	}
	for _, s := range []string{"broadcast-state-1", "broadcast-state-2", "broadcast-state-3"} {
		if got[s] != "0,1,2,3" {
			t.Errorf("%s holds keys %q, want 0,1,2,3", s, got[s])
		}
	}
	// Through the seam too, as every command reads it.
	src, err := layouts.OpenLocation(ctx, loc, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if l := src.Layout().Name; !strings.Contains(l, "Flink") {
		t.Errorf("OpenLocation of a Flink savepoint in a bucket reads layout %q", l)
	}
	if n, want := len(src.Metadata().Operators), len(r.Metadata().Operators); n != want {
		t.Errorf("the seam sees %d operators, the reader %d", n, want)
	}
}

// TestOpenLocationCountsAndDefers opens a stateproc savepoint in a bucket
// through a proxy: opening reads _metadata once, whole, in one GET that
// also gives its size, while it looks for an incremental checkpoint's
// manifest (the GET and the manifest's HEAD are in flight together), and
// opens no data file; the entries then read are those on disk.
func TestOpenLocationCountsAndDefers(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	const sp = "../testdata/savepoints/v2/gateway-p2-pebble"
	srv.Upload(t, sp, "state", "sp")
	ctx := context.Background()
	p := storetest.NewProxy(t, srv.Endpoint())
	together := p.Gather("", 2, 3*time.Second)
	var c storage.Counters
	src, err := layouts.OpenLocation(ctx, storetest.URL(p.URL, "state", "sp"), storage.Options{Counters: &c})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	st, err := os.Stat(filepath.Join(sp, savepoint.MetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.BytesRead.Load(), st.Size(); got != want {
		t.Errorf("opening read %d bytes, want %d: _metadata once", got, want)
	}
	if heads, gets := p.Ops("HeadObject"), p.Ops("GetObject"); heads != 1 || gets != 1 || !together() {
		t.Errorf("opening made %d HEADs and %d GETs (together: %v), want the GET of _metadata and the HEAD of the manifest together",
			heads, gets, together())
	}
	local, err := layouts.Open(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	n, want := countEntries(t, src), countEntries(t, local)
	if n != want || n == 0 {
		t.Errorf("%d entries from the bucket, %d from disk", n, want)
	}
	t.Logf("%d entries, %d bytes read in %d requests", n, c.BytesRead.Load(), c.Requests.Load())
}

func countEntries(t *testing.T, src savepoint.Source) int {
	t.Helper()
	ctx := context.Background()
	segs, err := savepoint.AllSegments(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, seg := range segs {
		it := savepoint.SegmentEntries(ctx, src, seg)
		for it.Next() {
			n++
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
	}
	return n
}

// A walk over one state's segments of an Apache Flink savepoint in a
// bucket starts the next segments' reads ahead of the worker: after the
// count, the GETs of the first segments are in flight together (the
// proxy holds them until three are in, and lets them on after a while
// when they come one at a time), and every segment gives the entries it
// gives on disk.
func TestFlinkWalkInABucketReadsAhead(t *testing.T) {
	srv := storetest.StartWithBucket(t, "flink")
	c := flinkgen.SessionsLarge()
	c.Users = 300
	dir := filepath.Join(t.TempDir(), "flink")
	ctx := context.Background()
	if _, err := flinkgen.WriteDir(ctx, dir, false, c); err != nil {
		t.Fatal(err)
	}
	srv.Upload(t, dir, "flink", "sp")
	p := storetest.NewProxy(t, srv.Endpoint())
	src, err := layouts.OpenLocation(ctx, storetest.URL(p.URL, "flink", "sp"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	local, err := layouts.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	m := src.Metadata()
	op, err := m.FindOperator(flinkgen.OperatorUID)
	if err != nil {
		t.Fatal(err)
	}
	ref, ok := m.Find(op, flinkgen.CountsState)
	if !ok {
		t.Fatalf("no state %q", flinkgen.CountsState)
	}
	segs, err := src.Segments(ctx, ref, keygroup.All(c.MaxParallelism))
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 10 {
		t.Fatalf("%d segments, want many", len(segs))
	}
	gets := p.Ops("GetObject")
	together := p.Gather("GetObject", 3, 3*time.Second)
	w := savepoint.WalkSegments(ctx, src, segs)
	defer w.Close()
	for i, seg := range segs {
		it := w.Entries(ctx, i)
		if i%2 == 1 {
			// Every other segment by value sizes: the walk keeps the
			// reader's batch method.
			if _, ok := it.(savepoint.ValueBatcher); !ok {
				t.Fatalf("segment %d: the walk's %T gives no value sizes in batches", i, it)
			}
			got, want := valueSizes(t, it), valueSizes(t, savepoint.SegmentEntries(ctx, local, seg))
			if !slices.Equal(got, want) || len(want) == 0 {
				t.Fatalf("segment %d: value sizes from the bucket %v, from disk %v", i, got, want)
			}
			continue
		}
		n, want := 0, 0
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
		if n != want || n == 0 {
			t.Fatalf("segment %d: %d entries from the bucket, %d from disk", i, n, want)
		}
	}
	if !together() {
		t.Errorf("the first segments' reads were not in flight together")
	}
	t.Logf("%d segments, %d GETs", len(segs), p.Ops("GetObject")-gets)
}

// valueSizes reads it to its end by value sizes in batches, and closes it.
func valueSizes(t *testing.T, it savepoint.EntryIterator) []int {
	t.Helper()
	defer it.Close()
	var all []int
	var sizes [64]int
	var times [64]int64
	for {
		n := savepoint.NextValues(it, false, sizes[:], times[:])
		all = append(all, sizes[:n]...)
		if n < len(sizes) {
			break
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return all
}
