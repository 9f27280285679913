package storage

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// startFakeGCS starts fake-gcs-server in process with one bucket, "state",
// and points the client at it as STORAGE_EMULATOR_HOST does.
func startFakeGCS(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	host := fmt.Sprintf("127.0.0.1:%d", port)
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Port: uint16(port), PublicHost: host})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "state"})
	t.Setenv("STORAGE_EMULATOR_HOST", host)
}

// recorder counts the requests that pass, by method, and answers the
// first try of every request of a chosen method with 503 without passing
// it on.
type recorder struct {
	next   http.RoundTripper
	fail   string
	mu     sync.Mutex
	counts map[string]int
	failed map[string]bool
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	key := req.Method + " " + req.URL.Path
	inject := req.Method == r.fail && !r.failed[key]
	if inject {
		r.failed[key] = true
	} else {
		r.counts[req.Method]++
	}
	r.mu.Unlock()
	if inject {
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{"error":{"code":503,"message":"injected"}}`)), Request: req}, nil
	}
	return r.next.RoundTrip(req)
}

func openFakeGCS(t *testing.T, fail string) (*blob.Bucket, *gcsBucket, *recorder) {
	d, err := newGCSBucket(context.Background(), Location{Scheme: "gs", Bucket: "state"}, RetryPolicy{Attempts: 3, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}, new(Counters))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{next: d.hc.Transport, fail: fail, counts: map[string]int{}, failed: map[string]bool{}}
	d.hc.Transport = rec
	b := blob.NewBucket(d)
	t.Cleanup(func() { b.Close() })
	return b, d, rec
}

// TestGCSResumableUpload writes objects larger than a chunk: they go up
// as a resumable upload, a chunk per request, keep the create-only
// condition, and read back whole and by range.
func TestGCSResumableUpload(t *testing.T) {
	startFakeGCS(t)
	ctx := context.Background()
	b, d, rec := openFakeGCS(t, "")
	d.chunk = 256 << 10
	for _, size := range []int{4<<20 + 1000, 2 * d.chunk, d.chunk, 10} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rand.N(256))
		}
		key := fmt.Sprintf("obj-%d", size)
		rec.counts = map[string]int{}
		if err := b.Upload(ctx, key, bytes.NewReader(data), &blob.WriterOptions{ContentType: "application/octet-stream", IfNotExist: true}); err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		chunks := (size + d.chunk - 1) / d.chunk
		if chunks == 1 {
			if rec.counts["POST"] != 1 || rec.counts["PUT"] != 0 {
				t.Fatalf("%d bytes went up in %v, want one POST", size, rec.counts)
			}
		} else if rec.counts["POST"] != 1 || rec.counts["PUT"] != chunks {
			t.Fatalf("%d bytes went up in %v, want a POST to start and %d PUTs", size, rec.counts, chunks)
		}
		got, err := b.ReadAll(ctx, key)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%d bytes read back as %d (%v)", size, len(got), err)
		}
		r, err := b.NewRangeReader(ctx, key, int64(size/3), int64(size/4)+1, nil)
		if err != nil {
			t.Fatal(err)
		}
		part, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(part, data[size/3:size/3+size/4+1]) || r.Size() != int64(size) {
			t.Fatalf("ranged read at %d: %d bytes of an object of %d (%v)", size/3, len(part), r.Size(), err)
		}
		err = b.Upload(ctx, key, bytes.NewReader(data[:size-1]), &blob.WriterOptions{ContentType: "application/octet-stream", IfNotExist: true})
		if gcerrors.Code(err) != gcerrors.FailedPrecondition || !isPreconditionFailed(err) {
			t.Fatalf("a second create-only upload of %d bytes = %v, want a failed precondition", size, err)
		}
		if a, err := b.Attributes(ctx, key); err != nil || a.Size != int64(size) {
			t.Fatalf("after the refused upload: %v, %v", a, err)
		}
	}
	// A copy on the server, with the create-only condition (which
	// fake-gcs-server takes but does not check, so the glue checks first
	// as well).
	createOnly := &blob.CopyOptions{BeforeCopy: func(as func(any) bool) error {
		var c *gcsConditions
		if as(&c) {
			zero := int64(0)
			c.IfGenerationMatch = &zero
		}
		return nil
	}}
	if err := b.Copy(ctx, "copy", "obj-10", createOnly); err != nil {
		t.Fatal(err)
	}
	if got, err := b.ReadAll(ctx, "copy"); err != nil || len(got) != 10 {
		t.Fatalf("the copy holds %d bytes (%v)", len(got), err)
	}
}

// TestGCSRetries answers the first try of each metadata, listing and
// delete request with 503: each is tried again and succeeds, and the
// retries are counted. A missing object is no transient error.
func TestGCSRetries(t *testing.T) {
	startFakeGCS(t)
	ctx := context.Background()
	w, _, _ := openFakeGCS(t, "")
	if err := w.WriteAll(ctx, "p/x", []byte("hello"), &blob.WriterOptions{ContentType: "application/octet-stream"}); err != nil {
		t.Fatal(err)
	}
	b, d, rec := openFakeGCS(t, "GET")
	a, err := b.Attributes(ctx, "p/x")
	if err != nil || a.Size != 5 {
		t.Fatalf("Attributes = %v, %v", a, err)
	}
	var ga gcsAttrs
	if !a.As(&ga) || ga.Generation == 0 {
		t.Fatal("no generation in the attributes")
	}
	page, _, err := b.ListPage(ctx, blob.FirstPageToken, 10, &blob.ListOptions{Prefix: "p/"})
	if err != nil || len(page) != 1 || page[0].Key != "p/x" {
		t.Fatalf("ListPage = %v, %v", page, err)
	}
	if _, err := b.Attributes(ctx, "p/missing"); gcerrors.Code(err) != gcerrors.NotFound {
		t.Fatalf("Attributes of a missing object = %v", err)
	}
	rec.fail = "DELETE"
	if err := b.Delete(ctx, "p/x"); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Exists(ctx, "p/x"); ok || err != nil {
		t.Fatalf("after Delete: exists %v, %v", ok, err)
	}
	// Attributes, the listing, the missing object's first try and the
	// delete; the check of the deleted object's first try is served.
	if got := d.c.Retries.Load(); got != 4 {
		t.Fatalf("%d retries counted, want 4", got)
	}
}

// TestGCSOpenFirstRetries answers the first try of each GET with 503: the
// GET that opens an object and reads its first bytes is tried again,
// counted, and gives the object's size and generation.
func TestGCSOpenFirstRetries(t *testing.T) {
	startFakeGCS(t)
	ctx := context.Background()
	w, _, _ := openFakeGCS(t, "")
	if err := w.WriteAll(ctx, "p/x", []byte("hello, world"), &blob.WriterOptions{ContentType: "application/octet-stream"}); err != nil {
		t.Fatal(err)
	}
	a, err := w.Attributes(ctx, "p/x")
	if err != nil {
		t.Fatal(err)
	}
	var ga gcsAttrs
	a.As(&ga)
	b, g, rec := openFakeGCS(t, "GET")
	d := &bucketDir{bucketStore: &bucketStore{loc: Location{Scheme: "gs", Bucket: "state", Prefix: "p"}, b: b, policy: g.policy, c: g.c}}
	p := make([]byte, 5)
	f, n, err := OpenFirst(ctx, d, "x", p)
	if err != nil {
		t.Fatal(err)
	}
	bf := f.(*bucketFile)
	if string(p[:n]) != "hello" || bf.size != 12 || bf.generation != ga.Generation || ga.Generation == 0 {
		t.Errorf("OpenFirst read %q of %d bytes at generation %d, want \"hello\" of 12 at %d", p[:n], bf.size, bf.generation, ga.Generation)
	}
	if r, gets := g.c.Retries.Load(), rec.counts["GET"]; r != 1 || gets != 1 {
		t.Errorf("%d retries and %d GETs passed, want 1 of each", r, gets)
	}
}

// TestGCSParameters refuses parameters the client does not know, rather
// than ignoring what may be a typo of a meaningful one.
func TestGCSParameters(t *testing.T) {
	loc, err := ParseLocation("gs://state/p?endpoint=http://x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newGCSBucket(context.Background(), loc, DefaultRetryPolicy, new(Counters)); err == nil || !strings.Contains(err.Error(), "endpoint") {
		t.Fatalf("a gs:// location with endpoint= opened: %v", err)
	}
}
