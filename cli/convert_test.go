package cli_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/cli"
	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/storage"
)

// nativeTables lists the SST files of a native savepoint's keyed handles
// that lie in its directory, by file name there and name in the RocksDB
// directory.
func nativeTables(t *testing.T, dir string) map[string]string {
	t.Helper()
	r, err := flinkfmt.Open(context.Background(), storage.LocalDir(dir), flinkfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, op := range r.Metadata().Operators {
		for _, st := range op.Subtasks {
			if st.ManagedKeyed == nil {
				continue
			}
			for _, f := range append(append([]flinkfmt.NamedHandle(nil), st.ManagedKeyed.Shared...), st.ManagedKeyed.Private...) {
				if strings.HasSuffix(f.LocalPath, ".sst") && f.Handle != nil && f.Handle.Kind == flinkfmt.StreamRelativeFile {
					out[f.Handle.Name] = f.LocalPath
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no tables", dir)
	}
	return out
}

// copyDir copies the files of a flat directory.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	copyFiles(t, from, to, names)
}

// nothingWritten fails when out, or a temporary directory of a rewrite,
// exists beside it.
func nothingWritten(t *testing.T, out string) {
	t.Helper()
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was written", out)
	}
	entries, err := os.ReadDir(filepath.Dir(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), storage.TempPrefix) {
			t.Errorf("%s left behind", e.Name())
		}
	}
}

// A native savepoint with a truncated table, and one that lacks a table,
// are not readable savepoints: convert, and rescale, which converts first,
// exit 4 naming the file, and write nothing; the input is left as it was.
func TestFlinkConvertHostileTables(t *testing.T) {
	src := filepath.Join(flinkRoot(t), "flink-tests/src/test/resources/new-stateful-udf-migration-itcase-flink1.20-rocksdb-savepoint-native")
	tables := nativeTables(t, src)
	var name string
	for n := range tables {
		if name == "" || n < name {
			name = n
		}
	}
	work := t.TempDir()
	cases := []struct {
		what   string
		damage func(dir string)
		want   string
	}{
		{"truncated", func(dir string) {
			p := filepath.Join(dir, name)
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, st.Size()/2); err != nil {
				t.Fatal(err)
			}
		}, name + " (" + tables[name] + ")"},
		{"missing", func(dir string) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}, name},
	}
	for _, c := range cases {
		dir := filepath.Join(work, c.what)
		copyDir(t, src, dir)
		c.damage(dir)
		before, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"convert", dir, "--out", filepath.Join(work, c.what+"-converted")},
			{"convert", dir, "--dry-run"},
			{"rescale", dir, "--max-parallelism", "256", "--out", filepath.Join(work, c.what+"-rescaled")},
		} {
			code, _, stderr := inProcess(args...)
			if code != cli.ExitBadInput || !strings.Contains(stderr, c.want) {
				t.Errorf("%s table: %s: exit %d, want 4 naming %s: %s", c.what, strings.Join(args, " "), code, c.want, stderr)
			}
			if out := args[len(args)-1]; args[len(args)-2] == "--out" {
				nothingWritten(t, out)
			}
		}
		after, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Errorf("%s table: the input's directory changed", c.what)
		}
	}
}

