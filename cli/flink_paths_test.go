package cli_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/cli"
)

// absolutePaths copies a Flink savepoint into a new _metadata whose
// relative file handles are absolute file handles under old, as a
// savepoint written to a file system with absolute paths records them,
// and returns the directory with that _metadata alone and the files'
// names.
func absolutePaths(t *testing.T, src, old string) (string, []string) {
	t.Helper()
	meta, err := os.ReadFile(filepath.Join(src, "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if name == "_metadata" {
			continue
		}
		// A RelativeFileStateHandle: tag 6, the name in modified UTF-8,
		// the size; a FileStateHandle: tag 2, the size, the path.
		rel := append([]byte{6}, binary.BigEndian.AppendUint16(nil, uint16(len(name)))...)
		rel = append(rel, name...)
		for {
			i := bytes.Index(meta, rel)
			if i < 0 {
				break
			}
			size := meta[i+len(rel) : i+len(rel)+8]
			path := old + "/" + name
			abs := append([]byte{2}, size...)
			abs = binary.BigEndian.AppendUint16(abs, uint16(len(path)))
			abs = append(abs, path...)
			meta = append(meta[:i], append(abs, meta[i+len(rel)+8:]...)...)
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		t.Fatalf("%s has no relative file handles", src)
	}
	dir := filepath.Join(t.TempDir(), "sp")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_metadata"), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, names
}

func copyFiles(t *testing.T, from, to string, names []string) {
	t.Helper()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(from, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// An absolute path in a Flink _metadata is never opened as given: its
// file is looked up by its base name in the savepoint's directory, or, with
// --path-map OLD=NEW, under NEW. The broadcast-state migration test's
// savepoint (Flink 1.15) keeps its operator state in such files.
func TestFlinkAbsolutePaths(t *testing.T) {
	src := filepath.Join(flinkRoot(t), "flink-tests/src/test/resources/new-stateful-broadcast-udf-migration-itcase-flink1.15-hashmap-savepoint")
	// Where the files were written: a directory that exists here, so that
	// opening a path as given would find them.
	old := t.TempDir()
	dir, names := absolutePaths(t, src, old)
	copyFiles(t, src, old, names)
	code, _, stderr := inProcess("verify", "--deep", dir)
	if code != cli.ExitBadInput || !strings.Contains(stderr, "opening "+names[0]) && !strings.Contains(stderr, "opening ") {
		t.Errorf("verify with the files only at their absolute paths: exit %d: %s", code, stderr)
	}
	moved := t.TempDir()
	copyFiles(t, src, moved, names)
	code, stdout, stderr := inProcess("--path-map", old+"="+moved, "dump", dir, "--operator", "12d7d939fd56473cac7cff0603179a41", "--state", "broadcast-state-1")
	if code != cli.ExitOK {
		t.Fatalf("dump with --path-map: exit %d: %s", code, stderr)
	}
	if n := strings.Count(stdout, "\n"); n != 4 {
		t.Errorf("broadcast-state-1 through --path-map: %d entries, want 4:\n%s", n, stdout)
	}
	// NEW relative to the savepoint's directory, out of it: the user's
	// argument, unlike a path the metadata records, may climb.
	rel, err := filepath.Rel(dir, moved)
	if err != nil || !strings.HasPrefix(rel, "..") {
		t.Fatalf("%s from %s: %q, %v", moved, dir, rel, err)
	}
	code, stdout, stderr = inProcess("--path-map", old+"="+rel, "dump", dir, "--operator", "12d7d939fd56473cac7cff0603179a41", "--state", "broadcast-state-1")
	if code != cli.ExitOK || strings.Count(stdout, "\n") != 4 {
		t.Errorf("dump with --path-map to %s: exit %d: %s%s", rel, code, stdout, stderr)
	}
	// OLD as the metadata never records it.
	if code, _, stderr := inProcess("--path-map", strings.TrimPrefix(old, "/")+"="+moved, "inspect", dir); code != cli.ExitUsage || !strings.Contains(stderr, "is not an absolute path or URI") {
		t.Errorf("a relative OLD: exit %d: %s", code, stderr)
	}
	copyFiles(t, src, dir, names)
	if code, _, stderr := inProcess("verify", "--deep", dir); code != cli.ExitOK {
		t.Errorf("verify with the files beside _metadata: exit %d: %s", code, stderr)
	}
	if code, _, stderr := inProcess("--path-map", "nonsense", "inspect", dir); code != cli.ExitUsage || !strings.Contains(stderr, "want OLD=NEW") {
		t.Errorf("a bad --path-map: exit %d: %s", code, stderr)
	}
}

// A retained incremental checkpoint in the layout of Flink's file system
// checkpoint storage, as a user finds it: the job's directory holds
// chk-2/_metadata, whose handles name every table and manifest by
// absolute path under the job's shared/. The commands read it through
// chk-2 or through the job's directory (its newest checkpoint) and find
// the same state as in the fixture, whose files lie beside its _metadata;
// chk-2 copied away from shared/ finds nothing and exits 4.
func TestFlinkJobCheckpointDirectory(t *testing.T) {
	src := filepath.Join(flinkRoot(t), "flink-tests/src/test/resources/new-stateful-udf-migration-itcase-flink1.20-rocksdb-checkpoint")
	meta, names := absolutePaths(t, src, "hdfs://namenode:8020/flink/checkpoints/3b5f07e1/shared")
	job := filepath.Join(t.TempDir(), "3b5f07e1")
	for _, d := range []string{"chk-2", "shared", "chk-1"} {
		if err := os.MkdirAll(filepath.Join(job, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFiles(t, meta, filepath.Join(job, "chk-2"), []string{"_metadata"})
	copyFiles(t, src, filepath.Join(job, "shared"), names)

	verify := func(dir string) (int, string, string) {
		code, stdout, stderr := inProcess("verify", "--deep", dir, "-o", "json")
		var rep struct {
			OK                           bool
			Layout                       string
			Segments, Entries, Operators int
		}
		if code == cli.ExitOK {
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatal(err)
			}
			stdout = fmt.Sprintf("%v %s: %d operators, %d segments, %d entries", rep.OK, rep.Layout, rep.Operators, rep.Segments, rep.Entries)
		}
		return code, stdout, stderr
	}
	dump := func(dir string) string {
		code, stdout, stderr := inProcess("dump", dir, "--operator", "d5c8b168c6cbfe8c507a10f88b325243", "--state", "state-name")
		if code != cli.ExitOK {
			t.Fatalf("dump %s: exit %d: %s", dir, code, stderr)
		}
		return stdout
	}
	_, want, _ := verify(src)
	if want != "true Apache Flink checkpoint, metadata version 4 (Flink 1.16–1.20), native RocksDB: 8 operators, 24 segments, 32 entries" {
		t.Fatalf("verify of the fixture: %s", want)
	}
	wantDump := dump(src)
	if n := strings.Count(wantDump, "\n"); n != 4 {
		t.Fatalf("the fixture's state-name of the first keyed flat map: %d entries, want 4:\n%s", n, wantDump)
	}
	for _, dir := range []string{filepath.Join(job, "chk-2"), job} {
		if code, got, stderr := verify(dir); code != cli.ExitOK || got != want {
			t.Errorf("verify %s: exit %d: %s %s, want %s", dir, code, got, stderr, want)
		}
		if got := dump(dir); got != wantDump {
			t.Errorf("dump %s:\n%s\nwant\n%s", dir, got, wantDump)
		}
	}
	alone := filepath.Join(t.TempDir(), "chk-2")
	if err := os.Mkdir(alone, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFiles(t, meta, alone, []string{"_metadata"})
	if code, _, stderr := verify(alone); code != cli.ExitBadInput || !strings.Contains(stderr, "lies in the job's checkpoint directory, outside "+alone) {
		t.Errorf("chk-2 without the job's shared/: exit %d: %s", code, stderr)
	}
}
