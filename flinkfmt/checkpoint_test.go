package flinkfmt

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

func TestCheckpointRelative(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"/flink/ckpts/job/shared/a1", "shared/a1"},
		{"/flink/ckpts/job/chk-12/a1", "chk-12/a1"},
		{"/flink/ckpts/job/taskowned/a1", "taskowned/a1"},
		{"/flink/ckpts/job/shared/job_1_op_2_0_1/a1", "shared/job_1_op_2_0_1/a1"},
		// The last marker counts: the job's directory may itself lie under
		// a directory of one of these names.
		{"/mnt/shared/ckpts/job/chk-5/a1", "chk-5/a1"},
		{"/mnt/shared/ckpts/job/shared/a1", "shared/a1"},
		{"/flink/ckpts/job/shared", ""},
		{"/flink/savepoints/savepoint-1/a1", ""},
		{"/flink/ckpts/job/chk-x/a1", ""},
		{"/flink/ckpts/job/chk--1/a1", ""},
		{"/flink/ckpts/job/shared/../../a1", ""},
		{"/flink/ckpts/job/shared//a1", ""},
	} {
		got, ok := checkpointRelative(c.path)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%s: %q, %v, want %q", c.path, got, ok, c.want)
		}
	}
}

// absFile is a file that the metadata names by an absolute URI, as Flink
// records the shared files of incremental checkpoints.
func absFile(local, at, uri string, data []byte) nativeFile {
	return nativeFile{local: local, data: data, at: at, ref: bld(nil).u8(byte(StreamFile)).i64(int64(len(data))).utf(uri)}
}

// segment is a part of a file-merging file in the shared scope.
func segmentRef(local, uri string, off int64, data []byte) nativeFile {
	return nativeFile{local: local, data: data, ref: bld(nil).u8(byte(StreamSegment)).i64(off).i64(int64(len(data))).i32(1).utf(uri).utf("logical-" + local)}
}

// An incremental checkpoint in the layout of Flink's file system checkpoint
// storage: tables in shared/ (two of them segments of one file-merging
// file one directory deeper), an OPTIONS file in taskowned/, the rest in
// chk-3/, some of it by absolute path. OpenCheckpoint reads it from the
// job's directory, wherever that now is; Open on chk-3 alone does not
// leave it and says why a file is missing; a path map works as for
// savepoints; a path that climbs out of shared/ is not followed.
func TestIncrementalCheckpointLayout(t *testing.T) {
	sc := newScenario(t)
	const job = "hdfs://namenode:8020/flink/checkpoints/0f1e2d3c"
	tmp := t.TempDir()
	root := filepath.Join(tmp, "0f1e2d3c")
	var files []nativeFile
	var merged []byte
	for i, f := range sc.files {
		switch {
		case strings.HasSuffix(f.local, ".sst") && i < 2:
			seg := segmentRef(f.local, job+"/shared/job_0f1e_op_a1_0_1/merged-1", int64(len(merged)), f.data)
			merged = append(merged, f.data...)
			files = append(files, seg)
		case strings.HasSuffix(f.local, ".sst"):
			files = append(files, absFile(f.local, "shared/"+f.at, job+"/shared/"+f.at, f.data))
		case f.local == "OPTIONS-000009":
			files = append(files, absFile(f.local, "taskowned/"+f.at, job+"/taskowned/"+f.at, f.data))
		case f.local == "CURRENT":
			files = append(files, absFile(f.local, "chk-3/"+f.at, job+"/chk-3/"+f.at, f.data))
		default:
			files = append(files, relFile(f.local, f.at, f.data))
			files[len(files)-1].at = "chk-3/" + f.at
		}
	}
	writeNative(t, root, "chk-3", 128, keygroup.Range{Start: 0, End: 63}, nativeHeader(), files[:6], files[6:])
	if err := os.MkdirAll(filepath.Join(root, "shared", "job_0f1e_op_a1_0_1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "shared", "job_0f1e_op_a1_0_1", "merged-1"), merged, 0o644); err != nil {
		t.Fatal(err)
	}
	// An older checkpoint, and one in progress without its _metadata.
	writeNative(t, root, "chk-1", 128, keygroup.Range{Start: 0, End: 63}, nativeHeader(), nil, nil)
	if err := os.MkdirAll(filepath.Join(root, "chk-4"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "chk-4", "partial"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	entries := func(t *testing.T, r *Reader) ([]string, error) {
		t.Helper()
		k, err := r.Keyed(ctx, r.Metadata().Operators[0])
		if err != nil {
			t.Fatal(err)
		}
		it := k.Entries(ctx, -1, keygroup.All(128))
		for it.Next() {
		}
		if it.Err() != nil {
			return nil, it.Err()
		}
		return describe(t, k, k.Entries(ctx, -1, keygroup.All(128))), nil
	}
	for _, id := range []int64{3, -1} {
		r, err := OpenCheckpoint(ctx, storage.LocalDir(root), id, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := entries(t, r); !slices.Equal(got, sc.want) {
			t.Errorf("checkpoint %d: entries %q, want %q", id, got, sc.want)
		}
		if len(r.Metadata().Warnings) != 0 {
			t.Errorf("checkpoint %d: warnings %q", id, r.Metadata().Warnings)
		}
	}
	// chk-1's _metadata records checkpoint 3, as all of this test's do.
	r, err := OpenCheckpoint(ctx, storage.LocalDir(root), 1, Options{})
	if err != nil || len(r.Metadata().Warnings) != 1 || !strings.Contains(r.Metadata().Warnings[0], "records checkpoint 3") {
		t.Errorf("checkpoint 1: %v, warnings %v", err, r.Metadata().Warnings)
	}
	if _, err := OpenCheckpoint(ctx, storage.LocalDir(filepath.Join(root, "shared")), -1, Options{}); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("a directory without checkpoints: %v", err)
	}

	// Opened alone, chk-3 finds its own files by base name and nothing in
	// shared/.
	r, err = Open(ctx, storage.LocalDir(filepath.Join(root, "chk-3")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := entries(t, r); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "taskowned/options-9 lies in the job's checkpoint directory") || !strings.Contains(err.Error(), "OpenCheckpoint") {
		t.Errorf("chk-3 alone: %v", err)
	}
	r, err = Open(ctx, storage.LocalDir(filepath.Join(root, "chk-3")), Options{PathMap: map[string]string{job: root}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := entries(t, r); err != nil || !slices.Equal(got, sc.want) {
		t.Errorf("chk-3 with a path map: %v, %q", err, got)
	}

	// A shared path that climbs out of the job's directory is looked up by
	// its base name in chk-3 and nowhere else.
	outside := filepath.Join(tmp, "etc")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	table := sc.files[2]
	if err := os.WriteFile(filepath.Join(outside, "stolen"), table.data, 0o644); err != nil {
		t.Fatal(err)
	}
	hostile := slices.Clone(files)
	hostile[2] = absFile(table.local, "", job+"/shared/../../etc/stolen", table.data)
	writeNative(t, root, "chk-3", 128, keygroup.Range{Start: 0, End: 63}, nativeHeader(), hostile[:6], hostile[6:])
	r, err = OpenCheckpoint(ctx, storage.LocalDir(root), 3, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := entries(t, r); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "stolen") {
		t.Errorf("a path out of shared/: %v", err)
	}
}
