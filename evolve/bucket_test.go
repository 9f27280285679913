package evolve_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/evolve"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// A check whose verdict depends on the values reads them from a bucket
// segment by segment and stops at the first unreadable value, here in the
// first key group: a handful of GETs for hundreds of segments (reading the
// next segments ahead, as a scan does, read them all), and the same report
// as from disk.
func TestCheckOfABucketStopsAtTheFirstUnreadable(t *testing.T) {
	var c evolveCase
	for _, cc := range evolveCases() {
		if cc.name == "enum-symbol-removed" {
			c = cc
		}
	}
	if !c.expectUnreadable {
		t.Fatal("no case enum-symbol-removed with an unreadable value")
	}
	ctx := context.Background()
	srv := storetest.StartWithBucket(t, "state")
	sp := filepath.Join(t.TempDir(), "sp")
	old, new := c.schemas(t)
	in := c.input(t, old, 400)
	writeSavepoint(t, old, in, engine.Heap, sp)
	srv.Upload(t, sp, "state", "sp")
	local := openSavepoint(t, sp)
	tg := target(t, buildJob(t, new, in, engine.NewCollectSink[readBack]()))
	want, err := evolve.Check(ctx, local, tg, evolve.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	wantItem := onlyChange(t, want)
	if wantItem.Unreadable == nil {
		t.Fatalf("the check on disk found no unreadable value: %s", wantItem.Reason)
	}
	segs, err := savepoint.AllSegments(ctx, local)
	if err != nil {
		t.Fatal(err)
	}
	p := storetest.NewProxy(t, srv.Endpoint())
	src, err := layouts.OpenLocation(ctx, storetest.URL(p.URL, "state", "sp"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	gets := p.Ops("GetObject")
	got, err := evolve.Check(ctx, src, tg, evolve.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	gotItem := onlyChange(t, got)
	if gotItem.Verdict != wantItem.Verdict || gotItem.Reason != wantItem.Reason || *gotItem.Unreadable != *wantItem.Unreadable {
		t.Errorf("the check of the bucket's savepoint: %v: %s; want %v: %s", gotItem.Verdict, gotItem.Reason, wantItem.Verdict, wantItem.Reason)
	}
	if gets = p.Ops("GetObject") - gets; gets*10 > len(segs) {
		t.Errorf("the check made %d GETs for a savepoint of %d segments, whose first holds an unreadable value", gets, len(segs))
	}
	t.Logf("%d segments, %d GETs: %s", len(segs), gets, gotItem.Reason)
}
