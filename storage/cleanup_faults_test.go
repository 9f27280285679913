package storage_test

// Faults of the orphan-removal lease that need a proxy which lets a
// request on after the client gave up, or holds an answer after the
// request was carried out: what a store and a network can do.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/storage"
)

// scripted is a forwarding proxy whose test decides, per request, what
// happens to it. Unlike storetest.Proxy it can let a request go on to the
// server after the client gave up on it (as a server does with a request
// it has received), and hold an answer after the request was carried out.
type scripted struct {
	URL    string
	target string
	decide func(op, key string, r *http.Request) step
}

// step is what becomes of one request.
type step struct {
	// delay before the request is forwarded; with detached it is
	// forwarded even if the client has gone meanwhile.
	delay    time.Duration
	detached bool
	// hang: the request is carried out, and its answer held until the
	// client gives up.
	hang bool
	// status, when set, answers with that error and forwards nothing.
	status int
	code   string
	// before runs just before the request is forwarded.
	before func()
	// landed, if set, is closed once the server has answered.
	landed chan struct{}
}

func newScripted(t *testing.T, target string, decide func(op, key string, r *http.Request) step) *scripted {
	p := &scripted{target: target, decide: decide}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func (p *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := storetest.Operation(r)
	key := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/devstoreaccount1"), "/state/")
	s := p.decide(op, key, r)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if s.status != 0 {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(s.status)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>scripted</Message></Error>`, s.code)
		return
	}
	ctx := r.Context()
	if s.detached || s.hang {
		ctx = context.WithoutCancel(ctx)
	}
	if s.delay > 0 {
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			return
		}
	}
	if s.before != nil {
		s.before()
	}
	var rb io.Reader = http.NoBody
	if len(body) > 0 {
		rb = bytes.NewReader(body)
	}
	out, err := http.NewRequestWithContext(ctx, r.Method, p.target+r.URL.RequestURI(), rb)
	if err != nil {
		panic(err)
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host // the client signed the Host it sent
	out.ContentLength = int64(len(body))
	resp, err := http.DefaultTransport.RoundTrip(out)
	if s.landed != nil {
		close(s.landed)
	}
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	defer resp.Body.Close()
	if s.hang {
		<-r.Context().Done()
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// leaseModTime is the store's LastModified of sp's lease, as a writer's
// awaitCleanup or another removal's takeCleanupLease see it.
func leaseModTime(srv *storetest.Server) (time.Time, bool) {
	out, err := srv.Client(srv.Endpoint()).HeadObject(context.Background(), &s3.HeadObjectInput{
		Bucket: aws.String("state"), Key: aws.String("sp/" + storage.CleanupName)})
	if err != nil {
		return time.Time{}, false
	}
	return *out.LastModified, true
}

// TestLeaseOutlivesADeleteInFlight: the removal's DELETE of a dead run's
// file is received by the server, which is slow to carry it out; the
// client gives up at the hold's deadline. The removal must not release its
// lease then, but leave it to lapse: a rerun waits for it, and finds its
// file gone when the DELETE lands 2.5 s after it was sent, within
// leaseTerm-leaseHold.
func TestLeaseOutlivesADeleteInFlight(t *testing.T) {
	storage.SetLeaseTiming(t, 100*time.Millisecond, time.Second, 6*time.Second, 20*time.Millisecond)
	ctx := context.Background()
	srv, direct, data, x := leftByADeadRun(t)

	landed := make(chan struct{})
	var sent atomic.Int64
	p := newScripted(t, srv.Endpoint(), func(op, key string, r *http.Request) step {
		if op == "DeleteObject" && key == "sp/"+x {
			sent.Store(time.Now().UnixNano())
			return step{delay: 2500 * time.Millisecond, detached: true, landed: landed}
		}
		return step{}
	})
	d := openVia(t, p.URL, "sp", fastRetries)
	removed, rerr := storage.RemoveOrphans(ctx, d, referencing(), time.Hour, time.Now().Add(2*time.Hour))
	t.Logf("RemoveOrphans = %v, %v", removed, rerr)
	if _, held := leaseModTime(srv); held {
		t.Skip("the removal kept its lease; the race below cannot happen")
	}

	rr := rerun(t, direct, data, x)
	perr := rr.Publish(ctx)
	t.Logf("rerun's Publish = %v", perr)
	<-landed
	after := time.Duration(time.Now().UnixNano() - sent.Load())
	objs := srv.Objects(t, "state", "sp")
	if perr == nil && objs[storage.MetadataName] != nil && objs[x] == nil {
		t.Fatalf("the published _metadata names %s, which the removal's DELETE took %v after it was sent (within leaseTerm-leaseHold = 5s): the removal released its lease while that DELETE was still on its way; objects %v",
			x, after.Round(100*time.Millisecond), objectNames(objs))
	}
}

// TestRenewalKnownByItsTokenIsNoRenewal: a renewal lands but its answer
// comes after the write's timeout; the next renewal is refused and finds
// the holder's token there. That must not count as a renewal sent then:
// the store's LastModified is the earlier write's, and the holder must stop
// deleting before another removal could take the lease for dead.
func TestRenewalKnownByItsTokenIsNoRenewal(t *testing.T) {
	storage.SetLeaseTiming(t, 200*time.Millisecond, 2*time.Second, 3500*time.Millisecond, 20*time.Millisecond)
	ctx := context.Background()
	srv := newBucket(t)
	const n = 40
	for i := range n {
		putObject(t, srv, fmt.Sprintf("sp/o-%02d", i), []byte{byte(i)})
	}

	var mu sync.Mutex
	puts, lists := 0, 0
	var violations []string
	tookOver := make(chan error, 1)
	var once sync.Once
	p := newScripted(t, srv.Endpoint(), func(op, key string, r *http.Request) step {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case op == "PutObject" && key == "sp/"+storage.CleanupName:
			puts++
			switch {
			case puts == 2: // the first renewal: lands, its answer never comes
				return step{hang: true}
			case puts >= 4: // later renewals fail
				return step{status: 503, code: "SlowDown"}
			}
		case op == "ListObjects":
			// A long listing (a large prefix) while the above plays out.
			lists++
			if lists == 1 {
				return step{delay: 2600 * time.Millisecond}
			}
		case op == "DeleteObject" && key != "sp/"+storage.CleanupName:
			return step{delay: 100 * time.Millisecond, before: func() {
				mod, ok := leaseModTime(srv)
				mu.Lock()
				dead := ok && time.Since(mod) >= 3500*time.Millisecond
				switch {
				case dead:
					violations = append(violations, fmt.Sprintf("%s sent with the lease %v old", key, time.Since(mod).Round(10*time.Millisecond)))
				case len(violations) > 0:
					violations = append(violations, fmt.Sprintf("%s sent after that (lease there: %v)", key, ok))
				}
				mu.Unlock()
				if dead {
					once.Do(func() {
						// Another removal comes now: it should be refused.
						go func() {
							d2 := openVia(t, srv.Endpoint(), "sp", fastRetries)
							_, err := storage.RemoveOrphans(ctx, d2, referencing(), time.Hour, time.Now())
							tookOver <- err
						}()
					})
				}
			}}
		}
		return step{}
	})
	d := openVia(t, p.URL, "sp", fastRetries)
	removed, err := storage.RemoveOrphans(ctx, d, referencing(), 0, time.Now())
	t.Logf("RemoveOrphans removed %d, err %v", len(removed), err)
	mu.Lock()
	v := violations
	mu.Unlock()
	if len(v) > 0 {
		second := <-tookOver
		t.Errorf("a second removal meanwhile = %v (want ErrLeaseHeld)", second)
		t.Fatalf("%d DELETEs sent after the store's lease was leaseTerm old, i.e. after another removal or a writer could take it for dead: %v", len(v), v)
	}
}

// TestLeaseLeftAfterAStuckRenewalIsReported: the removal's work is done,
// but a renewal is under way and its answer slow, so that the hold has
// expired when release gets to it. The lease is left to lapse, and the
// removal must say so, not report the dead lease it took over as removed.
func TestLeaseLeftAfterAStuckRenewalIsReported(t *testing.T) {
	storage.SetLeaseTiming(t, 100*time.Millisecond, 1500*time.Millisecond, 3*time.Second, 20*time.Millisecond)
	ctx := context.Background()
	srv := newBucket(t)
	putObject(t, srv, "sp/"+storage.CleanupName, []byte(`{"holder":"dead"}`))
	putObject(t, srv, "sp/a", []byte("an orphan"))
	time.Sleep(4200 * time.Millisecond) // the lease is a dead removal's

	proxy := storetest.NewProxy(t, srv.Endpoint())
	d := openVia(t, proxy.URL, "sp", fastRetries)
	referenced := func(context.Context) ([]string, error) {
		// The lease is taken; its next renewal is slow to answer.
		proxy.Gather("PutObject", 2, 3*time.Second)
		time.Sleep(300 * time.Millisecond)
		return nil, nil
	}
	start := time.Now()
	removed, err := storage.RemoveOrphans(ctx, d, referenced, 0, time.Now())
	t.Logf("RemoveOrphans = %v, %v after %v", removed, err, time.Since(start).Round(100*time.Millisecond))
	var saysRemoved bool
	for _, o := range removed {
		saysRemoved = saysRemoved || o.Name == storage.CleanupName
	}
	objs := srv.Objects(t, "state", "sp")
	if objs[storage.CleanupName] != nil && err == nil {
		d2 := openVia(t, srv.Endpoint(), "sp", fastRetries)
		_, err2 := storage.RemoveOrphans(ctx, d2, referencing(), 0, time.Now())
		t.Fatalf("RemoveOrphans returned no error (reports %s removed: %v) but left %s in the store; the next removal = %v",
			storage.CleanupName, saysRemoved, storage.CleanupName, err2)
	}
}

// TestLeaseCreateWhoseCheckFails: the create of the lease lands, its
// answer is lost, the retry is refused, and the lease cannot be read to
// tell whose it is (throttled past the retries). The removal must report
// that failure, not another removal.
func TestLeaseCreateWhoseCheckFails(t *testing.T) {
	_, objs, err := removeAnOrphanThrough(t, func(p *storetest.Proxy) {
		p.Inject(storetest.LostAnswer, "PutObject", 1, 0, "", 0)
		p.Inject(storetest.Status, "GetObject", 4, 503, "SlowDown", 0)
	})
	if err == nil || errors.Is(err, storage.ErrLeaseHeld) {
		t.Errorf("a removal that could not read its own lease = %v; want that failure, not another removal", err)
	}
	if objs[storage.CleanupName] != nil {
		t.Errorf("the removal left its own lease %s, which no one renews or releases", storage.CleanupName)
	}
}

// TestLeaseCreateWhoseLookFails: the create of the lease lands, and the
// HEAD for its version fails. The removal must not leave the lease it made.
func TestLeaseCreateWhoseLookFails(t *testing.T) {
	_, objs, err := removeAnOrphanThrough(t, func(p *storetest.Proxy) {
		p.Inject(storetest.Status, "HeadObject", 4, 503, "SlowDown", 0)
	})
	if err == nil || objs[storage.CleanupName] != nil {
		t.Fatalf("RemoveOrphans = %v, and the lease left: %v; want the failure and no lease", err, objs[storage.CleanupName] != nil)
	}
}

// TestLateReleaseOnEachStore: removal A's release DELETE reaches the
// server late; meanwhile A's lease looked dead and removal B took it over.
// On every store the release is conditional on A's version, and must spare
// B's lease.
func TestLateReleaseOnEachStore(t *testing.T) {
	storage.SetLeaseTiming(t, 100*time.Millisecond, time.Second, 2*time.Second, 20*time.Millisecond)
	for _, backend := range []string{"s3", "azure"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			var target, viaURL, directURL string
			var leaseThere func() bool
			landed := make(chan struct{})
			decide := func(op, key string, r *http.Request) step {
				if op == "DeleteObject" && key == "sp/"+storage.CleanupName && landed != nil {
					l := landed
					landed = nil
					return step{delay: 4 * time.Second, detached: true, landed: l}
				}
				return step{}
			}
			wait := landed
			var p *scripted
			switch backend {
			case "s3":
				srv := newBucket(t)
				target = srv.Endpoint()
				p = newScripted(t, target, decide)
				viaURL, directURL = storetest.URL(p.URL, "state", "sp"), storetest.URL(srv.Endpoint(), "state", "sp")
				leaseThere = func() bool { _, ok := leaseModTime(srv); return ok }
			case "azure":
				q, err := url.ParseQuery(storetest.StartAzurite(t, "state"))
				if err != nil {
					t.Fatal(err)
				}
				addr := q.Get("domain")
				p = newScripted(t, "http://"+addr, decide)
				directURL = "azblob://state/sp?" + q.Encode()
				q.Set("domain", strings.TrimPrefix(p.URL, "http://"))
				viaURL = "azblob://state/sp?" + q.Encode()
				cred, err := azblob.NewSharedKeyCredential("devstoreaccount1", os.Getenv("AZURE_STORAGE_KEY"))
				if err != nil {
					t.Fatal(err)
				}
				c, err := azblob.NewClientWithSharedKeyCredential("http://"+addr+"/devstoreaccount1", cred, nil)
				if err != nil {
					t.Fatal(err)
				}
				leaseThere = func() bool {
					_, err := c.ServiceClient().NewContainerClient("state").NewBlobClient("sp/"+storage.CleanupName).GetProperties(ctx, nil)
					return err == nil
				}
			}
			open := func(loc string) storage.DirCloser {
				d, err := storage.OpenDir(ctx, loc, storage.Options{Retry: fastRetries})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { d.Close() })
				return d
			}
			start := time.Now()
			_, aerr := storage.RemoveOrphans(ctx, open(viaURL), referencing(), time.Hour, time.Now())
			t.Logf("removal A = %v", aerr)
			if !leaseThere() {
				t.Fatal("A's release landed at once; the test needs it late")
			}
			time.Sleep(3300*time.Millisecond - time.Since(start)) // A's lease is dead now
			bdone := make(chan error, 1)
			go func() {
				slow := func(context.Context) ([]string, error) { time.Sleep(2500 * time.Millisecond); return nil, nil }
				_, err := storage.RemoveOrphans(ctx, open(directURL), slow, time.Hour, time.Now())
				bdone <- err
			}()
			<-wait
			time.Sleep(50 * time.Millisecond)
			there := leaseThere()
			berr := <-bdone
			t.Logf("removal B = %v", berr)
			if !there {
				t.Fatalf("A's late release deleted the lease that B had taken over and still held (B then: %v)", berr)
			}
		})
	}
}
