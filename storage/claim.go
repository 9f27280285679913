package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// ClaimedCopy is a server-side copy of a whole source file to the content
// name that the source's own name claims, started before the source has
// been read: a rewrite that will write the file unchanged lets the server
// copy while it reads and verifies the bytes, instead of after, when the
// digest that names the copy is known. Until Keep confirms it, the copy is
// only a claim: it is created create-only, so that it never replaces a
// file that another run put under that name, and Discard, or the target's
// Abort, deletes it on the condition that it is still the object this copy
// made. A claim that turns out false thus never leaves a file whose bytes
// do not match its name, unless the process dies before it can remove it:
// then the copy is an orphan like any file of a dead run, which verify
// reports and RemoveOrphans deletes; nothing references it, since
// _metadata is written last.
type ClaimedCopy struct {
	t    *bucketTarget
	name string
	done chan struct{}
	// etag is the copy's version once it succeeded; err why it did not.
	etag string
	err  error
}

// StartClaimedCopy starts copying the whole of src to name at t on the
// server, in the background. It returns nil where that cannot be done: t
// is not an S3 target, or src lies in another store or is empty. Every
// claim that is started must be settled with Keep or Discard, or by the
// target's Abort.
func StartClaimedCopy(ctx context.Context, t any, src File, name string) *ClaimedCopy {
	bt, ok1 := t.(*bucketTarget)
	bf, ok2 := src.(*bucketFile)
	if !ok1 || !ok2 || bt.s3 == nil || !sameStore(bf.st, bt.bucketStore) || bf.size == 0 || bf.size > maxCopyObject {
		return nil
	}
	if bt.checkWritable(name) != nil || name == bt.marker {
		return nil
	}
	c := &ClaimedCopy{t: bt, name: name, done: make(chan struct{})}
	bt.mu.Lock()
	bt.claims[c] = true
	bt.mu.Unlock()
	go func() {
		defer close(c.done)
		k := &s3Composer{t: bt, ctx: ctx, key: bt.key(name), createOnly: true}
		err := k.copyParts(bf.st.loc.Bucket, bf.st.key(bf.name), bf.etag, 0, bf.size)
		if err == nil {
			err = k.complete()
		}
		if err != nil {
			k.abort()
			c.err = bt.conflict(name, err)
			return
		}
		c.etag = k.etag
	}()
	return c
}

// Name is the name the copy is made under.
func (c *ClaimedCopy) Name() string { return c.name }

// Wait waits for the copy and returns its error: one wrapping ErrConflict
// if a file of that name existed already.
func (c *ClaimedCopy) Wait() error {
	<-c.done
	return c.err
}

// Keep confirms the copy, once its bytes were found to have the digest its
// name claims: it becomes a content-named file of the target like those
// CopyNamed makes, which stays even if the target is aborted, since
// another run may use it. The copy must have succeeded.
func (c *ClaimedCopy) Keep() {
	c.t.mu.Lock()
	delete(c.t.claims, c)
	c.t.named[c.name] = true
	c.t.mu.Unlock()
}

// Discard waits for the copy and deletes it if it was made and is still
// the object it made.
func (c *ClaimedCopy) Discard(ctx context.Context) error {
	c.t.mu.Lock()
	owned := c.t.claims[c]
	delete(c.t.claims, c)
	c.t.mu.Unlock()
	if !owned {
		return nil
	}
	return c.remove(ctx)
}

func (c *ClaimedCopy) remove(ctx context.Context) error {
	if c.Wait() != nil {
		return nil
	}
	// The condition spares a file that another run wrote under this name
	// since: a run that writes it by its true digest overwrites it without
	// a condition. A server that ignores If-Match on a DELETE removes that
	// file too, which its run's verify would then miss.
	c.t.c.Requests.Add(1)
	_, err := c.t.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(c.t.loc.Bucket), Key: aws.String(c.t.key(c.name)), IfMatch: aws.String(c.etag)})
	if err != nil && !isPreconditionFailed(err) && !isNotFound(err) {
		return fmt.Errorf("storage: removing the copy %s, whose bytes do not match its name: %w", c.t.where(c.name), err)
	}
	return nil
}

// isNotFound reports whether err says the object is not there.
func isNotFound(err error) bool {
	var status interface{ HTTPStatusCode() int }
	return errors.As(err, &status) && status.HTTPStatusCode() == 404
}
