package export_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// bucketAndSavepoint starts a server with the bucket state and writes a
// generated savepoint of the given max parallelism on disk, in the
// returned directory.
func bucketAndSavepoint(t *testing.T, maxParallelism int) (*storetest.Server, string) {
	t.Helper()
	srv := storetest.StartWithBucket(t, "state")
	dir := filepath.Join(t.TempDir(), "in")
	if err := spgen.Write(dir, spgen.Config{Seed: 5, Users: 400, Accounts: 40, Parallelism: 2, MaxParallelism: maxParallelism, Now: testNow}); err != nil {
		t.Fatal(err)
	}
	return srv, dir
}

// An export of a savepoint in a bucket reads each run's segments ahead of
// the worker that writes it: on one worker, once the data files are open,
// the GETs of the first segments are in flight together (the proxy holds
// them until three are in, and lets them on after a while when they come
// one at a time). Files of few rows make many runs, each its own walk,
// which reads no more than reading segment by segment does; the files
// written are those of an export from disk.
func TestExportReadsABucketAhead(t *testing.T) {
	ctx := context.Background()
	srv, dir := bucketAndSavepoint(t, 128)
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

// An export into a bucket puts each part while its worker writes the next:
// on one worker, the PUTs of the first three parts are in flight together
// (the proxy holds them until three are in, and lets them on after a while
// when they come one at a time). The parts are those of an export to disk,
// byte for byte, each under its content's name, and the marker, written
// once every part is in, lists exactly them. A put that fails fails the
// export with its own error, and no marker is written.
func TestExportPutsPartsWhileWriting(t *testing.T) {
	ctx := context.Background()
	srv, dir := bucketAndSavepoint(t, 128)
	o := export.Options{Workers: 1, MaxRowsPerFile: 500}
	local := filepath.Join(t.TempDir(), "local")
	staging, err := storage.Stage(local, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := export.Run(ctx, sptest.Open(t, dir), staging, o); err != nil {
		t.Fatal(err)
	}
	if err := staging.Publish(ctx); err != nil {
		t.Fatal(err)
	}

	p := storetest.NewProxy(t, srv.Endpoint())
	tg, err := storage.OpenTarget(ctx, storetest.URL(p.URL, "state", "out"), storage.TargetOptions{Marker: export.Marker})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	together := p.Gather("PutObject", 3, 3*time.Second)
	sum, err := export.Run(ctx, sptest.Open(t, dir), tg, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if !together() {
		t.Errorf("the first parts were put one after another")
	}

	objs := srv.Objects(t, "state", "out")
	var marker export.MarkerContent
	if err := json.Unmarshal(objs[export.Marker], &marker); err != nil {
		t.Fatalf("%s: %v", export.Marker, err)
	}
	want := sptest.Files(t, local)
	if len(want) < 10 || len(marker.Files) != len(want) || len(objs) != len(want)+1 || sum.Files != len(want) {
		t.Fatalf("%d parts on disk, %d listed in %s, %d objects in the bucket, %d in the summary", len(want), len(marker.Files), export.Marker, len(objs), sum.Files)
	}
	listed := map[string]int64{}
	for _, mf := range marker.Files {
		listed[mf.Name] = mf.Bytes
	}
	if bad := sptest.NotByContent(want, objs, listed); len(bad) > 0 {
		t.Errorf("parts of the export to disk not in the bucket under their content names, listed and with the same bytes: %v", bad)
	}

	p.Inject(storetest.Status, "PutObject", 1, 403, "AccessDenied", 0)
	tg, err = storage.OpenTarget(ctx, storetest.URL(p.URL, "state", "refused"), storage.TargetOptions{Marker: export.Marker})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	_, err = export.Run(ctx, sptest.Open(t, dir), tg, o)
	if err == nil || !strings.Contains(err.Error(), "AccessDenied") || !strings.Contains(err.Error(), ".parquet") {
		t.Fatalf("an export whose put was refused: %v, want the refusal and the part's name", err)
	}
	if _, ok := srv.Objects(t, "state", "refused")[export.Marker]; ok {
		t.Errorf("an export that failed wrote its marker")
	}
}

// errUndecodable is the failure of one worker's reads in
// TestFailedExportPutsNothingMore.
var errUndecodable = errors.New("undecodable entry")

// failingSource gives, of the iterators opened, the first to a reader that
// waits after its first entry until the export is stopped (and then, with
// readsOn, reads on as a local reader that looks at its context now and
// then does), and the second to one that fails at once.
type failingSource struct {
	savepoint.Source
	readsOn bool
	mu      sync.Mutex
	opened  int
}

func (s *failingSource) Entries(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) savepoint.EntryIterator {
	s.mu.Lock()
	s.opened++
	n := s.opened
	s.mu.Unlock()
	return &failingIterator{EntryIterator: s.Source.Entries(ctx, ref, kgs), ctx: ctx, fails: n == 2, waits: n == 1, readsOn: s.readsOn}
}

type failingIterator struct {
	savepoint.EntryIterator
	ctx                   context.Context
	fails, waits, readsOn bool
	read                  int
	err                   error
}

func (it *failingIterator) Next() bool {
	switch {
	case it.fails:
		it.err = errUndecodable
		return false
	case it.waits && it.read == 1:
		<-it.ctx.Done()
		if !it.readsOn {
			it.err = it.ctx.Err()
			return false
		}
	}
	it.read++
	return it.EntryIterator.Next()
}

func (it *failingIterator) Err() error {
	if it.err != nil {
		return it.err
	}
	return it.EntryIterator.Err()
}

// An export into a bucket that fails puts nothing more: not the part that
// failed, nor the part another worker was writing meanwhile, nor the parts
// that worker would write next, whether its reader stops at the
// cancellation or reads on; the failure is the export's error.
func TestFailedExportPutsNothingMore(t *testing.T) {
	ctx := context.Background()
	srv, dir := bucketAndSavepoint(t, 2)
	p := storetest.NewProxy(t, srv.Endpoint())
	for _, readsOn := range []bool{false, true} {
		prefix := fmt.Sprintf("out-%v", readsOn)
		tg, err := storage.OpenTarget(ctx, storetest.URL(p.URL, "state", prefix), storage.TargetOptions{Marker: export.Marker})
		if err != nil {
			t.Fatal(err)
		}
		puts := p.Ops("PutObject")
		_, err = export.Run(ctx, &failingSource{Source: sptest.Open(t, dir), readsOn: readsOn}, tg, export.Options{Workers: 2, MaxRowsPerFile: 20})
		if !errors.Is(err, errUndecodable) {
			t.Fatalf("reads on %v: the export failed with %v, want the worker's failure", readsOn, err)
		}
		tg.Abort()
		tg.Close()
		if objs := srv.Objects(t, "state", prefix); len(objs) != 0 || p.Ops("PutObject") != puts {
			t.Errorf("reads on %v: %d PUTs and %d objects left by the failed export: %v", readsOn, p.Ops("PutObject")-puts, len(objs), slices.Sorted(maps.Keys(objs)))
		}
	}
}
