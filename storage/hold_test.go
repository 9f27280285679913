package storage_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/storage"
)

// holdTerm is the term of the test's leases: renewed every 200 ms.
const holdTerm = 1200 * time.Millisecond

// A second holder of a bucket's hold, while the first lives, is refused
// once it has seen the first renew its lease; once the first releases it,
// the hold is taken at once.
func TestHoldInABucketIsExclusive(t *testing.T) {
	srv := newBucket(t)
	ctx := context.Background()
	d := openVia(t, srv.Endpoint(), "root", fastRetries)
	first, err := storage.TakeHold(ctx, d, "_hold", storage.HoldOptions{Term: holdTerm})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = storage.TakeHold(ctx, d, "_hold", storage.HoldOptions{Term: holdTerm})
	host, _ := os.Hostname()
	if !errors.Is(err, storage.ErrHeld) || !strings.Contains(err.Error(), host) {
		t.Fatalf("a second hold while the first lives: %v; want ErrHeld naming the holder on %s", err, host)
	}
	if d := time.Since(start); d >= holdTerm {
		t.Errorf("the second hold was refused after %v, not at the first renewal it saw", d)
	}
	hctx, cancel, err := first.Under(ctx)
	if err != nil {
		t.Fatalf("the holder's own hold: %v", err)
	}
	if _, ok := hctx.Deadline(); !ok {
		t.Error("a write under a lease has no deadline")
	}
	cancel()
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	again, err := storage.TakeHold(ctx, d, "_hold", storage.HoldOptions{Term: holdTerm})
	if err != nil {
		t.Fatalf("a hold after the release: %v", err)
	}
	if d := time.Since(start); d > holdTerm/2 {
		t.Errorf("a hold after the release took %v", d)
	}
	if err := again.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if objs := listAll(t, srv, "root/"); len(objs) != 0 {
		t.Errorf("objects left after the releases: %v", objs)
	}
}

// The lease of a holder that died is waited out, then taken over; a holder
// whose lease another took is told so by Under, for good.
func TestHoldOfADeadHolder(t *testing.T) {
	srv := newBucket(t)
	ctx := context.Background()
	putObject(t, srv, "root/_hold", []byte(`{"holder":"dead:1","token":"00","term_ms":1200}`))
	d := openVia(t, srv.Endpoint(), "root", fastRetries)
	start := time.Now()
	h, err := storage.TakeHold(ctx, d, "_hold", storage.HoldOptions{Term: holdTerm})
	if err != nil {
		t.Fatalf("taking a dead holder's lease: %v", err)
	}
	// The store's times are whole seconds: the wait is the term, give or
	// take one.
	if waited := time.Since(start); waited < holdTerm-time.Second {
		t.Errorf("took a dead holder's lease after %v, before its term of %v", waited, holdTerm)
	}
	// Another takes it over by hand: the next renewal finds it.
	putObject(t, srv, "root/_hold", []byte(`{"holder":"other:2","token":"11","term_ms":1200}`))
	deadline := time.Now().Add(holdTerm)
	for {
		_, cancel, err := h.Under(ctx)
		if err != nil {
			if !errors.Is(err, storage.ErrHeld) {
				t.Errorf("Under after a takeover: %v, want ErrHeld", err)
			}
			break
		}
		cancel()
		if time.Now().After(deadline) {
			t.Fatal("Under still gives a context a term after the lease was taken")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := h.Release(ctx); err != nil {
		t.Errorf("releasing a lease another took: %v, want nil (nothing to do)", err)
	}
	if got := string(getObject(t, srv, "root/_hold")); !strings.Contains(got, "other:2") {
		t.Errorf("the taker's lease holds %s after the release", got)
	}
}

// On disk the hold is a lock: a second is refused at once, the lock file
// goes with the release.
func TestHoldOnDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	d := storage.LocalDir(dir)
	ctx := context.Background()
	h, err := storage.TakeHold(ctx, d, "_hold", storage.HoldOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storage.TakeHold(ctx, d, "_hold", storage.HoldOptions{}); !errors.Is(err, storage.ErrHeld) {
		t.Fatalf("a second hold: %v, want ErrHeld", err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "_hold")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lock file is left: %v", err)
	}
}

func listAll(t *testing.T, srv *storetest.Server, prefix string) []string {
	t.Helper()
	out, err := srv.Client(srv.Endpoint()).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("state"), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, *o.Key)
	}
	return keys
}

