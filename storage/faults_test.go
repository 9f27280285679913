package storage_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/storage"
)

// fastRetries keeps the tests' backoff short; the attempts are the default.
var fastRetries = storage.RetryPolicy{Attempts: 4, BaseDelay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond}

// putObject stores an object behind the storage package's back.
// proxiedObject puts b as sp/data-000 into a bucket of a versitygw started
// for the test and opens it through a proxy that counts requests; it
// returns the proxy, the directory and the file.
func proxiedObject(t *testing.T, b []byte) (*storetest.Proxy, storage.DirCloser, storage.File) {
	t.Helper()
	p, d := proxiedDir(t, "data-000", b)
	f, err := d.Open(context.Background(), "data-000")
	if err != nil {
		t.Fatal(err)
	}
	return p, d, f
}

// proxiedDir puts b as sp/name into a bucket of a versitygw started for
// the test, and opens sp through a proxy that counts requests.
func proxiedDir(t *testing.T, name string, b []byte) (*storetest.Proxy, storage.DirCloser) {
	t.Helper()
	srv := newBucket(t)
	putObject(t, srv, "sp/"+name, b)
	p := storetest.NewProxy(t, srv.Endpoint())
	return p, openVia(t, p.URL, "sp", fastRetries)
}

func putObject(t *testing.T, srv *storetest.Server, key string, b []byte) {
	t.Helper()
	_, err := srv.Client(srv.Endpoint()).PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String("state"), Key: aws.String(key), Body: bytes.NewReader(b)})
	if err != nil {
		t.Fatal(err)
	}
}

