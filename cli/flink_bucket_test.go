package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/cli"
)

// rocksdbCheckpoint is Flink's own incremental RocksDB checkpoint of the
// stateful UDF migration test (Flink 1.20): eight operators, their state
// in SST files that the _metadata names.
func rocksdbCheckpoint(t *testing.T) string {
	return filepath.Join(flinkRoot(t), "flink-tests/src/test/resources/new-stateful-udf-migration-itcase-flink1.20-rocksdb-checkpoint")
}

// A retained incremental checkpoint as Flink's checkpoint storage leaves it
// in S3: the job's prefix holds chk-2/_metadata, whose handles name every
// table and manifest by its absolute s3:// path under the job's shared/,
// and chk-3/, a checkpoint still being written, which has no _metadata
// yet. The commands read it through chk-2 or through the job's prefix
// (its newest checkpoint) and find the state they find in the fixture,
// whose files lie beside its _metadata. A table is read through a window
// (storage.Windowed), here one request for each, not one per block and
// index, and opened by the read of its tail, without a HEAD. chk-2 copied away from shared/ finds nothing and exits 4.
func TestFlinkCheckpointInABucket(t *testing.T) {
	src := rocksdbCheckpoint(t)
	f := newBucketFixture(t)
	meta, names := absolutePaths(t, src, "s3://flink-prod/checkpoints/3b5f07e1/shared")
	f.upload(t, meta, "job/chk-2")
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFiles(t, src, shared, names)
	f.upload(t, shared, "job/shared")
	unfinished := filepath.Join(t.TempDir(), "chk-3")
	if err := os.Mkdir(unfinished, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFiles(t, src, unfinished, names[:1])
	f.upload(t, unfinished, "job/chk-3")
	f.upload(t, meta, "alone/chk-2")

	wantVerify, stderr, code := runCLI(t, "verify", "--deep", "-o", "json", src)
	if code != cli.ExitOK || !strings.Contains(wantVerify, `"entries": 32,`) {
		t.Fatalf("verify of the fixture: exit %d: %s%s", code, wantVerify, stderr)
	}
	dump := []string{"--operator", "d5c8b168c6cbfe8c507a10f88b325243", "--state", "state-name"}
	wantDump, stderr, code := runCLI(t, append([]string{"dump", src}, dump...)...)
	if code != cli.ExitOK || strings.Count(wantDump, "\n") != 4 {
		t.Fatalf("dump of the fixture: exit %d: %s%s", code, wantDump, stderr)
	}
	for _, prefix := range []string{"job/chk-2", "job"} {
		url := f.url(prefix)
		gets, heads := f.proxy.Ops("GetObject"), f.proxy.Ops("HeadObject")
		got, stderr, code := runCLI(t, "verify", "--deep", "-o", "json", url)
		gets, heads = f.proxy.Ops("GetObject")-gets, f.proxy.Ops("HeadObject")-heads
		got = strings.ReplaceAll(got, "s3://state/"+prefix, src)
		if code != cli.ExitOK || got != wantVerify {
			t.Errorf("verify %s: exit %d: %s%s\nwant\n%s", prefix, code, got, stderr, wantVerify)
		}
		// _metadata (twice, for its head and for the reader, and once
		// more through the job's prefix, which looks for its newest
		// checkpoint), and each file it names at most once: the tables
		// are smaller than their window, and CURRENT and MANIFEST are
		// checked once per handle.
		if gets > len(names)+3 {
			t.Errorf("verify %s: %d GetObject requests for %d files", prefix, gets, len(names))
		}
		// A file is opened by its first read, a table's by the read of
		// its tail: the HEADs are the looks for _metadata files and
		// incremental manifests, not one per file named.
		if heads > 8 {
			t.Errorf("verify %s: %d HeadObject requests for %d files", prefix, heads, len(names))
		}
		t.Logf("verify %s: %d GetObject and %d HeadObject requests, %d files", prefix, gets, heads, len(names))
		if got, stderr, code := runCLI(t, append([]string{"dump", url}, dump...)...); code != cli.ExitOK || got != wantDump {
			t.Errorf("dump %s: exit %d: %s%s\nwant\n%s", prefix, code, got, stderr, wantDump)
		}
	}
	_, stderr, code = runCLI(t, "verify", "--deep", f.url("alone/chk-2"))
	if code != cli.ExitBadInput || !strings.Contains(stderr, "lies in the job's checkpoint directory, outside s3://state/alone/chk-2") {
		t.Errorf("chk-2 without the job's shared/: exit %d: %s", code, stderr)
	}
}

// --path-map sends the absolute paths of a Flink _metadata to a prefix in a
// bucket, from a savepoint on disk or in a bucket; a path that climbs out
// of the mapped one with ".." is refused, not followed.
func TestFlinkPathMapToABucket(t *testing.T) {
	src := filepath.Join(flinkRoot(t), "flink-tests/src/test/resources/new-stateful-broadcast-udf-migration-itcase-flink1.15-hashmap-savepoint")
	f := newBucketFixture(t)
	const old = "/flink/savepoints/savepoint-4711"
	dir, names := absolutePaths(t, src, old)
	moved := t.TempDir()
	copyFiles(t, src, moved, names)
	f.upload(t, moved, "moved")
	f.upload(t, dir, "meta")
	dump := []string{"--operator", "12d7d939fd56473cac7cff0603179a41", "--state", "broadcast-state-1"}
	for _, sp := range []string{dir, f.url("meta")} {
		got, stderr, code := runCLI(t, append([]string{"--path-map", old + "=" + f.url("moved"), "dump", sp}, dump...)...)
		if code != cli.ExitOK || strings.Count(got, "\n") != 4 {
			t.Errorf("dump %s through --path-map to the bucket: exit %d: %s%s", sp, code, got, stderr)
		}
		if _, stderr, code := runCLI(t, "--path-map", old+"="+f.url("moved"), "verify", "--deep", sp); code != cli.ExitOK {
			t.Errorf("verify %s through --path-map to the bucket: exit %d: %s", sp, code, stderr)
		}
	}
	// Recorded under old/../elsewhere: below old by its prefix, outside it
	// by its path.
	climbing, _ := absolutePaths(t, src, old+"/../elsewhere")
	copyFiles(t, src, filepath.Join(moved), names)
	for _, to := range []string{f.url("moved"), moved} {
		_, stderr, code := runCLI(t, "--path-map", old+"="+to, "verify", "--deep", climbing)
		if code != cli.ExitBadInput || !strings.Contains(stderr, "is no name inside it") {
			t.Errorf("a path climbing out of the mapped %s: exit %d: %s", to, code, stderr)
		}
	}
	if _, stderr, code := runCLI(t, "--path-map", old+"=s3://", "inspect", dir); code != cli.ExitUsage || !strings.Contains(stderr, "names no bucket") {
		t.Errorf("--path-map to a URL without a bucket: exit %d: %s", code, stderr)
	}
}
