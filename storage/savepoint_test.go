package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// copySavepoint rewrites the savepoint of r into staging as a rewrite that
// changes nothing does: each segment copied as opaque bytes, its blocks'
// CRCs verified, into data files named after the source's plus suffix.
func copySavepoint(ctx context.Context, r *snapshotfmt.Reader, staging storage.Target, suffix string) error {
	w, err := snapshotfmt.NewWriter(staging, r.Metadata(), snapshotfmt.Options{})
	if err != nil {
		return err
	}
	// File by file, so that a writer killed midway leaves whole data files
	// without a _metadata: the orphans the kill test looks for.
	for _, name := range r.DataFiles() {
		f, err := w.CreateDataFile(ctx, name+suffix)
		if err != nil {
			w.Abort()
			return err
		}
		segs, err := savepoint.AllSegments(ctx, r)
		if err != nil {
			w.Abort()
			return err
		}
		for _, seg := range segs {
			if seg.File != name {
				continue
			}
			if err := f.CopySegment(ctx, r, seg, seg.Ref, seg.KeyGroup); err != nil {
				w.Abort()
				return err
			}
		}
		if err := f.Close(); err != nil {
			w.Abort()
			return err
		}
	}
	if err := w.Finish(ctx); err != nil {
		w.Abort()
		return err
	}
	return nil
}

