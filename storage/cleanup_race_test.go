package storage_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/storage"
)

// TestRetriedDeleteDuringARerun: a removal's DELETE of a dead run's
// orphan lands but its answer is lost, and the client sends it again after
// its backoff. Between the two, a rerun writes the same bytes, under a
// name that is free by then; the retried DELETE removes the rerun's file.
// The rerun must not publish a _metadata that names it.
func TestRetriedDeleteDuringARerun(t *testing.T) {
	ctx := context.Background()
	srv, direct, data, x := leftByADeadRun(t)

	proxy := storetest.NewProxy(t, srv.Endpoint())
	proxy.Inject(storetest.LostAnswer, "DeleteObject", 1, 0, "", 0)
	// A retry ~1-2 s after the lost answer, as the default policy's later
	// retries are.
	d := openVia(t, proxy.URL, "sp", storage.RetryPolicy{Attempts: 3, BaseDelay: 2 * time.Second, MaxDelay: 2 * time.Second})
	done := startRemoval(d, time.Hour, time.Now().Add(2*time.Hour))
	waitFor(t, "the first delete to land", func() bool {
		return proxy.Ops("DeleteObject") >= 1 && srv.Objects(t, "state", "sp")[x] == nil
	})

	rr := openTarget(t, direct, false)
	if got := writeNamed(t, rr, data); got != x {
		t.Fatalf("rerun named %s, dead run %s", got, x)
	}
	if srv.Objects(t, "state", "sp")[x] == nil {
		t.Fatal("the rerun's file is not there right after its write")
	}
	r := <-done
	t.Logf("RemoveOrphans = %v, %v; DeleteObject requests: %d", r.removed, r.err, proxy.Ops("DeleteObject"))
	writeMetadata(t, rr, "metadata naming "+x)
	perr := rr.Publish(ctx)
	objs := srv.Objects(t, "state", "sp")
	if perr == nil && objs[storage.MetadataName] != nil && objs[x] == nil {
		t.Fatalf("Publish succeeded; the published _metadata names %s, which the removal's retried DELETE took after the rerun created it (objects: %v)", x, objectNames(objs))
	}
	if perr != nil && !errors.Is(perr, storage.ErrConflict) {
		t.Fatalf("Publish = %v", perr)
	}
}

