package storage

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// The timing of a lease in a bucket. Its holder renews it every
// leaseRenewal and writes nothing under it once its last renewal is
// leaseHold old; anyone else takes a lease not renewed for leaseTerm as a
// dead holder's. The difference between leaseHold and leaseTerm is what
// the lease tolerates of clock skew between hosts and of the store's
// times, which HTTP gives in whole seconds. A writer that waits for a
// lease looks again every cleanupPoll. Variables, so that tests can make
// them short.
var (
	leaseRenewal = 20 * time.Second
	leaseHold    = time.Minute
	leaseTerm    = 2 * time.Minute
	cleanupPoll  = 2 * time.Second
)

// leaseTiming is the timing of one lease: the variables above, or a
// shorter or longer term with the other times in the same proportions.
type leaseTiming struct{ renewal, hold, term, poll time.Duration }

func timingOf(term time.Duration) leaseTiming {
	if term <= 0 {
		return leaseTiming{leaseRenewal, leaseHold, leaseTerm, cleanupPoll}
	}
	return leaseTiming{term / 6, term / 2, term, min(cleanupPoll, term/20)}
}

// storeTimeGrain is how much older than it is a lease may look: HTTP gives
// an object's time in whole seconds. A lease is taken for dead only once
// it looks older than its term by that much, so that a short term is not
// cut shorter.
const storeTimeGrain = time.Second

// ErrHeld is the error of taking a lease, or a lock, that another holder
// has; also of a lease that another took over from its holder.
var ErrHeld = errors.New("storage: held by another")

// heldError says who holds a lease that could not be taken. It is ErrHeld
// to errors.Is; its message is the detail alone, for callers that put
// their own words before it.
type heldError struct{ detail string }

func (e *heldError) Error() string        { return e.detail }
func (e *heldError) Is(target error) bool { return target == ErrHeld }

// lease is a held lease: the version of the lease object that its
// holder wrote last, and when it sent that write. token, in the object's
// body, tells the holder its own lease from another's when a write of it
// was refused: the answer to an earlier attempt of that write may have
// been lost, so that its retry met the object it had made itself.
type lease struct {
	st *bucketStore
	// name is the lease object's, under st's prefix.
	name string
	t    leaseTiming
	// taken is what the loss of the lease to another wraps: ErrHeld, or
	// ErrLeaseHeld for a removal of orphans.
	taken error
	token string
	stop  func()
	done  chan struct{}
	// dead is the lease of a dead holder that this one took over, if any.
	dead *Object

	mu         sync.Mutex
	etag       string
	generation int64
	renewed    time.Time
	// lost says why the lease is no longer this holder's.
	lost error
	// unsure is set once a delete's outcome is unknown: it may still
	// land, and the lease is left to lapse rather than released.
	unsure bool
	// released is set once release deleted the lease.
	released bool
}

// leaseBody is the lease object's content.
type leaseBody struct {
	Holder  string `json:"holder"`
	Token   string `json:"token"`
	Renewed string `json:"renewed"`
	// TermMillis is the holder's term: a taker waits for the longer of
	// its own and this one, so that a run with a shorter term does not
	// take a live holder's lease for dead.
	TermMillis int64 `json:"term_ms,omitempty"`
}

