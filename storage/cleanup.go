package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// CleanupName is the object that a removal of orphans holds under a bucket
// prefix while it runs: its lease. A run that publishes there waits while
// the lease is held, and then checks that the content-named files it wrote
// are all still there before it writes its marker (see RemoveOrphans).
const CleanupName = "_cleanup"

// The lease's timing. Its holder renews it every leaseRenewal and deletes
// nothing once its last renewal is leaseHold old; anyone else takes a lease
// not renewed for leaseTerm as a dead holder's. The difference between
// leaseHold and leaseTerm is what the lease tolerates of clock skew between
// hosts and of the store's times, which HTTP gives in whole seconds. A writer that finds the lease held looks again every
// cleanupPoll. Variables, so that tests can make them short.
var (
	leaseRenewal = 20 * time.Second
	leaseHold    = time.Minute
	leaseTerm    = 2 * time.Minute
	cleanupPoll  = 2 * time.Second
)

// cleanupLease is a held lease: the version of the lease object that its
// holder wrote last, and when it sent that write.
type cleanupLease struct {
	st   *bucketStore
	stop context.CancelFunc
	done chan struct{}

	mu         sync.Mutex
	etag       string
	generation int64
	renewed    time.Time
	// lost says why the lease is no longer this holder's.
	lost error
}

// takeCleanupLease takes the lease of st's prefix, create-only, or over a
// lease whose holder stopped renewing it leaseTerm ago. A lease held by a
// live holder fails with ErrConflict. The lease is renewed in the
// background until release.
func takeCleanupLease(ctx context.Context, st *bucketStore) (*cleanupLease, error) {
	l := &cleanupLease{st: st}
	err := l.write(ctx, true)
	if isPreconditionFailed(err) {
		st.c.Requests.Add(1)
		attrs, aerr := st.b.Attributes(ctx, st.key(CleanupName))
		switch {
		case gcerrors.Code(aerr) == gcerrors.NotFound:
			// Released meanwhile: try once more, create-only.
			err = l.write(ctx, true)
		case aerr != nil:
			return nil, fmt.Errorf("storage: %s: %w", st.where(CleanupName), aerr)
		case time.Since(attrs.ModTime) < leaseTerm:
			return nil, fmt.Errorf("%w: another removal of orphans at %s holds %s, renewed %s ago; nothing removed",
				ErrConflict, st.loc, CleanupName, time.Since(attrs.ModTime).Round(time.Second))
		default:
			// A dead holder's: taken over on the condition that it is
			// still that object, so that of two takers one wins.
			l.etag = attrs.ETag
			var ga gcsAttrs
			if attrs.As(&ga) {
				l.generation = ga.Generation
			}
			err = l.write(ctx, false)
		}
	}
	if isPreconditionFailed(err) {
		return nil, fmt.Errorf("%w: another removal of orphans at %s took %s first; nothing removed", ErrConflict, st.loc, CleanupName)
	}
	if err != nil {
		return nil, err
	}
	kctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	l.stop, l.done = stop, make(chan struct{})
	go l.keep(kctx)
	return l, nil
}

// write puts the lease object, create-only or over the version this
// holder wrote last, and records the version it made.
func (l *cleanupLease) write(ctx context.Context, createOnly bool) error {
	host, _ := os.Hostname()
	body, err := json.Marshal(struct {
		Holder  string `json:"holder"`
		Renewed string `json:"renewed"`
	}{fmt.Sprintf("%s:%d", host, os.Getpid()), time.Now().UTC().Format(time.RFC3339Nano)})
	if err != nil {
		return err
	}
	l.mu.Lock()
	etag, generation := l.etag, l.generation
	l.mu.Unlock()
	opts := &blob.WriterOptions{ContentType: "application/json", IfNotExist: createOnly}
	if !createOnly {
		opts.BeforeWrite = ifMatch(etag, generation)
	}
	sent := time.Now()
	key := l.st.key(CleanupName)
	l.st.c.Requests.Add(1)
	if err := l.st.b.Upload(ctx, key, bytes.NewReader(body), opts); err != nil {
		return err
	}
	l.st.c.Requests.Add(1)
	attrs, err := l.st.b.Attributes(ctx, key)
	if err != nil {
		return fmt.Errorf("storage: %s: %w", l.st.where(CleanupName), err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.etag, l.generation, l.renewed = attrs.ETag, 0, sent
	var ga gcsAttrs
	if attrs.As(&ga) {
		l.generation = ga.Generation
	}
	return nil
}

// keep renews the lease every leaseRenewal until it is stopped or lost. A
// renewal that fails for another reason is tried again at the next tick;
// hold refuses once none has succeeded for leaseHold.
func (l *cleanupLease) keep(ctx context.Context) {
	defer close(l.done)
	tick := time.NewTicker(leaseRenewal)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := l.write(ctx, false)
		if isPreconditionFailed(err) || gcerrors.Code(err) == gcerrors.NotFound {
			l.mu.Lock()
			l.lost = fmt.Errorf("%w: the lease %s was taken or removed by someone else", ErrConflict, l.st.where(CleanupName))
			l.mu.Unlock()
			return
		}
	}
}

// hold reports why the holder must not delete now: the lease was lost, or
// not renewed for leaseHold, after which another may take it.
func (l *cleanupLease) hold() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil {
		return l.lost
	}
	if age := time.Since(l.renewed); age >= leaseHold {
		return fmt.Errorf("storage: the lease %s was last renewed %s ago: stopped, since another removal may take it now",
			l.st.where(CleanupName), age.Round(time.Second))
	}
	return nil
}

// release stops the renewals and deletes the lease, unless it is no longer
// this holder's. It runs on a context of its own, since the caller's may
// be done.
func (l *cleanupLease) release(ctx context.Context) error {
	l.stop()
	<-l.done
	if l.hold() != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	l.st.c.Requests.Add(1)
	if err := l.st.b.Delete(ctx, l.st.key(CleanupName)); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("storage: removing the lease %s: %w", l.st.where(CleanupName), err)
	}
	return nil
}

// awaitCleanup returns once no live removal of orphans holds the lease of
// st's prefix: at once when there is none, else when it is released or
// its holder has stopped renewing it for leaseTerm.
func awaitCleanup(ctx context.Context, st *bucketStore) error {
	for {
		st.c.Requests.Add(1)
		attrs, err := st.b.Attributes(ctx, st.key(CleanupName))
		switch {
		case gcerrors.Code(err) == gcerrors.NotFound:
			return nil
		case err != nil:
			return fmt.Errorf("storage: %s: %w", st.where(CleanupName), err)
		case time.Since(attrs.ModTime) >= leaseTerm:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("storage: waiting for the removal of orphans at %s to end: %w", st.loc, context.Cause(ctx))
		case <-time.After(cleanupPoll):
		}
	}
}

// ifMatch is a BeforeWrite that makes a write succeed only over the
// object's version: its ETag on S3 and Azure, its generation on GCS.
func ifMatch(etag string, generation int64) func(as func(any) bool) error {
	return func(as func(any) bool) error {
		var in *transfermanager.UploadObjectInput
		if as(&in) {
			in.IfMatch = aws.String(etag)
		}
		var c *gcsConditions
		if generation != 0 && as(&c) {
			c.IfGenerationMatch = &generation
		}
		var ac *azureConditions
		if as(&ac) {
			ac.IfMatch = etag
		}
		return nil
	}
}