func makeSavepoint(t *testing.T, users int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sp")
	if err := spgen.Write(dir, spgen.Config{Seed: 3, Users: users, Accounts: users / 4, Parallelism: 2, MaxParallelism: 128,
		Now: 1_700_000_000_000, Pad: 200}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func openBucketSavepoint(t *testing.T, loc string) (*snapshotfmt.Reader, error) {
	t.Helper()
	d, err := storage.OpenDir(context.Background(), loc, storage.Options{Retry: fastRetries})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	r, err := snapshotfmt.Open(context.Background(), d)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { r.Close() })
	return r, sptest.Verify(r)
}

// sameEntries compares every state and timer service of two savepoints.
func sameEntries(t *testing.T, a, b *snapshotfmt.Reader) int {
	t.Helper()
	n := 0
	for op := range a.Metadata().Operators {
		for _, ref := range a.Metadata().Refs(op) {
			ea, eb := sptest.EntriesOf(t, a, ref), sptest.EntriesOf(t, b, ref)
			if !reflect.DeepEqual(ea, eb) {
				t.Fatalf("%v: %d entries locally, %d from the bucket, or different ones", ref, len(ea), len(eb))
			}
			n += len(ea)
		}
	}
	return n
}

// TestSavepointInABucket writes a savepoint into versitygw through the
// snapshot writer and reads it back through the snapshot reader: every
// entry equals the local original's, and a flipped byte in the bucket is
// the same corruption error as on disk.
func TestSavepointInABucket(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	local := sptest.Open(t, makeSavepoint(t, 600))
	loc := storetest.URL(srv.Endpoint(), "state", "savepoints/sp-1")
	tg := openTarget(t, loc, false)
	if err := copySavepoint(ctx, local, tg, ""); err != nil {
		t.Fatal(err)
	}
	r, err := openBucketSavepoint(t, loc)
	if err != nil {
		t.Fatal(err)
	}
	n := sameEntries(t, local, r)
	if n < 600 {
		t.Fatalf("only %d entries compared", n)
	}
	t.Logf("%d entries equal", n)

	name := r.DataFiles()[0]
	d := openVia(t, srv.Endpoint(), "savepoints/sp-1", storage.RetryPolicy{})
	b := readAll(t, d, name)
	b[len(b)/2] ^= 0x40
	putObject(t, srv, "savepoints/sp-1/"+name, b)
	_, err = openBucketSavepoint(t, loc)
	if !errors.Is(err, snapshotfmt.ErrCorrupt) || !strings.Contains(err.Error(), name) {
		t.Fatalf("a flipped byte in the bucket: %v, want ErrCorrupt naming %s", err, name)
	}
}

// TestKilledBucketWritesLeaveNothingPartial runs a writer into the bucket
// in a child process and kills it with SIGKILL at random points: the
// target then holds no _metadata and only orphans, which Orphans finds and
// RemoveOrphans removes, or a savepoint that verifies. With --force over
// an old savepoint, it is the old one or the new one, whole.
func TestKilledBucketWritesLeaveNothingPartial(t *testing.T) {
	if testing.Short() {
		t.Skip("kills 12 writer processes")
	}
	srv := newBucket(t)
	src := makeSavepoint(t, 2000)
	local := sptest.Open(t, src)
	run := func(loc, suffix string, force bool) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$")
		cmd.Env = append(os.Environ(), "STATEPROC_KILL_HELPER=1", "KILL_SRC="+src, "KILL_LOC="+loc, "KILL_SUFFIX="+suffix,
			fmt.Sprintf("KILL_FORCE=%t", force))
		return cmd
	}
	// Uninterrupted runs set the span the kills are spread over: the
	// quicker of two, so that most kills land before the end.
	full := time.Duration(1<<63 - 1)
	for i := range 2 {
		loc := storetest.URL(srv.Endpoint(), "state", fmt.Sprint("full-", i))
		start := time.Now()
		if out, err := run(loc, "", false).CombinedOutput(); err != nil {
			t.Fatalf("writer: %v\n%s", err, out)
		}
		full = min(full, time.Since(start))
		if _, err := openBucketSavepoint(t, loc); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("an uninterrupted writer process takes %v", full)
	rng := rand.New(rand.NewPCG(5, 6))
	outcomes := map[string]int{}
	for i := range 12 {
		force := i%2 == 1
		prefix := fmt.Sprintf("kill-%d", i)
		loc := storetest.URL(srv.Endpoint(), "state", prefix)
		if force {
			tg := openTarget(t, loc, false)
			if err := copySavepoint(context.Background(), local, tg, ".old"); err != nil {
				t.Fatal(err)
			}
		}
		cmd := run(loc, ".new", force)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// From a quarter of a run to a quarter past its end: the process
		// start takes the first part, and the last kills may come late.
		time.Sleep(full/4 + time.Duration(rng.Int64N(int64(full))))
		cmd.Process.Signal(syscall.SIGKILL)
		killed := cmd.Wait() != nil
		r, err := openBucketSavepoint(t, loc)
		outcome := map[bool]string{false: "plain: ", true: "--force over an old savepoint: "}[force]
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, snapshotfmt.ErrNotSavepoint):
			outcome += "no savepoint"
		case err != nil:
			t.Fatalf("kill %d: the target holds a savepoint that does not verify: %v", i, err)
		case strings.HasSuffix(r.DataFiles()[0], ".old"):
			outcome += "the old savepoint"
		default:
			outcome += "the new savepoint"
		}
		if !killed {
			outcome += " (finished before the kill)"
		}
		d := openVia(t, srv.Endpoint(), prefix, storage.RetryPolicy{})
		var referenced []string
		if r != nil {
			referenced = r.DataFiles()
		}
		orphans, err := storage.Orphans(context.Background(), d, referenced)
		if err != nil {
			t.Fatal(err)
		}
		if len(orphans) > 0 {
			outcome += ", orphans found"
		}
		if _, err := storage.RemoveOrphans(context.Background(), d, referencing(referenced...), 0, time.Now()); err != nil {
			t.Fatal(err)
		}
		if left, _ := storage.Orphans(context.Background(), d, referenced); len(left) != 0 {
			t.Fatalf("kill %d: orphans left after removal: %v", i, left)
		}
		outcomes[outcome]++
	}
	for o, n := range outcomes {
		t.Logf("%2d × %s", n, o)
	}
}

// TestKillHelper is the writer process of the kill test.
func TestKillHelper(t *testing.T) {
	if os.Getenv("STATEPROC_KILL_HELPER") == "" {
		t.Skip("run by TestKilledBucketWritesLeaveNothingPartial")
	}
	ctx := context.Background()
	r, err := snapshotfmt.Open(ctx, storage.LocalDir(os.Getenv("KILL_SRC")))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tg, err := storage.OpenTarget(ctx, os.Getenv("KILL_LOC"), storage.TargetOptions{Force: os.Getenv("KILL_FORCE") == "true"})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if err := copySavepoint(ctx, r, tg, os.Getenv("KILL_SUFFIX")); err != nil {
		t.Fatal(err)
	}
}
