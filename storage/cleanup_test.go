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

// TestRerunDuringARemovalOfOrphans races a removal of orphans against a
// run that writes again the content-named file a dead run left. The
// removal lists the old copy as an orphan; its delete is held in the proxy
// while the rerun writes the file again, which renews it, and then lands.
// The rerun must not publish a _metadata whose file is gone: it waits for
// the removal to end, finds its file missing, and publishes nothing.
func TestRerunDuringARemovalOfOrphans(t *testing.T) {
	storage.SetLeaseTiming(t, time.Second, 3*time.Second, 6*time.Second, 20*time.Millisecond)
	ctx := context.Background()
	srv := newBucket(t)
	direct := storetest.URL(srv.Endpoint(), "state", "sp")
	data := []byte("the bytes of a data file both runs write")
	x := writeNamed(t, openTarget(t, direct, false), data) // the dead run's

	proxy := storetest.NewProxy(t, srv.Endpoint())
	proxy.Gather("DeleteObject", 2, 2*time.Second)
	d := openVia(t, proxy.URL, "sp", fastRetries)
	type result struct {
		removed []storage.Object
		err     error
	}
	done := make(chan result, 1)
	go func() {
		// An hour from now, every file is old enough to go.
		removed, err := storage.RemoveOrphans(ctx, d, referencing(), time.Hour, time.Now().Add(2*time.Hour))
		done <- result{removed, err}
	}()
	waitFor(t, "the removal's delete", func() bool { return proxy.Holding() > 0 })
	if _, ok := srv.Objects(t, "state", "sp")[storage.CleanupName]; !ok {
		t.Fatalf("a removal under way holds no %s", storage.CleanupName)
	}

	rerun := openTarget(t, direct, false)
	if got := writeNamed(t, rerun, data); got != x {
		t.Fatalf("the rerun named its file %s, the dead run %s", got, x)
	}
	mw, err := rerun.Create(ctx, storage.MetadataName)
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, mw, []byte("metadata naming "+x))
	start := time.Now()
	err = rerun.Publish(ctx)
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

