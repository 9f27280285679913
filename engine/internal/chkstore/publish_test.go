package chkstore

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/storage"
)

// Publish makes its requests (the PUT of the manifest _incremental.json,
// then Writer.Finish's PUT of _metadata) each under a deadline of its own,
// so that a renewal made between them counts. Here the lease (3 s term) is renewed
// every 500 ms all along, straight through, and nobody else wants the
// root. Publish starts just before a renewal is due (deadline about 1.1 s
// away); the manifest's PUT takes 600 ms, the _metadata PUT waits 800 ms
// before it reaches the store: each request well within half the term, and
// a renewal lands between them (per request, _metadata's deadline would be
// about 1.6 s away). Under one deadline for both, the _metadata PUT was
// cut and Publish failed with ErrRootHeld although the hold was never in
// doubt.
func TestPublishUnderAHealthyHold(t *testing.T) {
	const term = 3 * time.Second
	srv := storetest.StartWithBucket(t, "state")
	ctx := context.Background()

	var mu sync.Mutex
	var renewed time.Time // when the last PUT of the lease was answered
	target, _ := url.Parse(srv.Endpoint())
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/"+chkdir.ManifestName) {
			time.Sleep(600 * time.Millisecond)
		}
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/"+storage.MetadataName) {
			// Read in full, so that a client that gives up is seen; a
			// request given up before it reaches the store never does.
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			select {
			case <-time.After(800 * time.Millisecond):
			case <-r.Context().Done():
				t.Logf("the PUT of _metadata was given up before it reached the store")
				return
			}
		}
		rp.ServeHTTP(w, r)
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/"+HoldName) {
			mu.Lock()
			renewed = time.Now()
			mu.Unlock()
		}
	}))
	defer proxy.Close()
	root := storetest.URL(proxy.URL, "state", "chk")

	hold, err := HoldRoot(ctx, root, term)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Release(ctx)
	s, cp := beginCheckpoint(t, ctx, root, hold)
	addNative(t, ctx, cp, "x", "db-0-0/OPTIONS-000001")

	// Publish just before the next renewal is due (every 500 ms).
	time.Sleep(time.Second)
	for {
		mu.Lock()
		age := time.Since(renewed)
		mu.Unlock()
		if age >= 380*time.Millisecond && age < 480*time.Millisecond {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	err = s.Publish(ctx, cp)
	t.Logf("Publish after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if herr := hold.Check(ctx); herr != nil {
		t.Fatalf("the hold itself was lost: %v", herr)
	}
	if err != nil {
		t.Errorf("Publish under a hold renewed all along, no request longer than half the term: %v", err)
	}
}
