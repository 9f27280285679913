package storage_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/storage"
)

// writeNamed writes b as a content-named file of tg and returns its name.
func writeNamed(t *testing.T, tg storage.Target, b []byte) string {
	t.Helper()
	w, err := tg.CreateNamed(context.Background(), "data-000", ".data")
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, b)
	return w.Name()
}

// waitFor polls cond until it holds, or fails the test after a while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// removal is the outcome of a RemoveOrphans run in the background.
type removal struct {
	removed []storage.Object
	err     error
}

// startRemoval runs RemoveOrphans of d in the background, with nothing
// referenced, counting ages at now.
func startRemoval(d storage.Dir, minAge time.Duration, now time.Time) <-chan removal {
	done := make(chan removal, 1)
	go func() {
		removed, err := storage.RemoveOrphans(context.Background(), d, referencing(), minAge, now)
		done <- removal{removed, err}
	}()
	return done
}

// leftByADeadRun starts a bucket whose prefix sp holds a content-named file
// that a run which died before its _metadata wrote, and returns the
// server, sp's URL, the file's bytes and its name.
func leftByADeadRun(t *testing.T) (*storetest.Server, string, []byte, string) {
	t.Helper()
	srv := newBucket(t)
	direct := storetest.URL(srv.Endpoint(), "state", "sp")
	data := []byte("the bytes of a data file both runs write")
	return srv, direct, data, writeNamed(t, openTarget(t, direct, false), data)
}

// rerun opens a run into direct that writes the dead run's file again,
// and its _metadata, ready to publish.
func rerun(t *testing.T, direct string, data []byte, x string) storage.Target {
	t.Helper()
	tg := openTarget(t, direct, false)
	if got := writeNamed(t, tg, data); got != x {
		t.Fatalf("the rerun named its file %s, the dead run %s", got, x)
	}
	writeMetadata(t, tg, "metadata naming "+x)
	return tg
}

// writeMetadata writes a _metadata for tg to publish.
func writeMetadata(t *testing.T, tg storage.Target, text string) {
	t.Helper()
	mw, err := tg.Create(context.Background(), storage.MetadataName)
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, mw, []byte(text))
}

// TestRerunDuringARemovalOfOrphans races a removal of orphans against a
// run that writes again the content-named file a dead run left. The
// removal lists the old copy as an orphan; its delete is held in the proxy
// while the rerun writes the file again, which renews it, and then lands.
// The rerun must not publish a _metadata whose file is gone: it waits for
// the removal to end, finds its file missing, and publishes nothing.
func TestRerunDuringARemovalOfOrphans(t *testing.T) {
	storage.SetLeaseTiming(t, time.Second, 3*time.Second, 6*time.Second, 20*time.Millisecond)
	ctx := context.Background()
	srv, direct, data, x := leftByADeadRun(t)

	proxy := storetest.NewProxy(t, srv.Endpoint())
	proxy.Gather("DeleteObject", 2, 2*time.Second)
	d := openVia(t, proxy.URL, "sp", fastRetries)
	done := startRemoval(d, time.Hour, time.Now().Add(2*time.Hour))
	waitFor(t, "the removal's delete", func() bool { return proxy.Holding() > 0 })
	if _, ok := srv.Objects(t, "state", "sp")[storage.CleanupName]; !ok {
		t.Fatalf("a removal under way holds no %s", storage.CleanupName)
	}

	rr := rerun(t, direct, data, x)
	start := time.Now()
	err := rr.Publish(ctx)
	waited := time.Since(start)
	r := <-done
	if r.err != nil || len(r.removed) != 1 || r.removed[0].Name != x {
		t.Fatalf("RemoveOrphans = %v, %v; want %s removed", r.removed, r.err, x)
	}
	if !errors.Is(err, storage.ErrConflict) || !strings.Contains(err.Error(), x) {
		t.Fatalf("Publish after the removal took its file = %v; want ErrConflict naming %s", err, x)
	}
	if waited < time.Second {
		t.Errorf("Publish returned after %v, before the removal's delete was let on", waited)
	}
	objs := srv.Objects(t, "state", "sp")
	if _, ok := objs[storage.MetadataName]; ok {
		t.Fatalf("a _metadata is visible whose file %s is gone: %v", x, objs)
	}
	if _, ok := objs[storage.CleanupName]; ok {
		t.Fatalf("the removal left its lease: %v", objs)
	}
}

