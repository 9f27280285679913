package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/cli"
	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/internal/sptest"
)

// Shards run into a bucket and committed there give what they give on
// disk: prune-ttl the single run's savepoint, byte for byte; export the
// files of the same shards committed on disk, each under its number and
// its content's digits, with _SUCCESS listing exactly them and the single
// run's rows. Once published, the parts are gone from the bucket, and a
// commit with a shard missing is refused and writes nothing.
func TestShardsCommittedInABucket(t *testing.T) {
	f := newBucketFixture(t)
	local, _ := filepath.Abs("../testdata/savepoints/v2/sessions-p2-heap")
	// Under its own name, which the lineage of a rewrite records.
	f.upload(t, local, "in/sessions-p2-heap")
	in := f.url("in/sessions-p2-heap")
	const n = 3
	// shardRuns runs the n shards of a command and returns the most HEAD
	// requests one of them made.
	shardRuns := func(args ...string) (heads int) {
		t.Helper()
		for i := range n {
			before := f.proxy.Ops("HeadObject")
			if _, stderr, code := runCLI(t, append(args, "--shard", fmt.Sprintf("%d/%d", i, n))...); code != 0 {
				t.Fatalf("%s --shard %d/%d: exit %d: %s", args[0], i, n, code, stderr)
			}
			heads = max(heads, f.proxy.Ops("HeadObject")-before)
		}
		return heads
	}
	partsLeft := func(prefix string) {
		t.Helper()
		for i := range n {
			if left := f.objects(t, fmt.Sprintf("%s.shard-%05d-of-%05d", prefix, i, n)); len(left) != 0 {
				t.Errorf("%d objects of part %d of %s left after the commit: %v", len(left), i, prefix, slices.Sorted(maps.Keys(left)))
			}
		}
	}

	single := filepath.Join(f.dir, "pruned")
	if _, stderr, code := runCLI(t, "prune-ttl", local, "--out", single, "--ttl", "session-features/category-counts=48h"); code != 0 {
		t.Fatalf("prune-ttl: exit %d: %s", code, stderr)
	}
	// A shard looks for a savepoint where it writes, its part, as a single
	// run does at its --out, and nowhere else.
	before := f.proxy.Ops("HeadObject")
	if _, stderr, code := runCLI(t, "prune-ttl", in, "--out", f.url("pruned-once"), "--ttl", "session-features/category-counts=48h"); code != 0 {
		t.Fatalf("prune-ttl into the bucket: exit %d: %s", code, stderr)
	}
	singleHeads := f.proxy.Ops("HeadObject") - before
	if heads := shardRuns("prune-ttl", in, "--out", f.url("pruned"), "--ttl", "session-features/category-counts=48h"); heads != singleHeads {
		t.Errorf("a shard of prune-ttl made %d HEAD requests, a single run %d", heads, singleHeads)
	}
	if _, stderr, code := runCLI(t, "commit", "--out", f.url("pruned"), "--shards", fmt.Sprint(n)); code != 0 {
		t.Fatalf("commit: exit %d: %s", code, stderr)
	}
	want, got := localFiles(t, single), f.objects(t, "pruned")
	if len(want) < 3 || !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
		t.Fatalf("the bucket holds %v, the single run wrote %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			t.Errorf("prune-ttl: %s differs between the committed shards and the single run", name)

		}
	}
	partsLeft("pruned")

	onDisk := filepath.Join(f.dir, "exported")
	for i := range n {
		if _, stderr, code := runCLI(t, "export", local, "--out", onDisk, "--now", "2026-01-06T00:00:00Z", "--shard", fmt.Sprintf("%d/%d", i, n)); code != 0 {
			t.Fatalf("export --shard %d/%d to disk: exit %d: %s", i, n, code, stderr)
		}
	}
	if _, stderr, code := runCLI(t, "commit", "--export", "--out", onDisk, "--shards", fmt.Sprint(n)); code != 0 {
		t.Fatalf("commit --export on disk: exit %d: %s", code, stderr)
	}
	stdout, stderr, code := runCLI(t, "export", local, "--out", filepath.Join(f.dir, "exported-once"), "--now", "2026-01-06T00:00:00Z", "-o", "json")
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	var once export.Summary
	if err := json.Unmarshal([]byte(stdout), &once); err != nil {
		t.Fatalf("export -o json: %v: %s", err, stdout)
	}
	shardRuns("export", in, "--out", f.url("exported"), "--now", "2026-01-06T00:00:00Z")
	if _, stderr, code := runCLI(t, "commit", "--export", "--out", f.url("exported"), "--shards", fmt.Sprint(n)); code != 0 {
		t.Fatalf("commit --export in the bucket: exit %d: %s", code, stderr)
	}
	objs := f.objects(t, "exported")
	var marker export.MarkerContent
	if err := json.Unmarshal(objs[export.Marker], &marker); err != nil {
		t.Fatalf("%s: %v", export.Marker, err)
	}
	files := walkFiles(t, onDisk)
	if len(files) < 4 || len(marker.Files) != len(files) || len(objs) != len(files)+1 {
		t.Fatalf("%d files committed on disk, %d listed in %s, %d objects in the bucket", len(files), len(marker.Files), export.Marker, len(objs))
	}
	listed := map[string]int64{}
	for _, mf := range marker.Files {
		listed[mf.Name] = mf.Bytes
	}
	if bad := sptest.NotByContent(files, objs, listed); len(bad) > 0 {
		t.Errorf("files committed on disk not in the bucket under their content names, listed and with the same bytes: %v", bad)
	}
	if marker.Summary == nil || marker.Summary.Rows != once.Rows || once.Rows < 15773 || len(marker.Summary.Datasets) != len(once.Datasets) {
		t.Errorf("the committed summary %+v, want the single run's rows and datasets %+v", marker.Summary, once)
	}
	partsLeft("exported")

	// Shard 1 never ran: nothing is written.
	for _, i := range []int{0, 2} {
		if _, stderr, code := runCLI(t, "export", in, "--out", f.url("partial"), "--shard", fmt.Sprintf("%d/%d", i, n)); code != 0 {
			t.Fatalf("export --shard %d/%d: exit %d: %s", i, n, code, stderr)
		}
	}
	if _, stderr, code := runCLI(t, "commit", "--export", "--out", f.url("partial"), "--shards", fmt.Sprint(n)); code != cli.ExitUsage || !strings.Contains(stderr, "shard 1 of 3") {
		t.Errorf("commit with shard 1 missing: exit %d, %q; want %d naming shard 1", code, stderr, cli.ExitUsage)
	}
	if left := f.objects(t, "partial"); len(left) != 0 {
		t.Errorf("the refused commit wrote %v", slices.Sorted(maps.Keys(left)))
	}
}
