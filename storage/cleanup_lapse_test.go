package storage_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/storage"
)

// ctlProxy sits in front of a storetest.Proxy and adds faults that it has
// not: lease renewals answered 503 while failLeasePuts is set, listing
// answers held back (the listing is carried out at once, its answer
// delivered later) and a DELETE of one key held on its way and carried out
// late even when its client has given up on it, as a request already on
// the wire is.
type ctlProxy struct {
	*storetest.Proxy
	URL string

	failLeasePuts atomic.Bool
	leasePuts     atomic.Int64 // PUTs of the lease answered 503

	mu       sync.Mutex
	listGate chan struct{}
	lateKey  string
	lateBy   time.Duration
	lateGate chan struct{} // if set, the late DELETE waits for it rather than lateBy
	lateSeen atomic.Int64  // late DELETEs that arrived
	// lateLanded is closed once the late DELETE was carried out.
	lateLanded chan struct{}
}

func newCtlProxy(t *testing.T, endpoint string) *ctlProxy {
	c := &ctlProxy{Proxy: storetest.NewProxy(t, endpoint), lateLanded: make(chan struct{})}
	s := httptest.NewServer(c)
	t.Cleanup(s.Close)
	c.URL = s.URL
	return c
}

func copyRecorded(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

func (c *ctlProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := storetest.Operation(r)
	lease := strings.HasSuffix(r.URL.Path, "/"+storage.CleanupName)
	c.mu.Lock()
	gate, lateKey, lateBy, lateGate := c.listGate, c.lateKey, c.lateBy, c.lateGate
	c.mu.Unlock()
	switch {
	case op == "PutObject" && lease && c.failLeasePuts.Load():
		io.Copy(io.Discard, r.Body)
		c.leasePuts.Add(1)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>injected</Message></Error>`)
	case op == "ListObjects" && gate != nil:
		rec := httptest.NewRecorder()
		c.Proxy.ServeHTTP(rec, r)
		<-gate
		copyRecorded(w, rec)
	case op == "DeleteObject" && lateKey != "" && strings.HasSuffix(r.URL.Path, "/"+lateKey):
		c.lateSeen.Add(1)
		if lateGate != nil {
			<-lateGate
		} else {
			time.Sleep(lateBy)
		}
		rec := httptest.NewRecorder()
		c.Proxy.ServeHTTP(rec, r.WithContext(context.WithoutCancel(r.Context())))
		close(c.lateLanded)
		copyRecorded(w, rec)
	default:
		c.Proxy.ServeHTTP(w, r)
	}
}

// TestLeaseNotRevivedAfterItLookedDead: a removal's listing is slow (its
// answer comes ~3 s after the listing was made); meanwhile its renewals
// fail (503) for longer than leaseTerm, so that the lease looks dead and a
// rerun that wrote the dead run's file again publishes past it. Then the
// renewals succeed again, which makes the lease fresh in the holder's
// eyes: it deletes the file the listing saw, which the published
// _metadata names. A holder whose last renewal was leaseHold old must not
// delete again, even if a later renewal gets through.
func TestLeaseNotRevivedAfterItLookedDead(t *testing.T) {
	storage.SetLeaseTiming(t, 100*time.Millisecond, time.Second, 2500*time.Millisecond, 20*time.Millisecond)
	ctx := context.Background()
	srv, direct, data, x := leftByADeadRun(t)

	c := newCtlProxy(t, srv.Endpoint())
	gate := make(chan struct{})
	c.mu.Lock()
	c.listGate = gate
	c.mu.Unlock()
	d := openVia(t, c.URL, "sp", fastRetries)
	done := startRemoval(d, time.Hour, time.Now().Add(2*time.Hour))
	waitFor(t, "the lease", func() bool { return srv.Objects(t, "state", "sp")[storage.CleanupName] != nil })
	waitFor(t, "the listing", func() bool { return c.Ops("ListObjects") > 0 })
	c.failLeasePuts.Store(true)

	rr := rerun(t, direct, data, x)
	start := time.Now()
	if err := rr.Publish(ctx); err != nil {
		t.Fatalf("the rerun's Publish past a lease not renewed for its term: %v", err)
	}
	t.Logf("the rerun published after waiting %v; %d renewals refused", time.Since(start).Round(time.Millisecond), c.leasePuts.Load())

	c.failLeasePuts.Store(false)
	time.Sleep(300 * time.Millisecond) // a renewal gets through
	close(gate)
	r := <-done
	objs := srv.Objects(t, "state", "sp")
	t.Logf("RemoveOrphans = %v, %v; objects %v", r.removed, r.err, objectNames(objs))
	if objs[storage.MetadataName] != nil && objs[x] == nil {
		t.Fatalf("a published _metadata names %s, deleted by a removal whose lease had gone unrenewed past its term while the rerun published, and that deleted again once a renewal got through", x)
	}
}

// TestReleaseOfALapsedLeaseIsReported: a removal takes over a dead
// removal's lease; its renewals then fail while it reads the savepoint's
// file list for longer than leaseHold. It finds nothing to delete, and
// cannot release the lease (its hold is over). RemoveOrphans must not then
// report success with the dead lease among the removed files while a
// lease is still there.
func TestReleaseOfALapsedLeaseIsReported(t *testing.T) {
	ctx := context.Background()
	srv := leaseOfADeadRemoval(t)
	time.Sleep(3600 * time.Millisecond) // past the term, in whole seconds

	c := newCtlProxy(t, srv.Endpoint())
	d := openVia(t, c.URL, "sp", fastRetries)
	slowRead := func(context.Context) ([]string, error) {
		c.failLeasePuts.Store(true) // from now on no renewal gets through
		time.Sleep(1500 * time.Millisecond)
		return nil, nil
	}
	removed, err := storage.RemoveOrphans(ctx, d, slowRead, time.Hour, time.Now())
	objs := srv.Objects(t, "state", "sp")
	t.Logf("RemoveOrphans = %v, %v; objects %v", removed, err, objectNames(objs))
	claimed := false
	for _, o := range removed {
		claimed = claimed || o.Name == storage.CleanupName
	}
	if objs[storage.CleanupName] != nil && err == nil {
		if claimed {
			t.Fatalf("RemoveOrphans reported %s removed, with no error, while a lease is still there", storage.CleanupName)
		}
		t.Fatalf("RemoveOrphans left its lease behind and reported no error")
	}
}