// TestRerunAfterARemovalOfOrphans publishes once the removal is over: the
// files the rerun wrote are there, and so the savepoint is published. A
// removal that ran wholly between the rerun's writes and its publish is
// found by the check of its files, not by the lease.
func TestRerunAfterARemovalOfOrphans(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	kept := openTarget(t, storetest.URL(srv.Endpoint(), "state", "sp"), false)
	name := writeNamed(t, kept, []byte("kept"))
	writeMetadata(t, kept, "metadata")
	if err := kept.Publish(ctx); err != nil {
		t.Fatalf("Publish with no removal under way: %v", err)
	}
	if objs := srv.Objects(t, "state", "sp"); len(objs) != 2 || objs[name] == nil {
		t.Fatalf("objects = %v; want _metadata and %s", objs, name)
	}

	lost := openTarget(t, storetest.URL(srv.Endpoint(), "state", "sp2"), false)
	gone := writeNamed(t, lost, []byte("lost"))
	d2 := openVia(t, srv.Endpoint(), "sp2", fastRetries)
	if _, err := storage.RemoveOrphans(ctx, d2, referencing(), time.Hour, time.Now().Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	writeMetadata(t, lost, "metadata")
	if err := lost.Publish(ctx); !errors.Is(err, storage.ErrConflict) || !strings.Contains(err.Error(), gone) {
		t.Fatalf("Publish after a removal took its file = %v; want ErrConflict naming %s", err, gone)
	}
	if objs := srv.Objects(t, "state", "sp2"); len(objs) != 0 {
		t.Fatalf("objects left at sp2 = %v; want none", objs)
	}
}

// TestLeaseOfARemovalOfOrphans: a second removal is refused while the
// first holds the lease; a lease its holder stopped renewing is taken
// over; a writer publishes past a dead holder's lease, and a forced
// publish does not delete a live one.
func TestLeaseOfARemovalOfOrphans(t *testing.T) {
	// The store gives times in whole seconds: the term is well above one.
	storage.SetLeaseTiming(t, 100*time.Millisecond, 2*time.Second, 4*time.Second, 20*time.Millisecond)
	ctx := context.Background()
	srv := newBucket(t)
	loc := storetest.URL(srv.Endpoint(), "state", "sp")
	const n = 12
	for i := range n {
		putObject(t, srv, fmt.Sprintf("sp/orphan-%02d", i), []byte{byte(i)})
	}

	// A live lease: the first removal's requests take 0.3 s each (a delete
	// is a look and the delete), so that it works for longer than the
	// lease's term, which only its renewals extend.
	proxy := storetest.NewProxy(t, srv.Endpoint())
	proxy.SetLatency(300 * time.Millisecond)
	first := make(chan error, 1)
	start := time.Now()
	go func() {
		removed, err := storage.RemoveOrphans(ctx, openVia(t, proxy.URL, "sp", fastRetries), referencing(), 0, time.Now())
		if err == nil && len(removed) != n {
			err = fmt.Errorf("removed %d of %d orphans", len(removed), n)
		}
		first <- err
	}()
	time.Sleep(5 * time.Second) // past the term
	d := openVia(t, srv.Endpoint(), "sp", fastRetries)
	if _, err := storage.RemoveOrphans(ctx, d, referencing(), 0, time.Now()); !errors.Is(err, storage.ErrLeaseHeld) {
		t.Fatalf("a second removal while the first holds the lease = %v; want ErrLeaseHeld", err)
	}
	forced := openTarget(t, loc, true)
	writeMetadata(t, forced, "metadata")
	if err := forced.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.Objects(t, "state", "sp")[storage.CleanupName]; !ok {
		t.Fatal("a forced publish deleted the lease of a removal under way")
	}
	if err := <-first; err != nil {
		t.Fatalf("the first removal: %v", err)
	}
	if d := time.Since(start); d < 5*time.Second {
		t.Fatalf("the first removal ended after %v, within the lease's term", d)
	}
	if objs := srv.Objects(t, "state", "sp"); objs[storage.CleanupName] != nil || objs["orphan-00"] != nil {
		t.Fatalf("after the first removal: %v; want the orphans and the lease gone", objectNames(objs))
	}

	// A dead holder's lease: a writer publishes past it, a removal takes
	// it over and releases it.
	putObject(t, srv, "sp2/"+storage.CleanupName, []byte(`{"holder":"dead"}`))
	time.Sleep(5200 * time.Millisecond)
	tg2 := openTarget(t, storetest.URL(srv.Endpoint(), "state", "sp2"), false)
	kept := writeNamed(t, tg2, []byte("kept"))
	writeMetadata(t, tg2, "metadata")
	if err := tg2.Publish(ctx); err != nil {
		t.Fatalf("Publish past a dead holder's lease: %v", err)
	}
	d2 := openVia(t, srv.Endpoint(), "sp2", fastRetries)
	if _, err := storage.RemoveOrphans(ctx, d2, referencing(kept), 0, time.Now()); err != nil {
		t.Fatalf("a removal over a dead holder's lease: %v", err)
	}
	if objs := srv.Objects(t, "state", "sp2"); len(objs) != 2 || objs[kept] == nil || objs[storage.MetadataName] == nil {
		t.Fatalf("objects = %v; want _metadata and %s", objectNames(objs), kept)
	}
}

// TestRemovalStopsWithoutItsLease: a removal whose renewals fail sends no
// delete once its last renewal is leaseHold old, and says why.
func TestRemovalStopsWithoutItsLease(t *testing.T) {
	storage.SetLeaseTiming(t, 100*time.Millisecond, 600*time.Millisecond, 1200*time.Millisecond, 20*time.Millisecond)
	srv := newBucket(t)
	const n = 20
	for i := range n {
		putObject(t, srv, fmt.Sprintf("sp/orphan-%02d", i), []byte{byte(i)})
	}
	proxy := storetest.NewProxy(t, srv.Endpoint())
	proxy.SetLatency(100 * time.Millisecond)
	d := openVia(t, proxy.URL, "sp", storage.RetryPolicy{Attempts: 1})
	done := startRemoval(d, 0, time.Now())
	// Once the lease is taken, every renewal is refused.
	waitFor(t, "the lease", func() bool { return srv.Objects(t, "state", "sp")[storage.CleanupName] != nil })
	proxy.Inject(storetest.Status, "PutObject", 1000, 403, "AccessDenied", 0)
	r := <-done
	// It stops at its lease's deadline: before a delete, or during one,
	// whose outcome it then does not know, and leaves the lease to lapse.
	if r.err == nil || !strings.Contains(r.err.Error(), "last renewed") && !strings.Contains(r.err.Error(), "left to lapse") {
		t.Fatalf("RemoveOrphans = %v; want it stopped for its lease", r.err)
	}
	if len(r.removed) >= n {
		t.Fatalf("removed all %d orphans without a lease", n)
	}
	objs := srv.Objects(t, "state", "sp")
	if objs[storage.CleanupName] == nil || len(objs) != n-len(r.removed)+1 {
		t.Fatalf("%d removed, and left: %v; want the rest and the lease, which it no longer holds", len(r.removed), objs)
	}
}
