package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stateproc/stateproc/cli"
	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/internal/flinkgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// bucketFixture is the demo savepoint on disk and, the same bytes, in a
// bucket of a versitygw started for the test, reached through a proxy
// that counts requests.
type bucketFixture struct {
	srv   *storetest.Server
	proxy *storetest.Proxy
	dir   string // holds the local savepoint "sp" and the job manifest
	sp    string
	job   string
}

func newBucketFixture(t *testing.T) *bucketFixture {
	t.Helper()
	srv := storetest.StartWithBucket(t, "state")
	f := &bucketFixture{srv: srv, proxy: storetest.NewProxy(t, srv.Endpoint()), dir: t.TempDir()}
	f.sp = filepath.Join(f.dir, "sp")
	if err := sptest.Write(f.sp, demoMeta(), demoEntries(), snapshotfmt.Options{}); err != nil {
		t.Fatal(err)
	}
	f.job = filepath.Join(f.dir, "job.json")
	var manifest bytes.Buffer
	if err := savepoint.NewManifest("demo", demoMeta().Operators).Write(&manifest); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.job, manifest.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f.upload(t, f.sp, "in/sp")
	return f
}

// url is the s3:// location of prefix in the test's bucket, through the
// proxy.
func (f *bucketFixture) url(prefix string) string {
	return storetest.URL(f.proxy.URL, "state", prefix)
}

// upload puts the files of a local directory under prefix, behind the
// commands' back.
func (f *bucketFixture) upload(t *testing.T, dir, prefix string) {
	t.Helper()
	f.srv.Upload(t, dir, "state", prefix)
}

// objects returns the objects under prefix by name, with their bytes.
func (f *bucketFixture) objects(t *testing.T, prefix string) map[string][]byte {
	t.Helper()
	return f.srv.Objects(t, "state", prefix)
}

// localFiles returns the files of a local directory by name, with their
// bytes.
func localFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = cli.Main(context.Background(), args, &o, &e)
	return o.String(), e.String(), code
}

// Every command that reads a savepoint gives the same output for the
// savepoint in a bucket as for the same bytes on disk, and inspect without
// --scan reads _metadata alone.
// bytesRead is the field that inspect's JSON adds for a savepoint in a
// bucket, with the comma before it.
var bytesRead = regexp.MustCompile(`,\n\s*"bytes_read": [0-9]+`)

func TestEveryReadingCommandOnABucket(t *testing.T) {
	f := newBucketFixture(t)
	in := f.url("in/sp")
	st, err := os.Stat(filepath.Join(f.sp, snapshotfmt.MetadataName))
	if err != nil {
		t.Fatal(err)
	}
	metaSize := st.Size()
	cases := [][]string{
		{"inspect", "-o", "json", "SP"},
		{"inspect", "--scan", "--top", "2", "-o", "json", "SP"},
		{"verify", "--deep", "-o", "json", "SP"},
		{"dump", "SP", "--operator", "features", "--state", "category-counts"},
		{"dump", "SP", "--operator", "features", "--state", "events", "--key", "7"},
		{"dump", "SP", "--operator", "source", "--state", "rules"},
		{"size", "-o", "json", "SP"},
		{"check", "SP", "--job", f.job, "-o", "json"},
	}
	for _, c := range cases {
		with := func(sp string) []string {
			args := slices.Clone(c)
			args[slices.Index(args, "SP")] = sp
			return args
		}
		local, stderr, code := runCLI(t, with(f.sp)...)
		if code != 0 {
			t.Fatalf("%v on disk: exit %d: %s", c, code, stderr)
		}
		before, served := f.proxy.Ops("GetObject"), f.proxy.ServedBytes()
		remote, stderr, code := runCLI(t, with(in)...)
		if code != 0 {
			t.Fatalf("%v in the bucket: exit %d: %s", c, code, stderr)
		}
		gets, served := f.proxy.Ops("GetObject")-before, f.proxy.ServedBytes()-served
		// Outputs name their input: the bucket's shows its location.
		remote = strings.ReplaceAll(remote, "s3://state/in/sp", f.sp)
		// Only a bucket's inspect says how many bytes it read.
		remote = bytesRead.ReplaceAllString(remote, "")
		if remote != local {
			t.Errorf("%v: the bucket's output differs from the disk's:\n%s\nwant\n%s", c, remote, local)
		}
		// _metadata is read whole, once, for both the head that tells the
		// layout and the layout's reader, and nothing else.
		if c[0] == "inspect" && !slices.Contains(c, "--scan") && (gets != 1 || served != metaSize) {
			t.Errorf("inspect without --scan made %d GetObject requests for %d bytes, want 1 for %d (_metadata)", gets, served, metaSize)
		}
		t.Logf("%v: %d GetObject, %d bytes", c, gets, served)
	}
}