func openVia(t *testing.T, endpoint, prefix string, policy storage.RetryPolicy) storage.DirCloser {
	t.Helper()
	d, err := storage.OpenDir(context.Background(), storetest.URL(endpoint, "state", prefix), storage.Options{Retry: policy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestReadsRetryThrottlingAndResets reads through a proxy that throttles,
// resets connections before answering and cuts bodies in the middle: the
// reads must return the right bytes, after a bounded number of retries.
func TestReadsRetryThrottlingAndResets(t *testing.T) {
	want := randomBytes(3, 3<<20)
	p, d, f := proxiedObject(t, want)
	cases := []struct {
		name   string
		inject func()
	}{
		{"503 SlowDown", func() { p.Throttle("GetObject", 3) }},
		{"429", func() { p.Inject(storetest.Status, "GetObject", 3, http.StatusTooManyRequests, "TooManyRequests", 0) }},
		{"500", func() { p.Inject(storetest.Status, "GetObject", 2, http.StatusInternalServerError, "InternalError", 0) }},
		{"reset before the answer", func() { p.Inject(storetest.Reset, "GetObject", 3, 0, "", 0) }},
		{"body cut after 1 MiB", func() { p.Inject(storetest.CutBody, "GetObject", 3, 0, "", 1<<20) }},
	}
	c := storage.CountersOf(d)
	for _, tc := range cases {
		retries := c.Retries.Load()
		gets := p.Ops("GetObject")
		tc.inject()
		got := make([]byte, len(want)-100)
		if _, err := f.ReadAt(got, 100); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !bytes.Equal(got, want[100:]) {
			t.Fatalf("%s: wrong bytes after retries", tc.name)
		}
		if p.Pending() != 0 {
			t.Fatalf("%s: %d injected faults never struck", tc.name, p.Pending())
		}
		r, g := c.Retries.Load()-retries, p.Ops("GetObject")-gets
		if r == 0 || g > 4 {
			t.Fatalf("%s: %d retries in %d GETs; want some, and at most the policy's 4 attempts", tc.name, r, g)
		}
		t.Logf("%s: %d retries, %d GETs", tc.name, r, g)
	}
}

// TestRetriesAreBounded throttles every request: a read gives up after the
// policy's attempts, and a 4xx other than 429 is never retried.
func TestRetriesAreBounded(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	putObject(t, srv, "sp/data-000", randomBytes(4, 1000))
	p := storetest.NewProxy(t, srv.Endpoint())
	d := openVia(t, p.URL, "sp", fastRetries)
	f, err := d.Open(ctx, "data-000")
	if err != nil {
		t.Fatal(err)
	}
	p.Throttle("GetObject", 100)
	before := p.Ops("GetObject")
	if _, err := f.ReadAt(make([]byte, 10), 0); err == nil || !strings.Contains(err.Error(), "SlowDown") || !strings.Contains(err.Error(), "sp/data-000") {
		t.Fatalf("read under endless throttling = %v, want an error naming the file and SlowDown", err)
	}
	if n := p.Ops("GetObject") - before; n != fastRetries.Attempts {
		t.Fatalf("%d GETs under endless throttling, want exactly %d attempts", n, fastRetries.Attempts)
	}
	// A fresh proxy, without the throttling left over.
	p = storetest.NewProxy(t, srv.Endpoint())
	d = openVia(t, p.URL, "sp", fastRetries)
	f, err = d.Open(ctx, "data-000")
	if err != nil {
		t.Fatal(err)
	}
	for _, status := range []int{http.StatusForbidden, http.StatusBadRequest, http.StatusBadGateway} {
		code := map[int]string{403: "AccessDenied", 400: "InvalidRequest", 502: "BadGateway"}[status]
		p.Inject(storetest.Status, "GetObject", 1, status, code, 0)
		before := p.Ops("GetObject")
		_, err := f.ReadAt(make([]byte, 10), 0)
		n := p.Ops("GetObject") - before
		if status < 500 && (err == nil || n != 1) {
			t.Fatalf("%d: %d GETs, error %v; want one GET and an error", status, n, err)
		}
		if status >= 500 && (err != nil || n != 2) {
			t.Fatalf("%d: %d GETs, error %v; want a retry that succeeds", status, n, err)
		}
	}
}

// TestWritesRetryThrottlingAndResets writes a savepoint's files through
// the faulty proxy: every kind of write is throttled or reset once or
// twice and the savepoint still lands whole.
func TestWritesRetryThrottlingAndResets(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	p := storetest.NewProxy(t, srv.Endpoint())
	loc := storetest.URL(p.URL, "state", "sp")
	tg, err := storage.OpenTarget(ctx, loc, storage.TargetOptions{Options: storage.Options{Retry: fastRetries}})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	p.Throttle("PutObject", 2)
	p.Inject(storetest.Reset, "UploadPart", 2, 0, "", 0)
	p.Inject(storetest.Status, "CreateMultipartUpload", 1, 503, "SlowDown", 0)
	p.Inject(storetest.Status, "CompleteMultipartUpload", 1, 500, "InternalError", 0)
	p.Throttle("CopyObject", 2)
	// A named file longer than what is held in memory goes up under a
	// temporary name and is copied to its own: the copy is throttled too.
	big, small, named := randomBytes(5, 20<<20), randomBytes(6, 300), randomBytes(7, 9<<20)
	w, err := tg.Create(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, big)
	nw, err := tg.CreateNamed(ctx, "small", "")
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, nw, small)
	lw, err := tg.CreateNamed(ctx, "named", "")
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, lw, named)
	mw, _ := tg.Create(ctx, storage.MetadataName)
	writeAll(t, mw, []byte("meta"))
	p.Inject(storetest.Reset, "PutObject", 1, 0, "", 0)
	if err := tg.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if p.Pending() != 0 {
		for _, op := range []string{"PutObject", "UploadPart", "CreateMultipartUpload", "CompleteMultipartUpload", "CopyObject"} {
			t.Logf("%s: %d", op, p.Ops(op))
		}
		t.Fatalf("%d injected faults never struck", p.Pending())
	}
	d := openVia(t, srv.Endpoint(), "sp", storage.RetryPolicy{})
	if !bytes.Equal(readAll(t, d, "big"), big) || !bytes.Equal(readAll(t, d, nw.Name()), small) || !bytes.Equal(readAll(t, d, lw.Name()), named) ||
		string(readAll(t, d, storage.MetadataName)) != "meta" {
		t.Fatal("the savepoint written through faults reads back different bytes")
	}
	t.Logf("%d retries", storage.CountersOf(tg).Retries.Load())
}

// TestPublishWhoseAnswerIsLost has the server store _metadata and the
// connection drop before its answer. Without a retry the savepoint is
// visible, so Publish must report it written, created or replaced. With
// one, the retried conditional PUT meets the condition its own first
// attempt broke, which the bytes cannot tell from another writer of the
// same savepoint: Publish reports the conflict and says so. A Publish whose
// context ends before its request reports the failure and leaves nothing.
func TestPublishWhoseAnswerIsLost(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	p := storetest.NewProxy(t, srv.Endpoint())
	once := storage.RetryPolicy{Attempts: 1}
	publish := func(force bool, meta, data string, retry storage.RetryPolicy) error {
		tg, err := storage.OpenTarget(ctx, storetest.URL(p.URL, "state", "sp"), storage.TargetOptions{Force: force, Options: storage.Options{Retry: retry}})
		if err != nil {
			t.Fatal(err)
		}
		defer tg.Close()
		w, err := tg.Create(ctx, data)
		if err != nil {
			t.Fatal(err)
		}
		writeAll(t, w, []byte(data))
		mw, _ := tg.Create(ctx, storage.MetadataName)
		writeAll(t, mw, []byte(meta))
		before := p.Ops("PutObject")
		p.Inject(storetest.LostAnswer, "PutObject", 1, 0, "", 0)
		err = tg.Publish(ctx)
		if p.Pending() != 0 || p.Ops("PutObject") == before {
			t.Fatalf("the lost answer did not strike: %d pending, %d PUTs", p.Pending(), p.Ops("PutObject")-before)
		}
		return err
	}
	d := openVia(t, srv.Endpoint(), "sp", storage.RetryPolicy{})
	if err := publish(false, "meta one", "data-one", once); err != nil {
		t.Fatalf("a create-only publish whose answer was lost: %v, want it reported written", err)
	}
	if got := string(readAll(t, d, storage.MetadataName)); got != "meta one" {
		t.Fatalf("_metadata = %q", got)
	}
	if err := publish(true, "meta two", "data-two", once); err != nil {
		t.Fatalf("a forced publish whose answer was lost: %v, want it reported written", err)
	}
	if got := string(readAll(t, d, storage.MetadataName)); got != "meta two" {
		t.Fatalf("_metadata = %q", got)
	}
	// The replaced savepoint's file went, as after any forced publish.
	if names, err := d.List(ctx); err != nil || strings.Join(names, ",") != "_metadata,data-two" {
		t.Fatalf("after the forced publish the prefix holds %v (%v)", names, err)
	}
	err := publish(true, "meta three", "data-three", fastRetries)
	if !errors.Is(err, storage.ErrConflict) || !strings.Contains(err.Error(), "exactly this run's") {
		t.Fatalf("a retried publish whose first answer was lost: %v, want a conflict that says the savepoint is this run's", err)
	}
	if got := string(readAll(t, d, storage.MetadataName)); got != "meta three" {
		t.Fatalf("_metadata = %q", got)
	}

	tg, err := storage.OpenTarget(ctx, storetest.URL(p.URL, "state", "other"), storage.TargetOptions{Options: storage.Options{Retry: fastRetries}})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	mw, _ := tg.Create(ctx, storage.MetadataName)
	writeAll(t, mw, []byte("meta"))
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := tg.Publish(done); err == nil || errors.Is(err, storage.ErrConflict) {
		t.Fatalf("a publish whose context had ended = %v, want a failure that is not a conflict", err)
	}
	if _, err := openVia(t, srv.Endpoint(), "other", storage.RetryPolicy{}).Open(ctx, storage.MetadataName); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after a publish that never left, _metadata: %v; want none", err)
	}
}

