package evolve_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/evolve"
	"github.com/stateproc/stateproc/internal/sptest"
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
	srv := storetest.Start(t)
	srv.Env(t)
	srv.Bucket(t, "state")
	sp := filepath.Join(t.TempDir(), "sp")
	old, new := c.schemas(t)
	in := c.input(t, old, 400)
	writeSavepoint(t, old, in, engine.Heap, sp)
	for name, b := range sptest.Files(t, sp) {
		if _, err := srv.Client(srv.Endpoint()).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String("sp/" + name),
			Body: bytes.NewReader(b)}); err != nil {
			t.Fatal(err)
		}
	}
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
