package chkstore

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// TestRetentionDeletesWhatNoCheckpointReferences checks retention on a
// root laid out by hand: shared files that only deleted checkpoints
// referenced go, the others stay.
func TestRetentionDeletesWhatNoCheckpointReferences(t *testing.T) {
	root := t.TempDir()
	refs := map[uint64][]string{1: {"a", "b"}, 2: {"b", "c"}, 3: {"c", "d"}, 4: {"d", "e"}}
	for id, names := range refs {
		db := chkdir.DB{Operator: "op"}
		for _, n := range names {
			db.Files = append(db.Files, chkdir.File{Name: n + ".sst", Path: chkdir.SharedDir + "/" + n, Size: 1})
		}
		b, err := chkdir.Encode(&chkdir.Manifest{Version: chkdir.Version, Databases: []chkdir.DB{db}})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(chkdir.Path(root, id), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(chkdir.Path(root, id), chkdir.ManifestName), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := NewStore(root, nil, t.TempDir(), snapshotfmt.CodecNone)
	if err := os.MkdirAll(filepath.Join(root, chkdir.SharedDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c", "d", "e", "orphan"} {
		if err := os.WriteFile(filepath.Join(root, chkdir.SharedDir, n), []byte{1}, 0o644); err != nil {
			t.Fatal(err)
		}
		s.published[chkdir.SharedDir+"/"+n] = chkdir.File{}
	}
	if err := s.Retain(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	ids, err := chkdir.List(root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []uint64{3, 4}) {
		t.Fatalf("checkpoints %v remain, want [3 4]", ids)
	}
	var kept []string
	entries, err := os.ReadDir(filepath.Join(root, chkdir.SharedDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		kept = append(kept, e.Name())
	}
	if !slices.Equal(kept, []string{"c", "d", "e"}) {
		t.Fatalf("shared files %v kept, want c, d and e", kept)
	}
	if _, ok := s.published[chkdir.SharedDir+"/a"]; ok {
		t.Fatal("a deleted shared file is still known as published: a later checkpoint would reference it")
	}
}

// In a bucket, the temporary uploads that killed or ousted writers left
// in checkpoint directories go with those directories: retention removes
// them with the checkpoints it deletes, and a directory that holds nothing
// else below the newest checkpoint, and the next checkpoint removes those
// left under its own number. Nothing else removes them.
func TestBucketRetentionRemovesTemporaryUploads(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	c := srv.Client(srv.Endpoint())
	root := storetest.URL(srv.Endpoint(), "state", "chk")
	ctx := context.Background()
	hold, err := HoldRoot(ctx, root, testTerm)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Release(ctx)
	tmp := storage.TempPrefix
	for _, key := range []string{
		"chk-1/_metadata", "chk-1/" + tmp + "a", // retained away
		"chk-2/" + tmp + "b", // an incomplete checkpoint below the newest
		"chk-3/_metadata",
		"chk-4/_metadata", "chk-4/data",
		"chk-5/" + tmp + "c", "chk-5/data", // a dead run's checkpoint in flight
	} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String("chk/" + key), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	left := func() []string {
		var keys []string
		for k := range srv.Objects(t, "state", "chk") {
			if k != HoldName {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		return keys
	}
	s, cp := beginCheckpoint(t, ctx, root, hold)
	if cp.id != 5 {
		t.Fatalf("the next checkpoint is %d, want 5", cp.id)
	}
	if got, want := left(), []string{"chk-1/" + tmp + "a", "chk-1/_metadata", "chk-2/" + tmp + "b", "chk-3/_metadata", "chk-4/_metadata", "chk-4/data"}; !slices.Equal(got, want) {
		t.Errorf("after checkpoint 5 began: %v, want %v", got, want)
	}
	s.Discard(cp)
	if err := s.Retain(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if got, want := left(), []string{"chk-3/_metadata", "chk-4/_metadata", "chk-4/data"}; !slices.Equal(got, want) {
		t.Errorf("after retention of 2: %v, want %v", got, want)
	}
}