// takeLease takes the lease name under st's prefix, create-only, or over a
// lease whose holder stopped renewing it leaseTerm ago. A lease held by a
// live holder fails with a heldError; with wait, a held lease is watched
// every cleanupPoll instead, and taken once its holder has not renewed it
// for leaseTerm, unless a renewal shows meanwhile that the holder lives.
// The lease is renewed in the background until release.
func takeLease(ctx context.Context, st *bucketStore, name string, t leaseTiming, wait bool, taken error) (*lease, error) {
	var token [8]byte
	if _, err := rand.Read(token[:]); err != nil {
		return nil, err
	}
	l := &lease{st: st, name: name, t: t, taken: taken, token: hex.EncodeToString(token[:])}
	err := l.write(ctx, true)
	seen, bodyOf := "", ""
	var body leaseBody
	unread := 0
	for errors.Is(err, errNotOurs) {
		st.c.Requests.Add(1)
		attrs, aerr := st.b.Attributes(ctx, st.key(name))
		switch {
		case gcerrors.Code(aerr) == gcerrors.NotFound:
			// Released meanwhile: try again, create-only.
			err = l.write(ctx, true)
			continue
		case aerr != nil:
			return nil, fmt.Errorf("storage: %s: %w", st.where(name), aerr)
		}
		if attrs.ETag != bodyOf {
			// Who holds it, and on what term: a holder's term longer
			// than this one's is waited out.
			lb, berr := l.body(ctx)
			if berr != nil {
				// Looked at again while the store may recover; not
				// forever.
				if unread++; !wait || unread >= 5 {
					return nil, fmt.Errorf("storage: reading %s: %w", st.where(name), berr)
				}
			} else {
				body, bodyOf, unread = lb, attrs.ETag, 0
			}
		}
		// A lease whose body was not read is not judged: it is looked
		// at again. One that records no term has the default's.
		term := max(t.term, time.Duration(body.TermMillis)*time.Millisecond)
		if body.TermMillis == 0 {
			term = max(t.term, leaseTerm)
		}
		switch {
		case bodyOf != attrs.ETag:
		case time.Since(attrs.ModTime) >= term+storeTimeGrain:
			// A dead holder's: taken over on the condition that it is
			// still that object, so that of two takers one wins.
			l.etag, l.generation = attrs.ETag, generationOf(attrs)
			l.dead = &Object{Name: name, Size: attrs.Size, ModTime: attrs.ModTime}
			if err = l.write(ctx, false); errors.Is(err, errNotOurs) {
				return nil, &heldError{fmt.Sprintf("another took %s first", st.where(name))}
			}
			continue
		case !wait || seen != "" && attrs.ETag != seen:
			return nil, l.held(body, attrs.ModTime)
		}
		seen = attrs.ETag
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("storage: waiting for the lease %s to lapse: %w", st.where(name), context.Cause(ctx))
		case <-time.After(t.poll):
		}
	}
	if err != nil {
		return nil, l.abandon(ctx, err)
	}
	l.startKeeping(ctx)
	return l, nil
}

// startKeeping starts the renewals.
func (l *lease) startKeeping(ctx context.Context) {
	quit := make(chan struct{})
	l.stop, l.done = sync.OnceFunc(func() { close(quit) }), make(chan struct{})
	go l.keep(context.WithoutCancel(ctx), quit)
}