// TestProxyEnforcesThePartRule checks the test's own referee: a multipart
// upload whose first part is under 5 MiB is refused at completion, as S3
// refuses it, though versitygw would take it.
func TestProxyEnforcesThePartRule(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	p := storetest.NewProxy(t, srv.Endpoint())
	c := srv.Client(p.URL)
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("state"), Key: aws.String("x")})
	if err != nil {
		t.Fatal(err)
	}
	var parts []s3types.CompletedPart
	for i, n := range []int{1 << 20, 1 << 20} {
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("state"), Key: aws.String("x"), UploadId: up.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(make([]byte, n))})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, s3types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.ETag})
	}
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("state"), Key: aws.String("x"),
		UploadId: up.UploadId, MultipartUpload: &s3types.CompletedMultipartUpload{Parts: parts}})
	if err == nil || !strings.Contains(err.Error(), "EntityTooSmall") {
		t.Fatalf("completing with a 1 MiB first part = %v, want EntityTooSmall", err)
	}
}

// TestServerStoppedMidReadAndMidWrite stops versitygw while a file is read
// and while a savepoint is written: both end in an error naming the place,
// within the retry policy, and nothing of the write is visible once the
// server is back.
func TestServerStoppedMidReadAndMidWrite(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	want := randomBytes(7, 2<<20)
	putObject(t, srv, "in/data-000", want)
	d := openVia(t, srv.Endpoint(), "in", fastRetries)
	f, err := d.Open(ctx, "data-000")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(make([]byte, 1<<20), 0); err != nil {
		t.Fatal(err)
	}
	tg, err := storage.OpenTarget(ctx, storetest.URL(srv.Endpoint(), "state", "out"), storage.TargetOptions{Options: storage.Options{Retry: fastRetries}})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	w, err := tg.Create(ctx, "data-000")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(randomBytes(8, 6<<20))

	srv.Stop()
	start := time.Now()
	if _, err := f.ReadAt(make([]byte, 1<<20), 1<<20); err == nil || !strings.Contains(err.Error(), "in/data-000") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("read from a stopped server = %v, want an error naming the file and the refused connection", err)
	}
	w.Write(randomBytes(9, 3<<20))
	if err := w.Close(); err == nil {
		t.Fatal("closing a data file on a stopped server succeeded")
	}
	mw, _ := tg.Create(ctx, storage.MetadataName)
	writeAll(t, mw, []byte("meta"))
	if err := tg.Publish(ctx); err == nil || !strings.Contains(err.Error(), "_metadata") {
		t.Fatalf("Publish on a stopped server = %v, want an error naming _metadata", err)
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Fatalf("the failures took %v", el)
	}
	srv.Restart(t)
	tg.Abort()
	out := openVia(t, srv.Endpoint(), "out", storage.RetryPolicy{})
	if _, err := out.Open(ctx, storage.MetadataName); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after the failed write, _metadata: %v; want none", err)
	}
	if names, err := out.List(ctx); err != nil || len(names) != 0 {
		t.Fatalf("after the failed write and Abort: %v, %v; want nothing", names, err)
	}
	// The reader works again once the server is back.
	got := make([]byte, 1<<20)
	if _, err := f.ReadAt(got, 1<<20); err != nil || !bytes.Equal(got, want[1<<20:]) {
		t.Fatalf("read after restart: %v", err)
	}
}