// An incremental checkpoint in its job's directory (chk-2/_metadata naming
// its tables by absolute path under shared/) converts to a savepoint with
// the state of the fixture its files come from; without one of its shared
// files, convert exits 4 naming it and writes nothing.
func TestFlinkConvertJobCheckpointDirectory(t *testing.T) {
	src := filepath.Join(flinkRoot(t), "flink-tests/src/test/resources/new-stateful-udf-migration-itcase-flink1.20-rocksdb-checkpoint")
	meta, names := absolutePaths(t, src, "hdfs://namenode:8020/flink/checkpoints/3b5f07e1/shared")
	job := filepath.Join(t.TempDir(), "3b5f07e1")
	for _, d := range []string{"chk-2", "shared"} {
		if err := os.MkdirAll(filepath.Join(job, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFiles(t, meta, filepath.Join(job, "chk-2"), []string{"_metadata"})
	copyFiles(t, src, filepath.Join(job, "shared"), names)
	dump := func(dir string) string {
		code, stdout, stderr := inProcess("dump", dir, "--operator", "d5c8b168c6cbfe8c507a10f88b325243", "--state", "state-name")
		if code != cli.ExitOK {
			t.Fatalf("dump %s: exit %d: %s", dir, code, stderr)
		}
		return stdout
	}
	out := filepath.Join(t.TempDir(), "converted")
	if code, _, stderr := inProcess("convert", job, "--out", out); code != cli.ExitOK {
		t.Fatalf("convert: exit %d: %s", code, stderr)
	}
	if got, want := dump(out), dump(src); got != want || strings.Count(got, "\n") != 4 {
		t.Errorf("converted:\n%s\nwant\n%s", got, want)
	}
	code, stdout, stderr := inProcess("inspect", out)
	if code != cli.ExitOK || !strings.Contains(stdout, "canonical") || strings.Contains(stdout, "native RocksDB") {
		t.Errorf("inspect of the output: exit %d: %s%s", code, stdout, stderr)
	}
	tables := nativeTables(t, src)
	var gone string
	for _, n := range names {
		if _, ok := tables[n]; ok && (gone == "" || n < gone) {
			gone = n
		}
	}
	if err := os.Remove(filepath.Join(job, "shared", gone)); err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(t.TempDir(), "again")
	code, _, stderr = inProcess("convert", filepath.Join(job, "chk-2"), "--out", again)
	if code != cli.ExitBadInput || !strings.Contains(stderr, "shared/"+gone) {
		t.Errorf("a shared file missing: exit %d, want 4 naming shared/%s: %s", code, gone, stderr)
	}
	nothingWritten(t, again)
}

// convert reads a native savepoint from a bucket and writes its canonical
// form into one, the same bytes as on disk, published with _metadata last;
// a rescale of the native savepoint in the bucket converts it through a
// local temporary directory.
func TestFlinkConvertBucketToBucket(t *testing.T) {
	src := filepath.Join(flinkRoot(t), "flink-tests/src/test/resources/new-stateful-udf-migration-itcase-flink1.20-rocksdb-savepoint-native")
	f := newBucketFixture(t)
	f.upload(t, src, "in/native")
	local := filepath.Join(f.dir, "converted")
	if _, stderr, code := runCLI(t, "convert", src, "--out", local); code != 0 {
		t.Fatalf("convert on disk: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "convert", f.url("in/native"), "--out", f.url("out/converted")); code != 0 {
		t.Fatalf("convert bucket to bucket: exit %d: %s", code, stderr)
	}
	want, got := localFiles(t, local), f.objects(t, "out/converted")
	if len(got) != len(want) {
		t.Fatalf("the bucket holds %d files, the disk %d", len(got), len(want))
	}
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			t.Errorf("%s differs between the bucket and the disk", name)
		}
	}
	if _, stderr, code := runCLI(t, "convert", f.url("in/native"), "--out", f.url("out/converted")); code != cli.ExitUsage || !strings.Contains(stderr, "--force") {
		t.Errorf("convert into an existing bucket target: exit %d: %s", code, stderr)
	}
	if stdout, stderr, code := runCLI(t, "verify", "--deep", "-o", "json", f.url("out/converted")); code != 0 || !strings.Contains(stdout, "canonical") || strings.Contains(stdout, "native RocksDB") {
		t.Errorf("verify of the converted savepoint in the bucket: exit %d: %s%s", code, stdout, stderr)
	}
	if _, stderr, code := runCLI(t, "rescale", f.url("in/native"), "--max-parallelism", "256", "--out", f.url("out/rescaled")); code != 0 {
		t.Errorf("rescale of the native savepoint bucket to bucket: exit %d: %s", code, stderr)
	}
	if stdout, stderr, code := runCLI(t, "dump", f.url("out/rescaled"), "--operator", "d5c8b168c6cbfe8c507a10f88b325243", "--state", "state-name", "--key", "[3]"); code != 0 || !strings.Contains(stdout, `"value":3`) {
		t.Errorf("dump of the rescaled savepoint: exit %d: %s%s", code, stdout, stderr)
	}
}

// A command given the input savepoint by its _metadata writes nothing into
// the savepoint's directory, as when given the directory: a rewrite with
// --force into one of its files used to replace the file.
func TestNoWriteInsideTheInputNamedByItsMetadata(t *testing.T) {
	in := filepath.Join(t.TempDir(), "sp")
	copyDir(t, filepath.Join("..", "testdata", "savepoints", "v2", "gateway-p2-pebble"), in)
	entries, err := os.ReadDir(in)
	if err != nil {
		t.Fatal(err)
	}
	var data string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".data") {
			data = e.Name()
		}
	}
	meta := filepath.Join(in, "_metadata")
	for _, args := range [][]string{
		{"prune-ttl", meta, "--out", filepath.Join(in, data), "--force"},
		{"rescale", meta, "--max-parallelism", "64", "--out", filepath.Join(in, "sub")},
		{"operator", "rename", meta, "assemble", "a2", "--out", filepath.Join(in, "sub")},
		{"export", meta, "--out", filepath.Join(in, "sub")},
		{"report", meta, "--out", filepath.Join(in, "r.html")},
	} {
		if _, stderr, code := runCLI(t, args...); code != cli.ExitUsage || !strings.Contains(stderr, "inside") {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
	after, err := os.ReadDir(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(entries) {
		t.Fatalf("the input holds %d files, had %d", len(after), len(entries))
	}
	if _, stderr, code := runCLI(t, "verify", in); code != cli.ExitOK {
		t.Fatalf("verify of the input after: exit %d: %s", code, stderr)
	}
}

// What a killed rescale left in its --spill-dir is removed by the next run
// into the same target, and what a run into another target left is not.
func TestRescaleRemovesKilledRunsSpillDirectories(t *testing.T) {
	dir := t.TempDir()
	spill, out := filepath.Join(dir, "spill"), filepath.Join(dir, "out")
	sum := sha256.Sum256([]byte(out))
	mine := filepath.Join(spill, storage.TempPrefix+"out-"+hex.EncodeToString(sum[:4])+"-123")
	others := filepath.Join(spill, storage.TempPrefix+"out-00000000-456")
	for _, d := range []string{mine, others} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "w00-007"), []byte("spilled"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in := filepath.Join("..", "testdata", "savepoints", "v2", "gateway-p2-pebble")
	if _, stderr, code := runCLI(t, "rescale", in, "--max-parallelism", "720", "--spill-dir", spill, "--out", out); code != cli.ExitOK {
		t.Fatalf("rescale: exit %d: %s", code, stderr)
	}
	left, err := os.ReadDir(spill)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Name() != filepath.Base(others) {
		names := []string{}
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Fatalf("the spill directory holds %v; want only another target's %s", names, filepath.Base(others))
	}
}
