package snapshotfmt

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// TestTallyMatchesIndex counts the entries of every segment of the test
// savepoint with a Tally and compares with what the writer put in the
// index, at the default block size, where the blocks are cut alike.
func TestTallyMatchesIndex(t *testing.T) {
	d := newMemDir()
	writeSavepoint(t, d, testMeta(), testData(400), Options{})
	r, err := Open(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	segs := opSegments(r, 0)
	if len(segs) == 0 {
		t.Fatal("no segments")
	}
	for _, seg := range segs {
		tl, err := NewTally(r.Metadata(), seg.Ref, seg.KeyGroup)
		if err != nil {
			t.Fatal(err)
		}
		it := r.iterate(context.Background(), seg)
		for it.Next() {
			if err := tl.Add(it.Entry()); err != nil {
				t.Fatal(err)
			}
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
		if got := tl.Stats(); !reflect.DeepEqual(got, seg.Stats) {
			t.Errorf("%s key group %d: tally %+v, index %+v", r.Metadata().Describe(seg.Ref), seg.KeyGroup, got, seg.Stats)
		}
	}

	// Entries out of order are refused, as a writer refuses them.
	seg := segs[0]
	tl, _ := NewTally(r.Metadata(), seg.Ref, seg.KeyGroup)
	it := r.iterate(context.Background(), seg)
	defer it.Close()
	if !it.Next() {
		t.Fatal(it.Err())
	}
	e := *it.Entry()
	if err := tl.Add(&e); err != nil {
		t.Fatal(err)
	}
	if err := tl.Add(&e); err == nil || !strings.Contains(err.Error(), "key group") {
		t.Errorf("the same entry twice = %v", err)
	}
	if _, err := NewTally(r.Metadata(), seg.Ref, 16); err == nil {
		t.Error("a key group beyond the max parallelism accepted")
	}
}
