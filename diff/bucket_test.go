package diff_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stateproc/stateproc/diff"
	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// A diff of two savepoints in a bucket reads each side's segments ahead
// of the workers: on one worker, once the data files are open, the GETs
// of the first segments are in flight together (the proxy holds them
// until three are in, and lets them on after a while when they come one at
// a time). No byte is read twice, and the report is that of the same diff
// on disk.
func TestDiffReadsABucketAhead(t *testing.T) {
	ctx := context.Background()
	srv := storetest.StartWithBucket(t, "state")
	c := spgen.Config{Seed: 8, Users: 300, Accounts: 30, Parallelism: 2, MaxParallelism: 128, Now: 1_700_000_000_000}
	a := filepath.Join(t.TempDir(), "a")
	if err := spgen.Write(a, c); err != nil {
		t.Fatal(err)
	}
	c.Seed, c.Users = 9, 320
	b := filepath.Join(t.TempDir(), "b")
	if err := spgen.Write(b, c); err != nil {
		t.Fatal(err)
	}
	var data int64
	for prefix, dir := range map[string]string{"a": a, "b": b} {
		for name, n := range srv.Upload(t, dir, "state", prefix) {
			if name != savepoint.MetadataFile {
				data += n
			}
		}
	}
	p := storetest.NewProxy(t, srv.Endpoint())
	var counters storage.Counters
	side := func(prefix string) diff.Side {
		loc := storetest.URL(p.URL, "state", prefix)
		src, err := layouts.OpenLocation(ctx, loc, storage.Options{Counters: &counters})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { src.Close() })
		return diff.Side{Source: src, Path: loc}
	}
	sa, sb := side("a"), side("b")
	read, gets := counters.BytesRead.Load(), p.Ops("GetObject")
	// Each side's walk opens its data files together, A's first; then the
	// segments' reads.
	p.Gather("GetObject", len(sptest.Open(t, a).DataFiles()), 3*time.Second)
	p.Gather("GetObject", len(sptest.Open(t, b).DataFiles()), 3*time.Second)
	together := p.Gather("GetObject", 3, 3*time.Second)
	opts := diff.Options{Workers: 1, Examples: 2}
	got, err := diff.Compare(ctx, sa, sb, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !together() {
		t.Errorf("the first segments were not read together")
	}
	read, gets = counters.BytesRead.Load()-read, p.Ops("GetObject")-gets
	if read > data {
		t.Errorf("the diff read %d bytes of data files of %d", read, data)
	}
	want, err := diff.Compare(ctx, open(t, a), open(t, b), opts)
	if err != nil {
		t.Fatal(err)
	}
	got.A, got.B = want.A, want.B
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if !bytes.Equal(gj, wj) || !want.Differ {
		t.Errorf("the diff of the bucket's savepoints:\n%s\nwant\n%s", gj, wj)
	}
	t.Logf("%d bytes of data files, %d read in %d GETs", data, read, gets)
}