func getObject(t *testing.T, srv *storetest.Server, key string) []byte {
	t.Helper()
	out, err := srv.Client(srv.Endpoint()).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("state"), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A live holder's lease, with a term of 30 s (renewed every 5 s), is asked
// for by a second holder whose own term is shorter (1.2 s). The taker must
// judge the lease by the term it records: judged by the taker's own, it
// was taken over while the first still wrote under it.
func TestShorterTermDoesNotTakeALiveLease(t *testing.T) {
	srv := newBucket(t)
	ctx := context.Background()
	d := openVia(t, srv.Endpoint(), "root", fastRetries)
	first, err := storage.TakeHold(ctx, d, "_hold", storage.HoldOptions{Term: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release(ctx)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	second, err := storage.TakeHold(wctx, d, "_hold", storage.HoldOptions{Term: holdTerm})
	if err == nil {
		defer second.Release(ctx)
		_, c1, err1 := first.Under(ctx)
		_, c2, err2 := second.Under(ctx)
		if err1 == nil {
			c1()
		}
		if err2 == nil {
			c2()
		}
		t.Fatalf("a second holder (term %v) took the lease of a live holder (term 30 s, renewed every 5 s) after %v; "+
			"now the first's Under = %v and the second's = %v (nil: both hold)", holdTerm, time.Since(start).Round(time.Millisecond), err1, err2)
	}
	if !errors.Is(err, storage.ErrHeld) {
		t.Fatalf("the second hold: %v, want ErrHeld", err)
	}
}

// A holder's lease lapses (its renewals fail for half its term) after one
// of its renewals landed without its answer: the object holds the holder's
// token under a version the holder does not know. Once that looks dead
// (its term and a second), another holder takes it over, between the
// lapsed holder's read of the body (its own token) and its read of the
// version. Resume must fail with ErrHeld (the lease was taken after it
// lapsed): with the version read apart from the body, it recorded the
// taker's version as its own and renewed over it.
func TestResumeDoesNotRenewOverATakersLease(t *testing.T) {
	srv := newBucket(t)
	ctx := context.Background()
	p := storetest.NewProxy(t, srv.Endpoint())
	dA := openVia(t, p.URL, "root", fastRetries)
	dB := openVia(t, srv.Endpoint(), "root", fastRetries)
	a, err := storage.TakeHold(ctx, dA, "_hold", storage.HoldOptions{Term: holdTerm})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(ctx)
	// A's renewals fail from now on...
	p.InjectOn(storetest.Status, "PutObject", "/root/_hold", 1<<20, 503, "SlowDown")
	// ...but one of them landed, its answer lost: A's token, a version A
	// does not know.
	var body map[string]any
	if err := json.Unmarshal(getObject(t, srv, "root/_hold"), &body); err != nil {
		t.Fatal(err)
	}
	body["renewed"] = time.Now().UTC().Format(time.RFC3339Nano)
	late, _ := json.Marshal(body)
	putObject(t, srv, "root/_hold", late)
	landed := time.Now()
	// A lapses; the late renewal comes to look dead.
	for {
		_, cancel, err := a.Under(ctx)
		if err != nil {
			break
		}
		cancel()
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Until(landed.Add(holdTerm + 1300*time.Millisecond)))
	p.ClearFaults()
	p.SetLatency(1500 * time.Millisecond)
	heads := p.Ops("HeadObject")
	errA := make(chan error, 1)
	go func() { errA <- a.Resume(ctx) }()
	for p.Ops("HeadObject") == heads {
		time.Sleep(time.Millisecond)
	}
	// A's read of the version waits in the proxy: B takes the lease over.
	p.SetLatency(0)
	b, err := storage.TakeHold(ctx, dB, "_hold", storage.HoldOptions{Term: holdTerm})
	if err != nil {
		t.Fatalf("B could not take the lapsed lease: %v", err)
	}
	defer b.Release(ctx)
	t.Logf("B took the lease over; the lease holds %s", getObject(t, srv, "root/_hold"))
	err = <-errA
	_, cb, errB := b.Under(ctx)
	if errB == nil {
		cb()
	}
	t.Logf("A's Resume: %v; B's Under just after: %v; the lease holds %s", err, errB, getObject(t, srv, "root/_hold"))
	if !errors.Is(err, storage.ErrHeld) {
		t.Errorf("A's Resume after B took the lease over = %v, want ErrHeld", err)
	}
}

// A live holder A has the lease with a term of 30 s (renewed every 5 s).
// B, with a term of 1.2 s, asks for it; B's read of the lease's body (which
// says A's term) fails, its retries with it (a 500). A lease whose body was
// not read is not judged: B must be refused, wait, or fail on the reads,
// and not take A's live lease by its own term, as it did when an unread
// body counted as one that records no term.
func TestUnreadableBodyDoesNotShortenALiveTerm(t *testing.T) {
	srv := newBucket(t)
	ctx := context.Background()
	dA := openVia(t, srv.Endpoint(), "root", fastRetries)
	a, err := storage.TakeHold(ctx, dA, "_hold", storage.HoldOptions{Term: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(ctx)

	p := storetest.NewProxy(t, srv.Endpoint())
	dB := openVia(t, p.URL, "root", fastRetries)
	// B's requests wait 300 ms each until its first GET of the lease (the
	// conditional read in ours() after its create-only write was refused)
	// has gone by; its next GET, of the body in takeLease, then fails.
	p.SetLatency(300 * time.Millisecond)
	go func() {
		for p.Ops("GetObject") == 0 {
			time.Sleep(time.Millisecond)
		}
		p.InjectOn(storetest.Status, "GetObject", "/root/_hold", 1000, 500, "InternalError")
		p.SetLatency(0)
	}()

	wctx, cancel := context.WithTimeout(ctx, 4500*time.Millisecond)
	defer cancel()
	start := time.Now()
	b, err := storage.TakeHold(wctx, dB, "_hold", storage.HoldOptions{Term: 1200 * time.Millisecond})
	took := time.Since(start)
	p.ClearFaults()
	if err == nil {
		defer b.Release(ctx)
		_, c1, err1 := a.Under(ctx)
		if err1 == nil {
			c1()
		}
		_, c2, err2 := b.Under(ctx)
		if err2 == nil {
			c2()
		}
		t.Fatalf("B (term 1.2 s) took the lease of live A (term 30 s, renewed every 5 s) after %v, "+
			"one read of its body having failed; A's Under = %v, B's Under = %v (nil: both hold)",
			took.Round(time.Millisecond), err1, err2)
	}
	// Refused, still waiting, or failed on the reads that keep failing:
	// anything but the lease.
	t.Logf("B after %v: %v", took.Round(time.Millisecond), err)
}

// A term shorter than MinHoldTerm is refused: a term of a few nanoseconds
// made the renewals' ticker panic in a goroutine of its own.
func TestTinyTermIsRefused(t *testing.T) {
	srv := newBucket(t)
	ctx := context.Background()
	d := openVia(t, srv.Endpoint(), "root", fastRetries)
	for _, term := range []time.Duration{5 * time.Nanosecond, 100 * time.Millisecond} {
		if h, err := storage.TakeHold(ctx, d, "_hold", storage.HoldOptions{Term: term}); err == nil {
			h.Release(ctx)
			t.Errorf("a hold with a term of %v was taken; want it refused", term)
		}
	}
}

// A writer that lost its hold deletes, at its abort, none of the names the
// next holder may have written since, but its temporary uploads go all
// the same: their random names are its own, and nothing else removes them.
// Here a long file's temporary upload stays behind its failed close (the
// copy to its name and the delete of the upload both failed), as when the
// hold ran out under the writer.
func TestAbortUnderALostHoldRemovesTemporaryUploads(t *testing.T) {
	srv := newBucket(t)
	ctx := context.Background()
	p := storetest.NewProxy(t, srv.Endpoint())
	tg := openTarget(t, storetest.URL(p.URL, "state", "sp"), false)
	w, err := tg.Create(ctx, "data-000")
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, []byte("created before the hold was lost"))
	nw, err := tg.CreateNamed(ctx, "data", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nw.Write(randomBytes(7, 9<<20)); err != nil {
		t.Fatal(err)
	}
	p.InjectOn(storetest.Status, "CopyObject", "", 1<<20, 500, "InternalError")
	p.InjectOn(storetest.Status, "DeleteObject", "", 1<<20, 500, "InternalError")
	if err := nw.Close(); err == nil {
		t.Fatal("the long file's close succeeded although its copy failed")
	}
	p.ClearFaults()
	temps := func() (n int) {
		for key := range srv.Objects(t, "state", "sp") {
			if strings.HasPrefix(path.Base(key), storage.TempPrefix) {
				n++
			}
		}
		return n
	}
	if temps() != 1 {
		t.Fatalf("%d temporary uploads before the abort; the scenario needs the one its close left", temps())
	}
	lost := func(context.Context) (context.Context, context.CancelFunc, error) { return nil, nil, storage.ErrHeld }
	if err := storage.AbortUnder(tg, lost); !errors.Is(err, storage.ErrHeld) {
		t.Errorf("AbortUnder = %v, want the hold's error for the file it left", err)
	}
	objs := srv.Objects(t, "state", "sp")
	if _, ok := objs["data-000"]; !ok {
		t.Error("the abort deleted data-000 without the hold: the next holder may have written it")
	}
	if n := temps(); n != 0 {
		t.Errorf("%d temporary uploads left by the abort of a writer that lost its hold", n)
	}
}