// export reads a savepoint in a bucket into a local directory, the same
// datasets as from disk.
func TestExportFromABucket(t *testing.T) {
	f := newBucketFixture(t)
	local, remote := filepath.Join(f.dir, "export-disk"), filepath.Join(f.dir, "export-bucket")
	for _, c := range [][]string{{"export", f.sp, "--out", local}, {"export", f.url("in/sp"), "--out", remote}} {
		if _, stderr, code := runCLI(t, c...); code != 0 {
			t.Fatalf("%v: exit %d: %s", c[:2], code, stderr)
		}
	}
	want, got := walkFiles(t, local), walkFiles(t, remote)
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("export from the bucket wrote %d files, from disk %d", len(got), len(want))
	}
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			t.Errorf("%s differs between the exports from the bucket and from disk", name)
		}
	}
}

// walkFiles returns every file under dir by its relative name.
func walkFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every command that writes a savepoint writes, bucket to bucket, the very
// bytes it writes on disk, under the same content-derived names; a second
// run into the same target is refused (exit 2) and --force replaces it.
func TestEveryWritingCommandBucketToBucket(t *testing.T) {
	f := newBucketFixture(t)
	in := f.url("in/sp")
	cases := []struct {
		name string
		args []string
	}{
		{"rescale", []string{"rescale", "SP", "--max-parallelism", "256", "--out", "OUT"}},
		{"prune-ttl", []string{"prune-ttl", "SP", "--out", "OUT"}},
		{"remove", []string{"operator", "remove", "SP", "accounts", "--out", "OUT"}},
		{"rename", []string{"operator", "rename", "SP", "accounts", "ledger", "--out", "OUT"}},
		{"migrate", []string{"migrate", "SP", "--job", f.job, "--out", "OUT"}},
	}
	for _, c := range cases {
		with := func(sp, out string) []string {
			args := slices.Clone(c.args)
			args[slices.Index(args, "SP")] = sp
			args[slices.Index(args, "OUT")] = out
			return args
		}
		localOut := filepath.Join(f.dir, c.name)
		if _, stderr, code := runCLI(t, with(f.sp, localOut)...); code != 0 {
			t.Fatalf("%s on disk: exit %d: %s", c.name, code, stderr)
		}
		prefix := "out/" + c.name
		if _, stderr, code := runCLI(t, with(in, f.url(prefix))...); code != 0 {
			t.Fatalf("%s bucket to bucket: exit %d: %s", c.name, code, stderr)
		}
		want, got := localFiles(t, localOut), f.objects(t, prefix)
		if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
			t.Fatalf("%s: the bucket holds %v, the disk %v", c.name, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
		for name, b := range want {
			if !bytes.Equal(got[name], b) {
				t.Errorf("%s: %s differs between the bucket and the disk", c.name, name)
			}
		}
		if _, stderr, code := runCLI(t, with(in, f.url(prefix))...); code != cli.ExitUsage || !strings.Contains(stderr, "--force") {
			t.Errorf("%s into an existing bucket target: exit %d, %q; want %d and a hint at --force", c.name, code, stderr, cli.ExitUsage)
		}
		if _, stderr, code := runCLI(t, append(with(in, f.url(prefix)), "--force")...); code != 0 {
			t.Errorf("%s --force into the bucket: exit %d: %s", c.name, code, stderr)
		}
		if _, stderr, code := runCLI(t, "verify", "--deep", f.url(prefix)); code != 0 {
			t.Errorf("verify of %s's output in the bucket: exit %d: %s", c.name, code, stderr)
		}
	}
	// Bucket to disk and disk to bucket write the same bytes too.
	if _, stderr, code := runCLI(t, "prune-ttl", in, "--out", filepath.Join(f.dir, "pruned-down")); code != 0 {
		t.Fatalf("prune-ttl bucket to disk: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "prune-ttl", f.sp, "--out", f.url("out/pruned-up")); code != 0 {
		t.Fatalf("prune-ttl disk to bucket: exit %d: %s", code, stderr)
	}
	want := localFiles(t, filepath.Join(f.dir, "prune-ttl"))
	for what, got := range map[string]map[string][]byte{
		"bucket to disk": localFiles(t, filepath.Join(f.dir, "pruned-down")),
		"disk to bucket": f.objects(t, "out/pruned-up"),
	} {
		if len(got) != len(want) {
			t.Errorf("prune-ttl %s wrote %d files, want %d", what, len(got), len(want))
		}
		for name, b := range want {
			if !bytes.Equal(got[name], b) {
				t.Errorf("prune-ttl %s: %s differs", what, name)
			}
		}
	}
}

// The refusals of a bucket location are the disk's: the input itself as a
// target, a target inside the input, a missing savepoint (exit 4), export
// into a bucket.
func TestBucketLocationsRefused(t *testing.T) {
	f := newBucketFixture(t)
	in := f.url("in/sp")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"prune-ttl", in, "--out", in}, cli.ExitUsage, "is the input savepoint"},
		{[]string{"prune-ttl", in, "--out", f.url("in/sp/x")}, cli.ExitUsage, "inside the input"},
		{[]string{"prune-ttl", in, "--out", f.url("in")}, cli.ExitUsage, "contains the input"},
		{[]string{"prune-ttl", f.url("in/sp/_metadata"), "--out", f.url("in/sp/x")}, cli.ExitUsage, "inside the input"},
		{[]string{"export", f.url("in/sp/_metadata"), "--out", f.url("in/sp/parquet")}, cli.ExitUsage, "inside the input"},
		{[]string{"inspect", f.url("in/none")}, 4, "has no _metadata"},
		{[]string{"export", in, "--out", f.url("in/sp/parquet")}, cli.ExitUsage, "inside the input"},
		{[]string{"inspect", "ftp://host/x"}, cli.ExitUsage, "unsupported scheme"},
		{[]string{"report", in, "--out", f.url("reports/r.html")}, cli.ExitUsage, "report writes a local file"},
	} {
		_, stderr, code := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, stderr, c.code, c.msg)
		}
		if strings.Contains(stderr, "endpoint=") {
			t.Errorf("%v: the message shows the URL's parameters: %q", c.args, stderr)
		}
	}
}

