package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/engine/internal/chkstore"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/storage"
)

// testLease is the term of the tests' leases on a checkpoint root in a
// bucket: renewed every 500 ms, and given up after 1.5 s without a
// renewal, which a run under -race on a loaded machine can go.
const testLease = 3 * time.Second

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
			t.Fatalf("%s: the runs ended with %v and %v; want one to win and one refused", storage.Shown(root), errs[0], errs[1])
		}
		lost := 1 - won
		if !errors.Is(errs[lost], ErrCheckpointRootHeld) || res[lost] != nil && res[lost].Restarts != 0 {
			t.Errorf("%s: the second run: %v (result %+v); want ErrCheckpointRootHeld without a restart", storage.Shown(root), errs[lost], res[lost])
		}
		if res[won].Restarts != 1 {
			t.Errorf("%s: the run that held the root restarted %d times, want once", storage.Shown(root), res[won].Restarts)
		}
		ids := completeCheckpoints(t, root)
		if len(ids) == 0 {
			t.Fatalf("%s: no checkpoint", storage.Shown(root))
		}
		for _, id := range ids {
			var seen atomic.Int64
			if _, err := Run(ctx, failingJob(src, 2, NewCollectSink[windowResult](), &seen, -1), RunOptions{
				Backend: Pebble, RestoreFrom: chkdir.Path(root, id), StopAfter: stop}); err != nil {
				t.Errorf("%s: restore from checkpoint %d: %v", storage.Shown(root), id, err)
			}
		}
		// The hold went with the runs: no lease or lock file is left, and
		// the next run takes the root.
		left := false
		if chkstore.InBucket(root) {
			left = leaseLeft(t, srv, "chk")
		} else {
			_, err := os.Stat(filepath.Join(root, chkstore.HoldName))
			left = !errors.Is(err, os.ErrNotExist)
		}
		if left {
			t.Errorf("%s: the runs left the root's %s", storage.Shown(root), chkstore.HoldName)
		}
		var seen atomic.Int64
		if _, err := Run(ctx, failingJob(src, 2, NewCollectSink[windowResult](), &seen, -1), RunOptions{
			Backend: Pebble, CheckpointDir: root, CheckpointInterval: time.Hour, StopAfter: 100, CheckpointLease: testLease}); err != nil {
			t.Errorf("%s: a run after both: %v", storage.Shown(root), err)
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
	waitForFirstCheckpoint(t, h)
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

// A run whose lease renewals fail for longer than half its term stops
// writing under the root, and its restart takes the root again once no
// other run can have taken it (the lease's term after its last renewal),
// then runs to its end with the output of an unbroken run.
func TestRunWhoseLeaseLapses(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	p := storetest.NewProxy(t, srv.Endpoint())
	root := storetest.URL(p.URL, "state", "chk")
	src := testSource{splits: 2, n: 60000, keys: 31}
	stop := int64(src.splits * src.n)
	dir := t.TempDir()
	var seen atomic.Int64
	want := runUnbroken(t, src, filepath.Join(dir, "clean"))
	h, err := Start(context.Background(), failingJob(src, 2, NewFileSink(filepath.Join(dir, "out"), formatResult), &seen, -1), RunOptions{
		Backend: Pebble, CheckpointDir: root, CheckpointInterval: 3 * time.Millisecond, StopAfter: stop, MaxRestarts: 2, CheckpointLease: testLease})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Cancel()
	waitForFirstCheckpoint(t, h)
	// Every write of the lease fails for longer than the term.
	p.InjectOn(storetest.Status, "PutObject", "/chk/"+chkstore.HoldName, 1<<20, 503, "SlowDown")
	time.Sleep(testLease + testLease/4)
	p.ClearFaults()
	res, err := h.Wait()
	if err != nil || res.Restarts == 0 {
		t.Fatalf("the run ended with %v after %d restarts; want it to end well after a restart", err, res.Restarts)
	}
	if got := readParts(t, filepath.Join(dir, "out")); !slices.Equal(got, want) {
		t.Errorf("%d lines after the lapse, %d unbroken", len(got), len(want))
	}
	if leaseLeft(t, srv, "chk") {
		t.Error("the run left its lease at its end")
	}
}

// runUnbroken runs failingJob without a failure or a checkpoint and returns
// its output's lines.
func runUnbroken(t *testing.T, src testSource, dir string) []string {
	t.Helper()
	var seen atomic.Int64
	if _, err := Run(context.Background(), failingJob(src, 2, NewFileSink(dir, formatResult), &seen, -1), RunOptions{
		Backend: Pebble, StopAfter: int64(src.splits * src.n)}); err != nil {
		t.Fatal(err)
	}
	return readParts(t, dir)
}

// leaseLeft reports whether a run's lease lies under prefix in the test
// server's bucket.
func leaseLeft(t *testing.T, srv *storetest.Server, prefix string) bool {
	t.Helper()
	for _, k := range bucketKeys(t, srv.Client(srv.Endpoint()), "state", prefix+"/") {
		if k == prefix+"/"+chkstore.HoldName {
			return true
		}
	}
	return false
}

// Run A is paused (here: held in the coordinator just before it publishes
// its checkpoint 2) for longer than its lease's term; its lease is taken
// from it, and run B takes the root over, numbers its checkpoints from 2
// (A's 2 never completed) and publishes them. When A goes on, it must fail
// with ErrCheckpointRootHeld, without a restart, and must not count B's
// checkpoint 2 as its own: its publication looks at its hold before it
// writes anything, and the restart looks at the hold whatever failed the
// attempt.
func TestRunThatLostItsRootTakesNoOthersCheckpoint(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	c := srv.Client(srv.Endpoint())
	root := storetest.URL(srv.Endpoint(), "state", "chk")
	ctx := context.Background()

	h, resume := startHeldAtCheckpoint2(t, root)

	// A's lease is taken from it meanwhile; B, started now, waits it out
	// and runs to its end with checkpoints 2, 3, ...
	key := path.Join("chk", chkstore.HoldName)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String(key),
		Body: bytes.NewReader([]byte(`{"holder":"elsewhere:1","token":"0123456789abcdef","term_ms":1200}`))}); err != nil {
		t.Fatal(err)
	}
	srcB := testSource{splits: 2, n: 20000, keys: 31}
	var seenB atomic.Int64
	resB, err := Run(ctx, failingJob(srcB, 2, NewCollectSink[windowResult](), &seenB, -1), RunOptions{
		Backend: Pebble, CheckpointDir: root, CheckpointInterval: 3 * time.Millisecond, StopAfter: int64(srcB.splits * srcB.n),
		RetainCheckpoints: 1000, WorkDir: filepath.Join(t.TempDir(), "b"), CheckpointLease: testLease})
	if err != nil {
		t.Fatalf("B: %v", err)
	}
	bs := chkdir.Path(root, 2)
	if ids := completeCheckpoints(t, root); len(ids) == 0 || ids[0] > 2 || resB.Checkpoints == 0 {
		t.Fatalf("B's checkpoints %v (B completed %d): the scenario needs B's checkpoint 2", ids, resB.Checkpoints)
	}

	close(resume)
	res, err := waitForEnd(t, h, 30*time.Second)
	t.Logf("A: %v; result %+v", err, res)
	if !errors.Is(err, ErrCheckpointRootHeld) || res.Restarts != 0 {
		t.Errorf("A ended with %v after %d restarts; want ErrCheckpointRootHeld without a restart", err, res.Restarts)
	}
	for _, r := range append([]string{res.LastCheckpoint}, res.Restored...) {
		if r == bs {
			t.Errorf("A counts B's checkpoint %s as its own (last %s, restored %v)", storage.Shown(bs), storage.Shown(res.LastCheckpoint), res.Restored)
		}
	}
}