func objectNames[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestDeleteHeldPastTheLease: a removal's DELETE is held on its way while
// the removal cannot renew its lease, past the lease's term, after which a
// rerun takes the lease for a dead removal's and publishes. The delete must
// not reach the store after the removal stopped holding the lease.
func TestDeleteHeldPastTheLease(t *testing.T) {
	storage.SetLeaseTiming(t, 100*time.Millisecond, time.Second, 2500*time.Millisecond, 20*time.Millisecond)
	ctx := context.Background()
	srv, direct, data, x := leftByADeadRun(t)

	proxy := storetest.NewProxy(t, srv.Endpoint())
	proxy.Gather("DeleteObject", 2, 6*time.Second) // only one comes: held 6 s
	d := openVia(t, proxy.URL, "sp", fastRetries)
	done := startRemoval(d, time.Hour, time.Now().Add(2*time.Hour))
	waitFor(t, "the removal's delete", func() bool { return proxy.Holding() > 0 })
	// From now on the removal cannot renew its lease.
	proxy.Inject(storetest.Status, "PutObject", 1000, 403, "AccessDenied", 0)

	rr := rerun(t, direct, data, x)
	start := time.Now()
	perr := rr.Publish(ctx)
	t.Logf("Publish = %v after %v", perr, time.Since(start).Round(time.Millisecond))
	r := <-done
	t.Logf("RemoveOrphans = %v, %v", r.removed, r.err)
	objs := srv.Objects(t, "state", "sp")
	if perr == nil && objs[storage.MetadataName] != nil && objs[x] == nil {
		t.Fatalf("a published _metadata names %s, deleted by a DELETE the removal sent while it held the lease and that landed after the lease's term (RemoveOrphans err=%v; objects %v)", x, r.err, objectNames(objs))
	}
}

// TestLeaseWhoseCreateLostItsAnswer: the create-only PUT of the lease
// lands but its answer is lost; the retry meets the lease it made. The
// removal must know it for its own, remove the orphan, and release it.
func TestLeaseWhoseCreateLostItsAnswer(t *testing.T) {
	removed, objs, err := removeAnOrphanThrough(t, func(p *storetest.Proxy) {
		p.Inject(storetest.LostAnswer, "PutObject", 1, 0, "", 0)
	})
	if err != nil || len(removed) != 1 {
		t.Errorf("a removal whose lease PUT lost its answer = %v, %v; want the orphan removed", removed, err)
	}
	if objs[storage.CleanupName] != nil {
		t.Errorf("the removal left its own lease %s behind", storage.CleanupName)
	}
}

// removeAnOrphanThrough removes the one orphan at sp of a new bucket,
// through a proxy that faults sets up, and returns what RemoveOrphans
// returned and the objects left.
func removeAnOrphanThrough(t *testing.T, faults func(*storetest.Proxy)) ([]storage.Object, map[string][]byte, error) {
	t.Helper()
	srv := newBucket(t)
	putObject(t, srv, "sp/orphan", []byte("an orphan"))
	proxy := storetest.NewProxy(t, srv.Endpoint())
	faults(proxy)
	removed, err := storage.RemoveOrphans(context.Background(), openVia(t, proxy.URL, "sp", fastRetries), referencing(), 0, time.Now())
	objs := srv.Objects(t, "state", "sp")
	t.Logf("RemoveOrphans = %v, %v; objects %v", removed, err, objectNames(objs))
	return removed, objs, err
}

// TestLeaseWhoseRenewalLostItsAnswer: a renewal lands but its answer is
// lost; the retry carries the version before and is refused. The removal
// must know the lease for its own still, and finish; and so it must when
// the lease cannot even be read then, which is a failed renewal, to be
// tried again, not a lease taken by another.
func TestLeaseWhoseRenewalLostItsAnswer(t *testing.T) {
	for _, unread := range []bool{false, true} {
		t.Run(fmt.Sprintf("unread=%v", unread), func(t *testing.T) {
			storage.SetLeaseTiming(t, 100*time.Millisecond, 3*time.Second, 6*time.Second, 20*time.Millisecond)
			srv := newBucket(t)
			putObject(t, srv, "sp/orphan-a", []byte("a"))
			putObject(t, srv, "sp/orphan-b", []byte("b"))
			proxy := storetest.NewProxy(t, srv.Endpoint())
			proxy.Gather("DeleteObject", 2, 1500*time.Millisecond) // the first delete waits for renewals
			done := startRemoval(openVia(t, proxy.URL, "sp", fastRetries), 0, time.Now())
			waitFor(t, "the removal's delete", func() bool { return proxy.Holding() > 0 })
			if unread {
				proxy.Inject(storetest.Status, "GetObject", 4, 503, "SlowDown", 0)
			}
			proxy.Inject(storetest.LostAnswer, "PutObject", 1, 0, "", 0) // the next renewal
			r := <-done
			objs := srv.Objects(t, "state", "sp")
			if r.err != nil || len(r.removed) != 2 {
				t.Errorf("a removal whose renewal lost its answer = %v, %v; want both orphans removed", r.removed, r.err)
			}
			if objs[storage.CleanupName] != nil {
				t.Errorf("the removal left its lease behind")
			}
		})
	}
}

// TestLateReleaseSparesATakersLease: a removal's release is held on its
// way past the lease's term; a second removal takes the lease over, and
// holds its delete of a dead run's file. When the first release lands, the
// second's lease must stay, so that a rerun waits for the second removal
// and then finds its file gone, rather than publish without it.
func TestLateReleaseSparesATakersLease(t *testing.T) {
	storage.SetLeaseTiming(t, 100*time.Millisecond, time.Second, 2500*time.Millisecond, 20*time.Millisecond)
	ctx := context.Background()
	srv, direct, data, x := leftByADeadRun(t)

	// The first removal deletes nothing (all too young); its release is held 7 s.
	p1 := storetest.NewProxy(t, srv.Endpoint())
	p1.Gather("DeleteObject", 2, 7*time.Second)
	first := startRemoval(openVia(t, p1.URL, "sp", fastRetries), time.Hour, time.Now())
	waitFor(t, "the first removal's release", func() bool { return p1.Holding() > 0 })
	time.Sleep(3600 * time.Millisecond) // past the term: the lease looks dead

	p2 := storetest.NewProxy(t, srv.Endpoint())
	p2.Gather("DeleteObject", 2, 8*time.Second)
	second := startRemoval(openVia(t, p2.URL, "sp", fastRetries), time.Hour, time.Now().Add(2*time.Hour))
	waitFor(t, "the second removal's delete", func() bool { return p2.Holding() > 0 })

	rr := rerun(t, direct, data, x)
	<-first // its release may fail: it was held past the lease's term
	if srv.Objects(t, "state", "sp")[storage.CleanupName] == nil {
		t.Fatal("the first removal's late release removed the lease the second took over")
	}
	perr := rr.Publish(ctx)
	serr := (<-second).err
	objs := srv.Objects(t, "state", "sp")
	t.Logf("Publish = %v; second removal = %v; objects %v", perr, serr, objectNames(objs))
	if perr == nil && objs[storage.MetadataName] != nil && objs[x] == nil {
		t.Fatalf("the first removal's release deleted the second's live lease; a published _metadata names %s, which the second removal deleted", x)
	}
}

// TestDeadLeaseIsAnOrphan: the lease of a removal that died is listed as
// an orphan once its term is over, and the next removal takes it over and
// removes it.
func TestDeadLeaseIsAnOrphan(t *testing.T) {
	ctx := context.Background()
	srv := leaseOfADeadRemoval(t)
	d := openVia(t, srv.Endpoint(), "sp", fastRetries)
	if orphans, err := storage.Orphans(ctx, d, nil); err != nil || len(orphans) != 0 {
		t.Fatalf("Orphans of a live lease = %v, %v; want none", orphans, err)
	}
	time.Sleep(3600 * time.Millisecond) // past the term, in the store's whole seconds
	orphans, err := storage.Orphans(ctx, d, nil)
	if err != nil || len(orphans) != 1 || orphans[0].Name != storage.CleanupName {
		t.Fatalf("Orphans of a dead lease = %v, %v; want the lease", orphans, err)
	}
	removed, err := storage.RemoveOrphans(ctx, d, referencing(), time.Hour, time.Now())
	if err != nil || len(removed) != 1 || removed[0].Name != storage.CleanupName {
		t.Fatalf("RemoveOrphans = %v, %v; want the dead lease removed", removed, err)
	}
	if objs := srv.Objects(t, "state", "sp"); len(objs) != 0 {
		t.Fatalf("left: %v", objectNames(objs))
	}
}

// leaseOfADeadRemoval shortens the lease's timing for the test and starts
// a bucket whose prefix sp holds a lease such as a removal that died
// leaves, written now.
func leaseOfADeadRemoval(t *testing.T) *storetest.Server {
	t.Helper()
	storage.SetLeaseTiming(t, 100*time.Millisecond, time.Second, 2500*time.Millisecond, 20*time.Millisecond)
	srv := newBucket(t)
	putObject(t, srv, "sp/"+storage.CleanupName, []byte(`{"holder":"dead"}`))
	return srv
}
