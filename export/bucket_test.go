package export_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// An export of a savepoint in a bucket reads each run's segments ahead of
// the worker that writes it: on one worker, once the data files are open,
// the GETs of the first segments are in flight together (the proxy holds
// them until three are in, and lets them on after a while when they come
// one at a time). Files of few rows make many runs, each its own walk,
// which reads no more than reading segment by segment does; the files
// written are those of an export from disk.
func TestExportReadsABucketAhead(t *testing.T) {
	ctx := context.Background()
	srv := storetest.StartWithBucket(t, "state")
	dir := filepath.Join(t.TempDir(), "in")
	if err := spgen.Write(dir, spgen.Config{Seed: 5, Users: 400, Accounts: 40, Parallelism: 2, MaxParallelism: 128, Now: testNow}); err != nil {
		t.Fatal(err)
	}
	var data int64
	for name, n := range srv.Upload(t, dir, "state", "in") {
		if name != savepoint.MetadataFile {
			data += n
		}
	}
	p := storetest.NewProxy(t, srv.Endpoint())
	var c storage.Counters
	src, err := layouts.OpenLocation(ctx, storetest.URL(p.URL, "state", "in"), storage.Options{Counters: &c})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	o := export.Options{Workers: 1, MaxRowsPerFile: 500}
	run := func(src savepoint.Source) (string, *export.Summary) {
		out := filepath.Join(t.TempDir(), "out")
		staging, err := storage.Stage(out, false)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := export.Run(ctx, src, staging, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := staging.Publish(ctx); err != nil {
			t.Fatal(err)
		}
		return out, sum
	}
	// First segment by segment, the source's walk hidden, which opens the
	// data files (reading their heads); then through the walks, which read
	// no byte past their runs' segments. (A segment that two runs share is
	// read by both.)
	read := c.BytesRead.Load()
	run(struct{ savepoint.Source }{src})
	plainRead := c.BytesRead.Load() - read
	read, gets := c.BytesRead.Load(), p.Ops("GetObject")
	segments := p.Gather("GetObject", 3, 3*time.Second)
	out, sum := run(src)
	if !segments() {
		t.Errorf("the first segments were not read together")
	}
	if read = c.BytesRead.Load() - read; read > plainRead || read < data {
		t.Errorf("the export read %d bytes through its walks, %d segment by segment, of data files of %d", read, plainRead, data)
	}
	want, _ := run(sptest.Open(t, dir))
	got, wantFiles := sptest.Files(t, out), sptest.Files(t, want)
	if len(got) != len(wantFiles) || len(got) < 10 {
		t.Fatalf("%d files from the bucket, %d from disk", len(got), len(wantFiles))
	}
	for name, b := range wantFiles {
		if !bytes.Equal(got[name], b) {
			t.Errorf("%s differs between the exports from the bucket and from disk", name)
		}
	}
	t.Logf("%d rows in %d files, %d bytes of data files in %d GETs", sum.Rows, len(got), data, p.Ops("GetObject")-gets)
}