// A run cancelled while it waits for the lease of a dead run to lapse
// returns at once; after Cancel, Wait's error wraps ErrCancelled (Wait's
// documentation), wherever the wait was when the cancel came: here in
// one of its requests, which the store is slow to answer.
func TestCancelWhileWaitingForADeadLease(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	c := srv.Client(srv.Endpoint())
	ctx := context.Background()
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String(path.Join("chk", chkstore.HoldName)),
		Body: bytes.NewReader([]byte(`{"holder":"dead:1","token":"0123456789abcdef"}`))}); err != nil {
		t.Fatal(err)
	}
	proxy := storetest.NewProxy(t, srv.Endpoint())
	proxy.SetLatency(400 * time.Millisecond)
	root := storetest.URL(proxy.URL, "state", "chk")
	var seen atomic.Int64
	h, err := Start(ctx, failingJob(testSource{splits: 2, n: 100, keys: 3}, 2, NewCollectSink[windowResult](), &seen, -1), RunOptions{
		Backend: Pebble, CheckpointDir: root, CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	h.Cancel()
	start := time.Now()
	select {
	case <-h.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the run goes on waiting after Cancel")
	}
	_, err = h.Wait()
	t.Logf("Wait after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if !errors.Is(err, ErrCancelled) {
		t.Errorf("Wait after Cancel = %v; want ErrCancelled", err)
	}
}

// Run A's store turns slow (every request waits 20 s in the proxy) and its
// lease renewals fail just as it publishes its checkpoint 2: the PUT of
// _metadata outlasts the hold's deadline, and Publish fails with
// ErrRootHeld, but not Withheld, so the coordinator keeps the checkpoint
// to settle. The lease lapses meanwhile; run B (straight to the store)
// takes it over, numbers its checkpoints from 2 (A's 2 never completed)
// and publishes them. When A's settle looks, the _metadata of checkpoint 2
// it would find is B's: A must not record it as its own (settle first
// makes sure the run holds the root), and ends with ErrCheckpointRootHeld.
func TestSettleAfterALapseTakesNoOthersCheckpoint(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	p := storetest.NewProxy(t, srv.Endpoint())
	rootA := storetest.URL(p.URL, "state", "chk")
	rootB := storetest.URL(srv.Endpoint(), "state", "chk")
	ctx := context.Background()

	h, resume := startHeldAtCheckpoint2(t, rootA)
	// A's store turns slow and its renewals fail, as A publishes.
	p.InjectOn(storetest.Status, "PutObject", "/chk/"+chkstore.HoldName, 1<<20, 503, "SlowDown")
	p.SetLatency(20 * time.Second)
	slow := time.Now()
	close(resume)

	// B waits A's lapsed lease out and runs to its end with checkpoints
	// 2, 3, ...
	srcB := testSource{splits: 2, n: 20000, keys: 31}
	var seenB atomic.Int64
	resB, err := Run(ctx, failingJob(srcB, 2, NewCollectSink[windowResult](), &seenB, -1), RunOptions{
		Backend: Pebble, CheckpointDir: rootB, CheckpointInterval: 3 * time.Millisecond, StopAfter: int64(srcB.splits * srcB.n),
		RetainCheckpoints: 1000, WorkDir: filepath.Join(t.TempDir(), "b"), CheckpointLease: testLease})
	if err != nil {
		t.Fatalf("B: %v", err)
	}
	tookB := time.Since(slow)
	if ids := completeCheckpoints(t, rootB); len(ids) == 0 || ids[0] > 2 || resB.Checkpoints == 0 {
		t.Fatalf("B's checkpoints %v (B completed %d): the scenario needs B's checkpoint 2", ids, resB.Checkpoints)
	}
	if tookB > 18*time.Second {
		t.Fatalf("B took %v: the scenario needs B's checkpoint 2 before A's settle looks", tookB)
	}
	t.Logf("B published its checkpoints %v %v after A's store turned slow", completeCheckpoints(t, rootB), tookB.Round(time.Millisecond))
	// The store answers A again (the requests already waiting keep their
	// 20 s).
	p.ClearFaults()
	p.SetLatency(0)

	res, err := waitForEnd(t, h, 90*time.Second)
	t.Logf("A: %v; result %+v", err, res)
	if !errors.Is(err, ErrCheckpointRootHeld) {
		t.Errorf("A ended with %v; want ErrCheckpointRootHeld", err)
	}
	bs := chkdir.Path(rootA, 2)
	if res.LastCheckpoint == bs || slices.Contains(res.Restored, bs) {
		t.Errorf("A counts B's checkpoint 2 as its own (last %s, restored %v, %d checkpoints)",
			storage.Shown(res.LastCheckpoint), res.Restored, res.Checkpoints)
	}
}

// Run A holds the root with the default-like term of 30 s (renewed every
// 5 s) and checkpoints; run B, started into the same root with a shorter
// CheckpointLease, must fail with ErrCheckpointRootHeld: it judges A's
// lease by the term the lease records, not by its own, which would have
// let it take the live lease within seconds.
func TestShorterLeaseDoesNotTakeALiveRunsRoot(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	root := storetest.URL(srv.Endpoint(), "state", "chk")
	ctx := context.Background()
	var seenA atomic.Int64
	srcA := testSource{splits: 2, n: 400000, keys: 31}
	h, err := Start(ctx, failingJob(srcA, 2, NewCollectSink[windowResult](), &seenA, -1), RunOptions{
		Backend: Pebble, CheckpointDir: root, CheckpointInterval: 3 * time.Millisecond, RetainCheckpoints: 1000,
		CheckpointLease: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Cancel()
	waitForFirstCheckpoint(t, h)
	srcB := testSource{splits: 2, n: 2000, keys: 31}
	var seenB atomic.Int64
	start := time.Now()
	resB, errB := Run(ctx, failingJob(srcB, 2, NewCollectSink[windowResult](), &seenB, -1), RunOptions{
		Backend: Pebble, CheckpointDir: root, CheckpointInterval: 3 * time.Millisecond, StopAfter: int64(srcB.splits * srcB.n),
		RetainCheckpoints: 1000, WorkDir: filepath.Join(t.TempDir(), "b"), CheckpointLease: testLease})
	tookB := time.Since(start)
	select {
	case <-h.Done():
		_, errA := h.Wait()
		t.Logf("A ended meanwhile: %v", errA)
	default:
		t.Logf("A still runs after B ended (%v)", tookB.Round(time.Millisecond))
	}
	if errB == nil {
		t.Fatalf("B, with a lease of %v, ran to its end (%d checkpoints) in %v in a root that a live run holds with a lease of 30 s; want ErrCheckpointRootHeld",
			testLease, resB.Checkpoints, tookB.Round(time.Millisecond))
	}
	if !errors.Is(errB, ErrCheckpointRootHeld) {
		t.Fatalf("B: %v; want ErrCheckpointRootHeld", errB)
	}
}

// Run A publishes its checkpoint 2 (its _metadata is there) but the
// publication is reported failed (faultPublished, as when the answer to the
// last PUT is lost), so the coordinator keeps it to settle. Meanwhile A's
// lease renewals are refused (403) long enough for the lease to lapse, and
// stay refused for the two terms that settle's Store.Reclaim (RootHold.
// Retake) tries: Reclaim fails with the store's error, not ErrRootHeld.
// Nobody else wants the root. The store then answers again, and
// Handle.run's own Retake takes the root back. Settle must have left the
// checkpoint undecided, so that the restart looks at it and starts from
// the run's own visible checkpoint 2, not from checkpoint 1, which would
// drop what checkpoint 2 holds pending.
func TestSettleThatCannotReclaimLeavesTheCheckpointUndecided(t *testing.T) {
	const term = 2400 * time.Millisecond
	srv := storetest.StartWithBucket(t, "state")
	p := storetest.NewProxy(t, srv.Endpoint())
	root := storetest.URL(p.URL, "state", "chk")
	src := testSource{splits: 2, n: 60000, keys: 31}
	stop := int64(src.splits * src.n)
	dir := t.TempDir()
	var seen atomic.Int64
	var once sync.Once
	var fired atomic.Bool
	res, err := Run(context.Background(), failingJob(src, 2, NewFileSink(filepath.Join(dir, "out"), formatResult), &seen, -1), RunOptions{
		Backend: Pebble, CheckpointDir: root, CheckpointInterval: 3 * time.Millisecond, StopAfter: stop, MaxRestarts: 3,
		RetainCheckpoints: 1000, CheckpointLease: term,
		inject: func(pt faultPoint, _ *task, cp *checkpoint) error {
			if pt != faultPublished || cp.ID != 2 {
				return nil
			}
			var out error
			once.Do(func() {
				fired.Store(true)
				// The renewals are refused from now on; the lease lapses
				// before the attempt fails.
				p.InjectOn(storetest.Status, "PutObject", "/chk/"+chkstore.HoldName, 1<<20, 403, "AccessDenied")
				time.Sleep(term/2 + term/6 + 300*time.Millisecond)
				// The store answers again after settle's Retake (two terms)
				// gave up, within Handle.run's.
				time.AfterFunc(2*term+term/2, p.ClearFaults)
				out = errInjected
			})
			return out
		}})
	if !fired.Load() {
		t.Fatalf("the run never published checkpoint 2: %v", err)
	}
	if err != nil {
		t.Fatalf("the run: %v (restored %v)", err, res.Restored)
	}
	two := chkdir.Path(root, 2)
	ids := completeCheckpoints(t, storetest.URL(srv.Endpoint(), "state", "chk"))
	t.Logf("complete checkpoints %v; restarts %d; restored %v", ids, res.Restarts, res.Restored)
	if !slices.Contains(ids, 2) {
		t.Fatalf("checkpoint 2 is not there: the scenario needs it visible")
	}
	if len(res.Restored) < 2 || res.Restored[1] != two {
		var from string
		if len(res.Restored) >= 2 {
			from = storage.Shown(res.Restored[1])
		}
		t.Errorf("the restart after checkpoint 2's publication was reported failed restored from %q, although checkpoint 2 (the run's own) is visible: "+
			"settle gave up on the root's hold and left nothing undecided", from)
	}
}

// A checkpoint that fails once every subtask has acknowledged it, before
// its publication, is discarded: on disk nothing of it stays beside the
// checkpoint directories (its staging directory), in a bucket the objects
// it created go.
func TestCheckpointFailedBeforePublicationIsDiscarded(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	src := testSource{splits: 2, n: 20000, keys: 31}
	stop := int64(src.splits * src.n)
	for _, root := range []string{filepath.Join(t.TempDir(), "chk"), storetest.URL(srv.Endpoint(), "state", "chk")} {
		var seen atomic.Int64
		var once sync.Once
		res, err := Run(context.Background(), failingJob(src, 2, NewCollectSink[windowResult](), &seen, -1), RunOptions{
			Backend: Pebble, CheckpointDir: root, CheckpointInterval: 3 * time.Millisecond, StopAfter: stop, MaxRestarts: 1,
			CheckpointLease: testLease,
			inject: func(p faultPoint, _ *task, cp *checkpoint) error {
				var out error
				if p == faultComplete && cp.ID == 2 {
					once.Do(func() { out = errInjected })
				}
				return out
			}})
		if err != nil || res.Restarts != 1 {
			t.Fatalf("%s: the run: %v after %d restarts; want it to end well after one", storage.Shown(root), err, res.Restarts)
		}
		if !chkstore.InBucket(root) {
			entries, err := os.ReadDir(root)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), storage.TempPrefix) {
					t.Errorf("%s: %s is left of the checkpoint that failed before its publication", root, e.Name())
				}
			}
			continue
		}
		bucketEndpoint = srv.Endpoint()
		checkBucketRoot(t, srv.Client(srv.Endpoint()), "state", "chk", 2)
	}
}

