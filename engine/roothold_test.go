package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/engine/internal/chkstore"
	"github.com/stateproc/stateproc/internal/storetest"
)

// testLease is the term of the tests' leases on a checkpoint root in a
// bucket: renewed every 200 ms.
const testLease = 1200 * time.Millisecond

// completeCheckpoints lists the ids of the complete checkpoints under root.
func completeCheckpoints(t *testing.T, root string) []uint64 {
	t.Helper()
	if !chkstore.InBucket(root) {
		ids, err := chkdir.List(root)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	b, err := chkdir.OpenBucket(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ids, err := b.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// Two runs of a job started at once into one checkpoint root: one holds
// the root and runs to its end, restarting once from its own checkpoint;
// the other fails at once with ErrCheckpointRootHeld, without a restart.
// Every checkpoint under the root restores. Without the hold, the second
// run deleted the files of the first's checkpoint in flight as a dead
// run's leftovers, and the first published it over them, in a bucket; on
// disk one of them failed later, on a checkpoint number the other took.
func TestTwoRunsAtOnceIntoOneRoot(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	src := testSource{splits: 2, n: 20000, keys: 31}
	stop := int64(src.splits * src.n)
	ctx := context.Background()
	for _, root := range []string{storetest.URL(srv.Endpoint(), "state", "chk"), filepath.Join(t.TempDir(), "chk")} {
		dir := t.TempDir()
		var wg sync.WaitGroup
		res := make([]*Result, 2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() {
				var seen atomic.Int64
				sink := NewFileSink(filepath.Join(dir, string(rune('a'+i))), formatResult)
				res[i], errs[i] = Run(ctx, failingJob(src, 2, sink, &seen, 30000), RunOptions{
					Backend: Pebble, CheckpointDir: root, CheckpointInterval: 3 * time.Millisecond, StopAfter: stop,
					MaxRestarts: 1, RetainCheckpoints: 1000, CheckpointLease: testLease})
			})
		}
		wg.Wait()
		won := -1
		for i := range 2 {
			if errs[i] == nil {
				won = i
			}
		}
		if won < 0 || errs[1-won] == nil {
			t.Fatalf("%s: the runs ended with %v and %v; want one to win and one refused", shownLocation(root), errs[0], errs[1])
		}
		lost := 1 - won
		if !errors.Is(errs[lost], ErrCheckpointRootHeld) || res[lost] != nil && res[lost].Restarts != 0 {
			t.Errorf("%s: the second run: %v (result %+v); want ErrCheckpointRootHeld without a restart", shownLocation(root), errs[lost], res[lost])
		}
		if res[won].Restarts != 1 {
			t.Errorf("%s: the run that held the root restarted %d times, want once", shownLocation(root), res[won].Restarts)
		}
		ids := completeCheckpoints(t, root)
		if len(ids) == 0 {
			t.Fatalf("%s: no checkpoint", shownLocation(root))
		}
		for _, id := range ids {
			var seen atomic.Int64
			if _, err := Run(ctx, failingJob(src, 2, NewCollectSink[windowResult](), &seen, -1), RunOptions{
				Backend: Pebble, RestoreFrom: chkdir.Path(root, id), StopAfter: stop}); err != nil {
				t.Errorf("%s: restore from checkpoint %d: %v", shownLocation(root), id, err)
			}
		}
		// The hold went with the run: the next run takes it at once.
		var seen atomic.Int64
		start := time.Now()
		if _, err := Run(ctx, failingJob(src, 2, NewCollectSink[windowResult](), &seen, -1), RunOptions{
			Backend: Pebble, CheckpointDir: root, CheckpointInterval: time.Hour, StopAfter: 100, CheckpointLease: testLease}); err != nil {
			t.Errorf("%s: a run after both: %v", shownLocation(root), err)
		} else if d := time.Since(start); d > testLease {
			t.Errorf("%s: a run after both took %v: it waited for a lease that should have been released", shownLocation(root), d)
		}
	}
}

// A run whose lease on its checkpoint root in a bucket is taken by another
// (here, written over by hand) stops at its next renewal: it fails with
// ErrCheckpointRootHeld, without a restart, and leaves the other's lease
// as it is.
func TestRunThatLosesItsRoot(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	c := srv.Client(srv.Endpoint())
	root := storetest.URL(srv.Endpoint(), "state", "chk")
	src := testSource{splits: 2, n: 200000, keys: 31}
	var seen atomic.Int64
	h, err := Start(context.Background(), failingJob(src, 2, NewCollectSink[windowResult](), &seen, -1), RunOptions{
		Backend: Pebble, CheckpointDir: root, CheckpointInterval: 3 * time.Millisecond, MaxRestarts: 3, CheckpointLease: testLease})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Cancel()
	for h.LatestCheckpoint() == "" {
		select {
		case <-h.Done():
			_, err := h.Wait()
			t.Fatalf("the run ended before its first checkpoint: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	taker := []byte(`{"holder":"elsewhere:1","token":"0123456789abcdef"}`)
	key := path.Join("chk", chkstore.HoldName)
	if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String(key), Body: bytes.NewReader(taker)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the run goes on after its lease was taken")
	}
	res, err := h.Wait()
	if !errors.Is(err, ErrCheckpointRootHeld) || res.Restarts != 0 {
		t.Fatalf("the run ended with %v after %d restarts; want ErrCheckpointRootHeld without a restart", err, res.Restarts)
	}
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("state"), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("the taker's lease is gone: %v", err)
	}
	defer out.Body.Close()
	if b, _ := io.ReadAll(out.Body); !bytes.Equal(b, taker) {
		t.Errorf("the lease holds %s, want the taker's %s", b, taker)
	}
}