// TestRerunAfterARemovalOfOrphans: a run that created its files publishes
// with no look for a removal; a run that wrote a dead run's file again is
// checked against a removal that ran wholly between that write and its
// publish, which the lease, gone by then, cannot show.
func TestRerunAfterARemovalOfOrphans(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	proxy := storetest.NewProxy(t, srv.Endpoint())
	openProxied := func(prefix string) storage.Target {
		t.Helper()
		return openTarget(t, storetest.URL(proxy.URL, "state", prefix), false)
	}
	fresh := openProxied("sp")
	name := writeNamed(t, fresh, []byte("fresh"))
	mw, _ := fresh.Create(ctx, storage.MetadataName)
	writeAll(t, mw, []byte("metadata"))
	heads, lists := proxy.Ops("HeadObject"), proxy.Ops("ListObjects")
	if err := fresh.Publish(ctx); err != nil {
		t.Fatalf("Publish of a run that created its files: %v", err)
	}
	if h, l := proxy.Ops("HeadObject")-heads, proxy.Ops("ListObjects")-lists; h != 0 || l != 0 {
		t.Errorf("the publish of a run that created its files made %d HEADs and %d listings; want none", h, l)
	}
	if objs := srv.Objects(t, "state", "sp"); len(objs) != 2 || objs[name] == nil {
		t.Fatalf("objects = %v; want _metadata and %s", objs, name)
	}

	data := []byte("written by a dead run and again")
	x := writeNamed(t, openProxied("sp2"), data) // the dead run's
	rerun := openProxied("sp2")
	writeNamed(t, rerun, data)
	d := openVia(t, srv.Endpoint(), "sp2", fastRetries)
	if _, err := storage.RemoveOrphans(ctx, d, referencing(), time.Hour, time.Now().Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	mw, _ = rerun.Create(ctx, storage.MetadataName)
	writeAll(t, mw, []byte("metadata"))
	if err := rerun.Publish(ctx); !errors.Is(err, storage.ErrConflict) || !strings.Contains(err.Error(), x) {
		t.Fatalf("Publish after a removal took its file = %v; want ErrConflict naming %s", err, x)
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
	storage.SetLeaseTiming(t, 100*time.Millisecond, time.Second, 2500*time.Millisecond, 20*time.Millisecond)
	ctx := context.Background()
	srv := newBucket(t)
	loc := storetest.URL(srv.Endpoint(), "state", "sp")
	tg := openTarget(t, loc, false)
	orphan := writeNamed(t, tg, []byte("an orphan"))

	// A live lease: the first removal's delete is held, and renewed
	// meanwhile, for longer than the lease's term.
	proxy := storetest.NewProxy(t, srv.Endpoint())
	proxy.Gather("DeleteObject", 2, 5*time.Second)
	first := make(chan error, 1)
	go func() {
		_, err := storage.RemoveOrphans(ctx, openVia(t, proxy.URL, "sp", fastRetries), referencing(), time.Hour, time.Now().Add(2*time.Hour))
		first <- err
	}()
	waitFor(t, "the first removal's delete", func() bool { return proxy.Holding() > 0 })
	time.Sleep(3 * time.Second) // past the term: only renewals keep it
	d := openVia(t, srv.Endpoint(), "sp", fastRetries)
	if _, err := storage.RemoveOrphans(ctx, d, referencing(), 0, time.Now()); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("a second removal while the first holds the lease = %v; want ErrConflict", err)
	}
	forced := openTarget(t, loc, true)
	mw, _ := forced.Create(ctx, storage.MetadataName)
	writeAll(t, mw, []byte("metadata"))
	if err := forced.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.Objects(t, "state", "sp")[storage.CleanupName]; !ok {
		t.Fatal("a forced publish deleted the lease of a removal under way")
	}
	if err := <-first; err != nil {
		t.Fatalf("the first removal: %v", err)
	}
	if objs := srv.Objects(t, "state", "sp"); objs[orphan] != nil || objs[storage.CleanupName] != nil {
		t.Fatalf("after the first removal: %v; want %s and the lease gone", objs, orphan)
	}

	// A dead holder's lease: a writer publishes past it, a removal takes
	// it over and releases it.
	putObject(t, srv, "sp2/"+storage.CleanupName, []byte(`{"holder":"dead"}`))
	time.Sleep(3600 * time.Millisecond)
	tg2 := openTarget(t, storetest.URL(srv.Endpoint(), "state", "sp2"), false)
	kept := writeNamed(t, tg2, []byte("kept"))
	mw, _ = tg2.Create(ctx, storage.MetadataName)
	writeAll(t, mw, []byte("metadata"))
	if err := tg2.Publish(ctx); err != nil {
		t.Fatalf("Publish past a dead holder's lease: %v", err)
	}
	d2 := openVia(t, srv.Endpoint(), "sp2", fastRetries)
	if orphans, err := storage.Orphans(ctx, d2, []string{kept}); err != nil || len(orphans) != 0 {
		t.Fatalf("Orphans = %v, %v; the lease is none", orphans, err)
	}
	if _, err := storage.RemoveOrphans(ctx, d2, referencing(kept), 0, time.Now()); err != nil {
		t.Fatalf("a removal over a dead holder's lease: %v", err)
	}
	if objs := srv.Objects(t, "state", "sp2"); len(objs) != 2 || objs[kept] == nil || objs[storage.MetadataName] == nil {
		t.Fatalf("objects = %v; want _metadata and %s", objs, kept)
	}
}

// TestRemovalStopsWithoutItsLease: a removal whose renewals fail deletes
// nothing more once its last renewal is leaseHold old, and says why.
func TestRemovalStopsWithoutItsLease(t *testing.T) {
	storage.SetLeaseTiming(t, 100*time.Millisecond, 600*time.Millisecond, 1200*time.Millisecond, 20*time.Millisecond)
	ctx := context.Background()
	srv := newBucket(t)
	const n = 20
	for i := range n {
		putObject(t, srv, fmt.Sprintf("sp/orphan-%02d", i), []byte{byte(i)})
	}
	proxy := storetest.NewProxy(t, srv.Endpoint())
	proxy.SetLatency(100 * time.Millisecond)
	d := openVia(t, proxy.URL, "sp", storage.RetryPolicy{Attempts: 1})
	type result struct {
		removed []storage.Object
		err     error
	}
	done := make(chan result, 1)
	go func() {
		removed, err := storage.RemoveOrphans(ctx, d, referencing(), 0, time.Now())
		done <- result{removed, err}
	}()
	// Once the lease is taken, every renewal is refused.
	waitFor(t, "the lease", func() bool { return srv.Objects(t, "state", "sp")[storage.CleanupName] != nil })
	proxy.Inject(storetest.Status, "PutObject", 1000, 403, "AccessDenied", 0)
	r := <-done
	if r.err == nil || !strings.Contains(r.err.Error(), "last renewed") {
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