// waitForFirstCheckpoint waits for h's first completed checkpoint.
func waitForFirstCheckpoint(t *testing.T, h *Handle) {
	t.Helper()
	for h.LatestCheckpoint() == "" {
		select {
		case <-h.Done():
			_, err := h.Wait()
			t.Fatalf("the run ended before its first checkpoint: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// startHeldAtCheckpoint2 starts a run (A) into root and returns once its
// coordinator holds its checkpoint 2, every subtask having acknowledged
// it, just before its publication; closing resume lets it go on. The run
// is cancelled at the end of the test.
func startHeldAtCheckpoint2(t *testing.T, root string) (*Handle, chan struct{}) {
	t.Helper()
	blocked, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var seen atomic.Int64
	src := testSource{splits: 2, n: 200000, keys: 31}
	h, err := Start(context.Background(), failingJob(src, 2, NewCollectSink[windowResult](), &seen, -1), RunOptions{
		Backend: Pebble, CheckpointDir: root, CheckpointInterval: 3 * time.Millisecond, MaxRestarts: 3, RetainCheckpoints: 1000, CheckpointLease: testLease,
		inject: func(p faultPoint, _ *task, cp *checkpoint) error {
			if p == faultComplete && cp.ID == 2 {
				once.Do(func() {
					close(blocked)
					<-resume
				})
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Cancel)
	select {
	case <-blocked:
	case <-h.Done():
		_, err := h.Wait()
		t.Fatalf("A ended before its checkpoint 2: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("A never reached its checkpoint 2")
	}
	return h, resume
}

// waitForEnd waits up to d for the run h, which lost its root, to end.
func waitForEnd(t *testing.T, h *Handle, d time.Duration) (*Result, error) {
	t.Helper()
	select {
	case <-h.Done():
	case <-time.After(d):
		t.Fatal("A goes on after it lost its root")
	}
	return h.Wait()
}

// A restart with RestoreLatest chooses its checkpoint once it holds the
// root. Here the run that holds it (A) stops renewing its lease, as a
// frozen or partitioned process does, and goes on checkpointing until
// half its term has passed; a restart (B) started meanwhile waits the
// term out, takes the root, and must restore A's last checkpoint, not the
// latest when it started, which A's later output has superseded.
func TestRestoreLatestChoosesUnderTheHold(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	p := storetest.NewProxy(t, srv.Endpoint())
	src := testSource{splits: 2, n: 200000, keys: 31}
	var seenA, seenB atomic.Int64
	a, err := Start(context.Background(), failingJob(src, 2, NewCollectSink[windowResult](), &seenA, -1), RunOptions{
		Backend: Pebble, CheckpointDir: storetest.URL(p.URL, "state", "chk"), CheckpointInterval: 3 * time.Millisecond, CheckpointLease: testLease})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Cancel()
	waitForFirstCheckpoint(t, a)
	p.InjectOn(storetest.Status, "PutObject", "/chk/"+chkstore.HoldName, 1<<20, 503, "SlowDown")
	root := storetest.URL(srv.Endpoint(), "state", "chk")
	atStart, err := LatestCheckpoint(root)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), failingJob(src, 2, NewCollectSink[windowResult](), &seenB, -1), RunOptions{
		Backend: Pebble, CheckpointDir: root, RestoreLatest: true, CheckpointLease: testLease, StopAfter: int64(src.splits * src.n)})
	if err != nil {
		t.Fatalf("B: %v", err)
	}
	a.Cancel()
	resA, _ := a.Wait()
	if resA.LastCheckpoint == atStart {
		t.Fatalf("A completed no checkpoint after %s, the latest when B started: the scenario needs one", storage.Shown(atStart))
	}
	// A's locations go through the proxy, B's not: compared without
	// their parameters.
	var restored string
	if len(res.Restored) > 0 {
		restored = storage.Shown(res.Restored[0])
	}
	if restored != storage.Shown(resA.LastCheckpoint) {
		t.Errorf("B restored %q; want A's last checkpoint %s (the latest was %s when B started)",
			restored, storage.Shown(resA.LastCheckpoint), storage.Shown(atStart))
	}
}