// Plain inspect of a bucket-resident savepoint reads _metadata alone and
// still gives value sizes and TTL ages, from the index's histograms.
func TestInspectOfBucketReadsOnlyMetadata(t *testing.T) {
	f := newBucketFixture(t)
	meta, err := os.ReadFile(filepath.Join(f.sp, savepoint.MetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "inspect", "-o", "json", f.url("in/sp"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		BytesRead *int64 `json:"bytes_read"`
		States    []struct {
			Name      string          `json:"name"`
			Entries   uint64          `json:"entries"`
			IndexSize json.RawMessage `json:"index_value_size"`
			IndexAges *struct {
				Expired struct{ Min, Max uint64 } `json:"expired"`
			} `json:"index_ttl_ages"`
			TTL *struct{} `json:"ttl"`
		} `json:"states"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	// _metadata once.
	if rep.BytesRead == nil || *rep.BytesRead != int64(len(meta)) {
		t.Fatalf("read %s bytes, want %d: _metadata alone", out, len(meta))
	}
	withTTL := 0
	for _, st := range rep.States {
		if st.Entries > 0 && len(st.IndexSize) == 0 {
			t.Errorf("state %s: no value sizes from the index", st.Name)
		}
		if st.TTL != nil && st.Entries > 0 {
			withTTL++
			if st.IndexAges == nil || st.IndexAges.Expired.Min != st.IndexAges.Expired.Max {
				t.Errorf("state %s: the expired count at the creation time is not exact: %+v", st.Name, st.IndexAges)
			}
		}
	}
	if withTTL == 0 {
		t.Fatal("no TTL state to check")
	}
}

// A rewrite into a bucket of the input's store has the store copy the data
// files it keeps whole without reading them, and reads and checks them
// with --check-copies; both write the bytes written on disk, and look for
// a savepoint at the target once.
func TestBucketRewriteCopiesUnread(t *testing.T) {
	f := newBucketFixture(t)
	meta, err := os.ReadFile(filepath.Join(f.sp, savepoint.MetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	var data, files int64
	for name, b := range localFiles(t, f.sp) {
		if name != savepoint.MetadataFile {
			data, files = data+int64(len(b)), files+1
		}
	}
	localOut := filepath.Join(f.dir, "renamed")
	if _, stderr, code := runCLI(t, "operator", "rename", f.sp, "accounts", "ledger", "--out", localOut); code != 0 {
		t.Fatalf("rename on disk: exit %d: %s", code, stderr)
	}
	want := localFiles(t, localOut)
	for _, c := range []struct {
		prefix string
		flags  []string
		// read reports whether the bytes served are right.
		read func(n int64) bool
		says string
	}{
		{"out/unread", nil, func(n int64) bool { return n == int64(len(meta))+12*files }, "_metadata, and the 12-byte head of each data file"},
		{"out/checked", []string{"--check-copies"}, func(n int64) bool { return n >= int64(len(meta))+data }, "_metadata and every data file"},
	} {
		served, heads := f.proxy.ServedBytes(), f.proxy.Ops("HeadObject")
		args := append([]string{"operator", "rename", f.url("in/sp"), "accounts", "ledger", "--out", f.url(c.prefix)}, c.flags...)
		if _, stderr, code := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		// The input's incremental manifest is looked for, the target's
		// _metadata and an export's _SUCCESS once each, by the open that
		// writes it, and the lease of a removal of orphans once, before
		// the publish.
		if n := f.proxy.Ops("HeadObject") - heads; n != 4 {
			t.Errorf("%v: %d HEAD requests, want 4", args, n)
		}
		if n := f.proxy.ServedBytes() - served; !c.read(n) {
			t.Errorf("%v read %d bytes, want %s (%d and %d bytes)", args, n, c.says, len(meta), data)
		}
		got := f.objects(t, c.prefix)
		if !maps.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("%v: the bucket holds %v, the disk %v, or other bytes", args, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
	}
}

// inspect --scan and verify --deep of an Apache Flink savepoint in a
// bucket read every byte of it once, in the read that counts its segments
// (Flink keeps no index), and in a few requests: a file is opened once,
// and the bytes of the next key groups come with each read rather than a
// request per key group. What they report is what they report on disk.
func TestBucketFlinkScanAndVerifyReadEachByteOnce(t *testing.T) {
	f := newBucketFixture(t)
	c := flinkgen.SessionsLarge()
	c.Users = 300
	src := filepath.Join(f.dir, "flink")
	if _, err := flinkgen.WriteDir(context.Background(), src, false, c); err != nil {
		t.Fatal(err)
	}
	f.upload(t, src, "in/flink")
	var total int64
	files := 0
	for _, b := range localFiles(t, src) {
		total += int64(len(b))
		files++
	}
	for _, cmd := range [][]string{{"inspect", "--scan"}, {"verify", "--deep"}} {
		local, stderr, code := runCLI(t, append(cmd, "-o", "json", src)...)
		if code != 0 {
			t.Fatalf("%v on disk: exit %d: %s", cmd, code, stderr)
		}
		gets, heads, served := f.proxy.Ops("GetObject"), f.proxy.Ops("HeadObject"), f.proxy.ServedBytes()
		remote, stderr, code := runCLI(t, append(cmd, "-o", "json", f.url("in/flink"))...)
		if code != 0 {
			t.Fatalf("%v in the bucket: exit %d: %s", cmd, code, stderr)
		}
		gets, heads, served = f.proxy.Ops("GetObject")-gets, f.proxy.Ops("HeadObject")-heads, f.proxy.ServedBytes()-served
		remote = strings.ReplaceAll(bytesRead.ReplaceAllString(remote, ""), "s3://state/in/flink", src)
		if remote != local {
			t.Errorf("%v: the bucket's output differs from the disk's:\n%s\nwant\n%s", cmd, remote, local)
		}
		if served != total {
			t.Errorf("%v read %d bytes of a savepoint of %d", cmd, served, total)
		}
		// Each data file opened once, the manifest looked for; a GET per
		// range of key groups that a worker counts, or two where it spans
		// two files: fewer than the key groups on any number of cores.
		if heads > files+1 || gets >= c.MaxParallelism {
			t.Errorf("%v made %d HEADs and %d GETs for %d files of %d key groups", cmd, heads, gets, files, c.MaxParallelism)
		}
		t.Logf("%v: %d files, %d bytes: %d HEADs, %d GETs", cmd, files, total, heads, gets)
	}
}

// A rewrite of an Apache Flink savepoint in a bucket has the store copy
// the files it keeps as they are: operator rename bucket to bucket reads
// _metadata and the heads of the keyed state files (their state meta
// information, for the reader), and writes the bytes that a rename on disk
// writes.
func TestBucketFlinkRewriteCopiesOnTheServer(t *testing.T) {
	f := newBucketFixture(t)
	ctx := context.Background()
	c := flinkgen.SessionsLarge()
	c.Users = 300
	src := filepath.Join(f.dir, "flink")
	if _, err := flinkgen.WriteDir(ctx, src, false, c); err != nil {
		t.Fatal(err)
	}
	f.upload(t, src, "in/flink")
	in := localFiles(t, src)
	var data int64
	for name, b := range in {
		if name != flinkfmt.MetadataFile {
			data += int64(len(b))
		}
	}
	localOut := filepath.Join(f.dir, "flink-renamed")
	if _, stderr, code := runCLI(t, "operator", "rename", src, flinkgen.OperatorUID, "renamed", "--out", localOut); code != 0 {
		t.Fatalf("rename on disk: exit %d: %s", code, stderr)
	}
	served := f.proxy.ServedBytes()
	if _, stderr, code := runCLI(t, "operator", "rename", f.url("in/flink"), flinkgen.OperatorUID, "renamed", "--out", f.url("out/flink-renamed")); code != 0 {
		t.Fatalf("rename bucket to bucket: exit %d: %s", code, stderr)
	}
	if n, meta := f.proxy.ServedBytes()-served, int64(len(in[flinkfmt.MetadataFile])); n-meta > data/10 {
		t.Errorf("the rename read %d bytes: _metadata's %d and %d of the %d of the files it copies", n, meta, n-meta, data)
	}
	want, got := localFiles(t, localOut), f.objects(t, "out/flink-renamed")
	if !maps.EqualFunc(got, want, bytes.Equal) {
		t.Errorf("the bucket holds %v, the disk %v, or other bytes", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
}

// dump of a state in a bucket reads its segments ahead: after _metadata
// and the head of the data file, the requests for its segments are in
// flight together, where a dump that
// read one segment after another would make each wait for the last. The
// proxy holds the first three until all are in, and lets them on after a
// while when they come one at a time.
func TestDumpOfABucketReadsAhead(t *testing.T) {
	f := newBucketFixture(t)
	args := []string{"dump", f.url("in/sp"), "--operator", "features", "--state", "category-counts"}
	want, stderr, code := runCLI(t, append(args[:1:1], append([]string{f.sp}, args[2:]...)...)...)
	if code != cli.ExitOK {
		t.Fatalf("dump on disk: exit %d: %s", code, stderr)
	}
	gets := f.proxy.Ops("GetObject")
	f.proxy.Gather("GetObject", 1, time.Second)
	f.proxy.Gather("GetObject", 1, time.Second)
	segmentsTogether := f.proxy.Gather("GetObject", 3, 3*time.Second)
	got, stderr, code := runCLI(t, args...)
	if code != cli.ExitOK || got != want {
		t.Fatalf("dump in the bucket: exit %d: %s\n%s\nwant\n%s", code, stderr, got, want)
	}
	if !segmentsTogether() {
		t.Errorf("the first three segments were not read together")
	}
	t.Logf("%d GETs", f.proxy.Ops("GetObject")-gets)
}

// diff and report open their savepoints at once: in buckets, the GETs of
// their _metadata are in flight together (the proxy holds them until all
// are in, and lets them on after a while when they come one at a time). A
// savepoint that is missing fails the command with its own error.
func TestSavepointsOpenAtOnce(t *testing.T) {
	f := newBucketFixture(t)
	f.upload(t, f.sp, "in/other")
	together := f.proxy.Gather("GetObject", 2, 3*time.Second)
	out, stderr, code := runCLI(t, "diff", f.url("in/sp"), f.url("in/other"), "-o", "json")
	if code != cli.ExitOK || !strings.Contains(out, `"differ": false`) {
		t.Fatalf("diff: exit %d: %s%s", code, out, stderr)
	}
	if !together() {
		t.Errorf("diff opened its two savepoints one after the other")
	}
	_, stderr, code = runCLI(t, "diff", f.url("in/sp"), f.url("in/missing"))
	if code == cli.ExitOK || !strings.Contains(stderr, "in/missing") {
		t.Errorf("diff with a missing second savepoint: exit %d: %s", code, stderr)
	}
	html := filepath.Join(t.TempDir(), "report.html")
	together = f.proxy.Gather("GetObject", 3, 3*time.Second)
	if _, stderr, code := runCLI(t, "report", f.url("in/sp"), f.url("in/other"), f.url("in/sp"), "--out", html); code != cli.ExitOK {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	if !together() {
		t.Errorf("report opened its three savepoints one after another")
	}
	_, stderr, code = runCLI(t, "report", f.url("in/missing"), f.url("in/sp"), "--out", html, "--force")
	if code == cli.ExitOK || !strings.Contains(stderr, "in/missing") {
		t.Errorf("report with a missing first savepoint: exit %d: %s", code, stderr)
	}
}

// A rewrite into a bucket opens its target while it opens its input: the
// GET of the input's _metadata, the look for its incremental manifest and
// the look for a savepoint at the target are in flight together (the
// proxy holds them until all three are in, and lets them on after a while
// when they come apart). A target that holds a savepoint is refused as
// before, and an input that is missing is not held back by its target.
func TestRewriteOpensTargetWithInput(t *testing.T) {
	f := newBucketFixture(t)
	together := f.proxy.Gather("", 3, 3*time.Second)
	if _, stderr, code := runCLI(t, "operator", "rename", f.url("in/sp"), "accounts", "ledger", "--out", f.url("out/renamed")); code != cli.ExitOK {
		t.Fatalf("operator rename: exit %d: %s", code, stderr)
	}
	if !together() {
		t.Errorf("the target was opened after the input")
	}
	_, stderr, code := runCLI(t, "operator", "rename", f.url("in/sp"), "accounts", "ledger", "--out", f.url("out/renamed"))
	if code != cli.ExitUsage || !strings.Contains(stderr, "holds a savepoint") {
		t.Errorf("operator rename into a savepoint: exit %d: %s", code, stderr)
	}

	// An input that is missing is reported at once: the target's opening,
	// held by a store that takes a minute to answer, is stopped, not
	// waited for.
	slow := storetest.NewProxy(t, f.srv.Endpoint())
	slow.SetLatency(time.Minute)
	type result struct {
		stderr string
		code   int
	}
	done := make(chan result, 1)
	go func() {
		_, stderr, code := runCLI(t, "operator", "rename", f.url("in/missing"), "accounts", "ledger", "--out", storetest.URL(slow.URL, "state", "out/slow"))
		done <- result{stderr, code}
	}()
	select {
	case r := <-done:
		if r.code != cli.ExitBadInput || !strings.Contains(r.stderr, "in/missing") {
			t.Errorf("operator rename of a missing savepoint: exit %d: %s", r.code, r.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("operator rename of a missing savepoint waited for its target's store")
	}
}

// verify --remove-orphans removes nothing where a _metadata exists that
// does not read as a savepoint's (one damaged byte of its header), nor at
// an export, whose _SUCCESS is not an orphan: exit 4, every file kept.
// Nor does a plain verify call the files beside such a _metadata orphans.
func TestRemoveOrphansWhereNoSavepointReads(t *testing.T) {
	f := newBucketFixture(t)
	before := f.objects(t, "in/sp")
	meta := bytes.Clone(before["_metadata"])
	meta[0] ^= 0xff
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, savepoint.MetadataFile), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	f.upload(t, dir, "in/sp")
	// verify does not call the files beside that _metadata orphans.
	if _, stderr, code := runCLI(t, "verify", f.url("in/sp")); code != cli.ExitBadInput || strings.Contains(stderr, "orphan") {
		t.Errorf("verify of a savepoint whose _metadata does not read: exit %d: %s; want %d, calling nothing an orphan", code, stderr, cli.ExitBadInput)
	}
	if _, stderr, code := runCLI(t, "export", f.sp, "--out", f.url("exported")); code != cli.ExitOK {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	exported := f.objects(t, "exported")
	time.Sleep(1100 * time.Millisecond)
	for _, c := range []struct {
		prefix string
		want   map[string][]byte
		says   string
	}{{"in/sp", before, "does not read as a savepoint"}, {"exported", exported, "holds an export"}} {
		_, stderr, code := runCLI(t, "verify", "--remove-orphans", "--orphan-age", "1s", f.url(c.prefix))
		if code != cli.ExitBadInput || !strings.Contains(stderr, c.says) {
			t.Errorf("verify --remove-orphans of %s: exit %d: %s", c.prefix, code, stderr)
		}
		left := f.objects(t, c.prefix)
		for name := range c.want {
			if _, ok := left[name]; !ok {
				t.Errorf("%s/%s was removed", c.prefix, name)
			}
		}
	}
}

// A savepoint in a bucket may be named by its _metadata, as one on disk
// may: the commands read the savepoint around it.
func TestBucketSavepointNamedByItsMetadata(t *testing.T) {
	f := newBucketFixture(t)
	for _, args := range [][]string{{"inspect", "-o", "json"}, {"verify", "--deep", "-o", "json"}, {"size", "-o", "json"}} {
		want, stderr, code := runCLI(t, append(slices.Clone(args), f.url("in/sp"))...)
		if code != cli.ExitOK {
			t.Fatalf("%v of the prefix: exit %d: %s", args, code, stderr)
		}
		got, stderr, code := runCLI(t, append(slices.Clone(args), f.url("in/sp/"+storage.MetadataName))...)
		// The output names the savepoint as it was given, as on disk.
		got = strings.ReplaceAll(got, "s3://state/in/sp/"+storage.MetadataName, "s3://state/in/sp")
		if code != cli.ExitOK || got != want {
			t.Errorf("%v of its _metadata: exit %d: %s\n%s\nwant the prefix's\n%s", args, code, stderr, got, want)
		}
	}
	// A rewrite whose input is so named still may not write over it.
	if _, stderr, code := runCLI(t, "prune-ttl", f.url("in/sp/"+storage.MetadataName), "--out", f.url("in/sp"), "--force"); code != cli.ExitUsage {
		t.Errorf("prune-ttl of in/sp/_metadata into in/sp: exit %d, want %d: %s", code, cli.ExitUsage, stderr)
	}
}

// In a bucket, a prefix that holds one kind of finished output is a target
// that exists for the other kind too, as a directory is on disk: an export
// where a savepoint lies, and a savepoint where an export lies, are
// refused without --force and nothing is written; with it, the new output
// replaces the old whole, which leaves nothing of it behind.
func TestBucketTargetHoldingTheOtherKindOfOutput(t *testing.T) {
	f := newBucketFixture(t)
	if _, stderr, code := runCLI(t, "export", f.sp, "--out", f.url("exported")); code != cli.ExitOK {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	savepointThere, exportThere := f.objects(t, "in/sp"), f.objects(t, "exported")
	for _, c := range []struct {
		args   []string
		prefix string
		before map[string][]byte
		says   string
	}{
		{[]string{"export", f.sp, "--out", f.url("in/sp")}, "in/sp", savepointThere, "holds a savepoint"},
		{[]string{"operator", "rename", f.sp, "features", "renamed", "--out", f.url("exported")}, "exported", exportThere, "holds an export"},
		{[]string{"prune-ttl", f.sp, "--out", f.url("exported")}, "exported", exportThere, "holds an export"},
	} {
		_, stderr, code := runCLI(t, c.args...)
		if code != cli.ExitUsage || !strings.Contains(stderr, c.says) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args[:2], code, stderr, cli.ExitUsage, c.says)
		}
		f.sameFiles(t, fmt.Sprintf("%v", c.args[:2]), c.prefix, c.before)
	}

	// With --force, each replaces the other whole.
	if _, stderr, code := runCLI(t, "operator", "rename", f.sp, "features", "renamed", "--out", f.url("exported"), "--force"); code != cli.ExitOK {
		t.Fatalf("operator rename --force over the export: exit %d: %s", code, stderr)
	}
	local := filepath.Join(t.TempDir(), "renamed")
	if _, stderr, code := runCLI(t, "operator", "rename", f.sp, "features", "renamed", "--out", local); code != cli.ExitOK {
		t.Fatalf("operator rename on disk: exit %d: %s", code, stderr)
	}
	f.sameFiles(t, "the savepoint that replaced the export", "exported", localFiles(t, local))
	if _, stderr, code := runCLI(t, "export", f.sp, "--out", f.url("in/sp"), "--force"); code != cli.ExitOK {
		t.Fatalf("export --force over the savepoint: exit %d: %s", code, stderr)
	}
	got := f.objects(t, "in/sp")
	if _, ok := got[storage.SuccessName]; !ok {
		t.Errorf("no %s after the export replaced the savepoint", storage.SuccessName)
	}
	for name := range savepointThere {
		if _, ok := got[name]; ok {
			t.Errorf("%s of the replaced savepoint is left beside the export", name)
		}
	}
}

// verify --remove-orphans deletes nothing at a savepoint beside which an
// export's _SUCCESS lies: the files it does not name are the export's.
func TestRemoveOrphansBesideAnExport(t *testing.T) {
	f := newBucketFixture(t)
	if _, stderr, code := runCLI(t, "export", f.sp, "--out", f.url("mixed")); code != cli.ExitOK {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	f.upload(t, f.sp, "mixed")
	before := f.objects(t, "mixed")
	if _, ok := before[storage.SuccessName]; !ok {
		t.Fatalf("the scenario needs the export's %s beside the savepoint", storage.SuccessName)
	}
	time.Sleep(1100 * time.Millisecond)
	_, stderr, code := runCLI(t, "verify", "--remove-orphans", "--orphan-age", "1s", f.url("mixed"))
	if code != cli.ExitUsage || !strings.Contains(stderr, "holds an export") {
		t.Errorf("verify --remove-orphans: exit %d: %s; want %d, saying it holds an export", code, stderr, cli.ExitUsage)
	}
	f.sameFiles(t, "verify --remove-orphans", "mixed", before)
}

// A bucket URL's parameters (its endpoint may carry credentials) appear
// in no output, no message and no file a command writes: not in diff's
// report, report's page, the lineage bootstrap records in the savepoint,
// nor commit's refusal of a missing part.
func TestBucketURLParametersStayOutOfOutputs(t *testing.T) {
	f := newBucketFixture(t)
	if _, stderr, code := runCLI(t, "export", f.sp, "--out", f.url("exported")); code != cli.ExitOK {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	dir := t.TempDir()
	html, bootstrapped := filepath.Join(dir, "report.html"), filepath.Join(dir, "bootstrapped")
	for _, args := range [][]string{
		{"diff", f.url("in/sp"), f.url("in/sp")},
		{"diff", f.url("in/sp"), f.url("in/sp"), "-o", "json"},
		{"report", f.url("in/sp"), "--out", html},
		{"bootstrap", "--job", f.job, "--from", f.url("exported"), "--out", bootstrapped},
		{"inspect", "-o", "json", bootstrapped},
		{"commit", "--out", f.url("committed"), "--shards", "2"},
	} {
		stdout, stderr, code := runCLI(t, args...)
		t.Logf("%v: exit %d", args[:2], code)
		if strings.Contains(stdout+stderr, "endpoint=") {
			t.Errorf("%v (exit %d) shows the URL's parameters:\n%s%s", args[:2], code, stdout, stderr)
		}
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(page, []byte("endpoint=")) {
		t.Error("the report's page shows the URL's parameters")
	}
}

// Plain inspect of a bucket savepoint, which reads _metadata alone, fails
// as on disk (exit 4, naming the file) where a data file is missing or is
// not the size the metadata gives: the listing of the prefix made beside
// the read of _metadata tells. A listing the store refuses tells nothing.
func TestInspectOfBucketFindsMissingAndShortFiles(t *testing.T) {
	f := newBucketFixture(t)
	var victim string
	for name := range localFiles(t, f.sp) {
		if name != savepoint.MetadataFile {
			victim = name
			break
		}
	}
	for _, c := range []struct {
		name   string
		damage func(path string) error
		says   string
	}{
		{"missing", os.Remove, "is missing"},
		{"short", func(path string) error { return os.Truncate(path, 100) }, "truncated: the file is 100 bytes"},
	} {
		dir := filepath.Join(t.TempDir(), c.name)
		if err := os.CopyFS(dir, os.DirFS(f.sp)); err != nil {
			t.Fatal(err)
		}
		if err := c.damage(filepath.Join(dir, victim)); err != nil {
			t.Fatal(err)
		}
		f.upload(t, dir, c.name)
		for _, sp := range []string{dir, f.url(c.name)} {
			_, stderr, code := runCLI(t, "inspect", sp)
			if code != cli.ExitBadInput || !strings.Contains(stderr, victim) || !strings.Contains(stderr, c.says) {
				t.Errorf("inspect of %s with %s %s: exit %d: %s; want %d naming it", storage.Shown(sp), victim, c.name, code, stderr, cli.ExitBadInput)
			}
		}
	}
	// A reader allowed to get objects but not to list them still inspects.
	f.proxy.InjectOn(storetest.Status, "ListObjects", "", 1<<20, 403, "AccessDenied")
	defer f.proxy.ClearFaults()
	if _, stderr, code := runCLI(t, "inspect", f.url("in/sp")); code != cli.ExitOK {
		t.Errorf("inspect where listing is denied: exit %d: %s", code, stderr)
	}
}

// A store that cannot be reached, a bucket that does not exist and
// credentials the store refuses fail with exit 1 and a hint that points at
// the URL and the credentials, as every error has a hint.
func TestBucketStoreErrorsHaveAHint(t *testing.T) {
	f := newBucketFixture(t)
	check := func(what, location string) {
		t.Helper()
		_, stderr, code := runCLI(t, "inspect", location)
		if code != cli.ExitFailure || !strings.Contains(stderr, "hint: check the bucket and the URL's endpoint") {
			t.Errorf("inspect where %s: exit %d: %s; want %d with a hint about the URL and the credentials", what, code, stderr, cli.ExitFailure)
		}
	}
	check("nothing listens", storetest.URL("http://127.0.0.1:1", "state", "in/sp"))
	check("the bucket does not exist", storetest.URL(f.srv.Endpoint(), "none", "in/sp"))
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	check("the secret is wrong", f.url("in/sp"))
}

// An incremental checkpoint of the engine's in a bucket reads as it does
// on disk: its native databases are fetched from the root into a
// temporary directory, and inspect, verify and dump give what they give
// for the same root on disk.
func TestIncrementalCheckpointInABucket(t *testing.T) {
	f := newBucketFixture(t)
	root := filepath.Join(t.TempDir(), "root")
	last, err := makeCheckpoint(root, filepath.Join(t.TempDir(), "work"))
	if err != nil {
		t.Fatal(err)
	}
	f.upload(t, root, "root")
	name := filepath.Base(last)
	for _, args := range [][]string{
		{"inspect", "-o", "json", "CHK"},
		{"inspect", "--scan", "-o", "json", "CHK"},
		{"verify", "--deep", "-o", "json", "CHK"},
		{"dump", "CHK", "--operator", "counter", "--state", "value"},
	} {
		with := func(chk string) []string {
			a := slices.Clone(args)
			a[slices.Index(a, "CHK")] = chk
			return a
		}
		want, stderr, code := runCLI(t, with(last)...)
		if code != cli.ExitOK {
			t.Fatalf("%v on disk: exit %d: %s", args, code, stderr)
		}
		got, stderr, code := runCLI(t, with(f.url("root/"+name))...)
		got = bytesRead.ReplaceAllString(strings.ReplaceAll(got, "s3://state/root/"+name, last), "")
		if code != cli.ExitOK || got != want {
			t.Errorf("%v in the bucket: exit %d: %s\n%s\nwant, as on disk,\n%s", args, code, stderr, got, want)
		}
	}
}
