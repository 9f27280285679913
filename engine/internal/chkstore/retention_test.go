package chkstore

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/snapshotfmt"
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