// resume takes back a lease that lapsed (its renewals failed for its
// hold) and that no one took meanwhile: it renews it on the condition that
// it is still the version this holder wrote last, which no taker can have
// left as it was. A lease taken or removed meanwhile fails it with
// l.taken, for good; another failure is the store's, and may be tried
// again.
func (l *lease) resume(ctx context.Context) error {
	l.stop()
	<-l.done
	l.mu.Lock()
	lost := l.lost
	l.mu.Unlock()
	switch {
	case lost == nil:
		l.startKeeping(ctx)
		return nil
	case errors.Is(lost, l.taken):
		return lost
	}
	err := l.write(ctx, false)
	l.mu.Lock()
	stale := time.Since(l.renewed) >= l.t.hold
	l.mu.Unlock()
	if err == nil && stale {
		// The version found was this holder's own late renewal, which
		// counts as none: renewed over it.
		err = l.write(ctx, false)
	}
	if errors.Is(err, errNotOurs) || gcerrors.Code(err) == gcerrors.NotFound {
		err = fmt.Errorf("%w: the lease %s was taken or removed by someone else after it lapsed", l.taken, l.st.where(l.name))
		l.mu.Lock()
		l.lost = err
		l.mu.Unlock()
		return err
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.lost = nil
	l.mu.Unlock()
	l.startKeeping(ctx)
	return nil
}

// body reads the lease object's body. One that does not parse tells no
// holder and no term.
func (l *lease) body(ctx context.Context) (leaseBody, error) {
	var lb leaseBody
	l.st.c.Requests.Add(1)
	b, err := l.st.b.ReadAll(ctx, l.st.key(l.name))
	if err != nil {
		return lb, err
	}
	json.Unmarshal(b, &lb)
	return lb, nil
}

// held is the heldError of a lease of body lb last renewed at renewed,
// naming its holder.
func (l *lease) held(lb leaseBody, renewed time.Time) error {
	who := ""
	if lb.Holder != "" {
		who = " by " + lb.Holder
	}
	return &heldError{fmt.Sprintf("%s is held%s, renewed %s ago", l.st.where(l.name), who, time.Since(renewed).Round(time.Second))}
}

// holderName names this process to another that finds what it holds:
// host and process id.
func holderName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// errNotOurs is write's error when its condition failed and the lease
// object there is not this holder's.
var errNotOurs = errors.New("the lease is another's")

// write puts the lease object, create-only or over the version this
// holder wrote last, and records the version it made. A write refused by
// its condition that finds the holder's own token there made that object
// itself, in an attempt whose answer was lost; one that finds another's
// fails with errNotOurs. A renewal known only that way does not count as
// one: when the attempt that landed was sent is not known.
func (l *lease) write(ctx context.Context, createOnly bool) error {
	body, err := json.Marshal(leaseBody{Holder: holderName(), Token: l.token,
		Renewed: time.Now().UTC().Format(time.RFC3339Nano), TermMillis: l.t.term.Milliseconds()})
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
	key := l.st.key(l.name)
	l.st.c.Requests.Add(1)
	if err := l.st.b.Upload(ctx, key, bytes.NewReader(body), opts); err != nil {
		if !isPreconditionFailed(err) {
			return err
		}
		mine, attrs, err := l.ours(ctx)
		switch {
		case err != nil:
			return fmt.Errorf("storage: reading %s after a write of it was refused: %w", l.st.where(l.name), err)
		case !mine:
			return errNotOurs
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.etag, l.generation = attrs.ETag, generationOf(attrs)
		if createOnly {
			// A create's attempts were all sent after sent.
			l.renewed = sent
		}
		return nil
	}
	// Just written, the lease is fresh: no one can have taken it over
	// before this look at its version.
	l.st.c.Requests.Add(1)
	attrs, err := l.st.b.Attributes(ctx, key)
	if err != nil {
		return fmt.Errorf("storage: %s: %w", l.st.where(l.name), err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.etag, l.generation = attrs.ETag, generationOf(attrs)
	l.renewed = sent
	return nil
}

// ours reports whether the lease object holds this holder's token, and
// the attributes of the version that does: the body is read on the
// condition that it is still the version whose attributes were looked at,
// so that a version another took over meanwhile is never taken for this
// holder's. A missing object is not this holder's.
func (l *lease) ours(ctx context.Context) (bool, *blob.Attributes, error) {
	key := l.st.key(l.name)
	for range 5 {
		l.st.c.Requests.Add(2)
		attrs, err := l.st.b.Attributes(ctx, key)
		if gcerrors.Code(err) == gcerrors.NotFound {
			return false, nil, nil
		}
		if err != nil {
			return false, nil, err
		}
		r, err := l.st.b.NewReader(ctx, key, &blob.ReaderOptions{BeforeRead: readIfMatch(attrs.ETag, generationOf(attrs))})
		if gcerrors.Code(err) == gcerrors.NotFound || isPreconditionFailed(err) {
			continue // replaced or removed since: look again
		}
		if err != nil {
			return false, nil, err
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return false, nil, err
		}
		var lb leaseBody
		return json.Unmarshal(b, &lb) == nil && lb.Token == l.token, attrs, nil
	}
	return false, nil, fmt.Errorf("storage: %s keeps changing", l.st.where(l.name))
}

// readIfMatch is a BeforeRead that makes a read succeed only of the
// object's version: its ETag on S3 and Azure, its generation on GCS.
func readIfMatch(etag string, generation int64) func(as func(any) bool) error {
	return func(as func(any) bool) error {
		var in *s3.GetObjectInput
		if etag != "" && as(&in) {
			in.IfMatch = aws.String(etag)
		}
		var ac *azureConditions
		if etag != "" && as(&ac) {
			ac.IfMatch = etag
		}
		var c *gcsConditions
		if generation != 0 && as(&c) {
			c.Generation = generation
		}
		return nil
	}
}

// abandon removes, after a failed take, the lease object this holder may
// have made, and returns why the take failed, saying so if the lease may
// be left.
func (l *lease) abandon(ctx context.Context, why error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	mine, _, err := l.ours(ctx)
	if err == nil && mine {
		l.st.c.Requests.Add(1)
		if err = l.st.b.Delete(ctx, l.st.key(l.name)); gcerrors.Code(err) == gcerrors.NotFound {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("%w; the lease %s may be left, to lapse %s after it was written", why, l.st.where(l.name), l.t.term)
	}
	return why
}

// keep renews the lease every leaseRenewal until quit is closed or the
// lease lost, which it is for good once no renewal succeeded for
// leaseHold. A renewal that fails for another reason is tried again at
// the next tick. A renewal under way when quit closes is let finish, so
// that release knows the version it made.
func (l *lease) keep(ctx context.Context, quit <-chan struct{}) {
	defer close(l.done)
	tick := time.NewTicker(l.t.renewal)
	defer tick.Stop()
	for {
		select {
		case <-quit:
			return
		case <-tick.C:
		}
		// A lease not renewed for leaseHold may have been taken for dead
		// meanwhile: a renewal now would revive it under a writer that
		// went past it. A renewal that cannot land by then is no use.
		wctx, cancel, err := l.hold(ctx)
		if err != nil {
			return
		}
		err = l.write(wctx, false)
		cancel()
		if errors.Is(err, errNotOurs) || gcerrors.Code(err) == gcerrors.NotFound {
			l.mu.Lock()
			l.lost = fmt.Errorf("%w: the lease %s was taken or removed by someone else; stopped", l.taken, l.st.where(l.name))
			l.mu.Unlock()
			return
		}
	}
}

// hold returns a context for the next request made under the lease (a
// delete, a renewal, the release), which ends when the lease may no
// longer be this holder's: leaseHold after its last renewal, so that
// neither the request nor a retry of it is sent after that. It fails
// when the lease was lost or that time has passed.
func (l *lease) hold(ctx context.Context) (context.Context, context.CancelFunc, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil {
		return nil, nil, l.lost
	}
	until := l.renewed.Add(l.t.hold)
	if !time.Now().Before(until) {
		// For good: a renewal that succeeds later does not give it back.
		l.lost = fmt.Errorf("storage: the lease %s was last renewed %s ago: stopped, since another may take it for dead now",
			l.st.where(l.name), time.Since(l.renewed).Round(time.Second))
		return nil, nil, l.lost
	}
	ctx, cancel := context.WithDeadline(ctx, until)
	return ctx, cancel, nil
}

// release stops the renewals and deletes the lease, on the condition that
// it is still the version this holder wrote last (its ETag, or on GCS its
// generation), so that
// a release that reaches the server late does not remove a lease another
// removal took over meanwhile. A lease that may have passed to another is
// not deleted, nor one left to lapse after a delete whose outcome is
// unknown; the latter is an error, as is a lease that could not be
// deleted, which lapses leaseTerm after its last renewal. It runs on a
// context of its own, since the caller's may be done.
func (l *lease) release(ctx context.Context) error {
	l.stop()
	<-l.done
	l.mu.Lock()
	lost, unsure := l.lost, l.unsure
	l.mu.Unlock()
	switch {
	case errors.Is(lost, l.taken):
		return nil // another's now
	case lost != nil:
		return fmt.Errorf("storage: the lease %s is left to lapse %s after its last renewal, which was too long ago to release it", l.st.where(l.name), l.t.term)
	case unsure:
		return fmt.Errorf("storage: the lease %s is left to lapse %s after its last renewal: a delete made under it may still land", l.st.where(l.name), l.t.term)
	}
	hctx, cancel, err := l.hold(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("%w; the lease is left to lapse", err)
	}
	defer cancel()
	key := l.st.key(l.name)
	l.st.c.Requests.Add(1)
	if l.st.s3 != nil {
		l.mu.Lock()
		etag := l.etag
		l.mu.Unlock()
		_, err = l.st.s3.DeleteObject(hctx, &s3.DeleteObjectInput{Bucket: aws.String(l.st.loc.Bucket), Key: aws.String(key), IfMatch: aws.String(etag)})
		if isPreconditionFailed(err) || isNotFound(err) {
			err = nil
		}
	} else {
		l.mu.Lock()
		cond := ifMatch(l.etag, l.generation)
		l.mu.Unlock()
		err = l.st.b.DeleteWithOptions(hctx, key, &blob.DeleteOptions{BeforeDelete: cond})
		if c := gcerrors.Code(err); c == gcerrors.NotFound || c == gcerrors.FailedPrecondition {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("storage: removing the lease %s, which lapses %s after its last renewal: %w", l.st.where(l.name), l.t.term, err)
	}
	l.mu.Lock()
	l.released = true
	l.mu.Unlock()
	return nil
}

// leave records that a delete's outcome is unknown: the lease is left to
// lapse, so that no writer takes it for released while the delete may
// still land.
func (l *lease) leave() {
	l.mu.Lock()
	l.unsure = true
	l.mu.Unlock()
}

// outcomeKnown reports whether a failed request's error is the store's
// answer, so that the request was not carried out, rather than the lack
// of one.
func outcomeKnown(err error) bool {
	var status interface{ HTTPStatusCode() int }
	return errors.As(err, &status) && status.HTTPStatusCode() >= 400
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
