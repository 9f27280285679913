package storage

import (
	"bytes"
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// S3's multipart rules: every part but the last holds at least minPart
// bytes and at most maxPart, and an upload has at most maxParts.
const (
	minPart  = 5 << 20
	maxPart  = 5 << 30
	maxParts = 10000
	// clientPart is the size at which bytes written through the client
	// are sent as a part: above the minimum, small enough to bound memory.
	clientPart = 8 << 20
)

// s3Composer builds an object from a multipart upload whose parts are
// either bytes sent by this process (UploadPart) or ranges of objects
// copied by the server (UploadPartCopy). A range may be a part of its own
// only where the rule allows: at least minPart bytes, or the last part. A
// shorter range is read through the client and joins the bytes around it;
// bytes written before a long range are topped up from its start to reach
// minPart. An object that ends up smaller than one part is a single PUT.
type s3Composer struct {
	t          *bucketTarget
	ctx        context.Context
	name, key  string
	createOnly bool
	// named says the caller named the file by its content (ComposeNamed).
	named bool
	// whole is a first piece that is the whole of an object: if nothing
	// follows it, the file is one copy of that object.
	whole *piece

	uploadID *string
	parts    []s3types.CompletedPart
	pending  []byte
	// tail is a short range not yet read: if nothing follows it, it is
	// copied as the last part, which may be short.
	tail *piece
	err  error
	// etag is the object's version once the upload is complete.
	etag string
}

type piece struct {
	src    *bucketFile
	off, n int64
}

func (k *s3Composer) Write(p []byte) (int, error) {
	if k.err != nil {
		return 0, k.err
	}
	if err := k.flushWhole(); err != nil {
		return 0, err
	}
	if err := k.readTail(); err != nil {
		return 0, err
	}
	k.pending = append(k.pending, p...)
	k.t.c.BytesWritten.Add(int64(len(p)))
	for len(k.pending) >= clientPart {
		if err := k.sendPending(clientPart); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (k *s3Composer) CopyRange(ctx context.Context, src File, off, n int64) error {
	if k.err != nil {
		return k.err
	}
	if off < 0 || n < 0 || off > src.Size()-n {
		return k.fail(fmt.Errorf("storage: range %d+%d outside a file of %d bytes", off, n, src.Size()))
	}
	bf, ok := src.(*bucketFile)
	if !ok || !sameStore(bf.st, k.t.bucketStore) {
		return k.through(src, off, n)
	}
	// A create-only file is never one CopyObject: not every server
	// honours the condition there (see copyKey).
	if !k.createOnly && k.uploadID == nil && len(k.pending) == 0 && k.tail == nil && k.whole == nil &&
		off == 0 && n == bf.size && n > 0 && n <= maxCopyObject {
		k.whole = &piece{src: bf, off: off, n: n}
		return nil
	}
	if err := k.flushWhole(); err != nil {
		return err
	}
	return k.copyRange(bf, off, n)
}

// flushWhole copies a held whole object as a range, since something
// follows it.
func (k *s3Composer) flushWhole() error {
	if k.whole == nil {
		return nil
	}
	p := k.whole
	k.whole = nil
	return k.copyRange(p.src, p.off, p.n)
}

// copyRange appends a range of an object of the same store.
func (k *s3Composer) copyRange(bf *bucketFile, off, n int64) error {
	if err := k.readTail(); err != nil {
		return err
	}
	if len(k.pending) > 0 && len(k.pending) < minPart {
		fill := int64(minPart - len(k.pending))
		if n-fill < minPart {
			return k.through(bf, off, n)
		}
		if err := k.through(bf, off, fill); err != nil {
			return err
		}
		off, n = off+fill, n-fill
	}
	if len(k.pending) > 0 {
		if err := k.sendPending(len(k.pending)); err != nil {
			return err
		}
	}
	if n >= minPart {
		return k.copyParts(bf.st.loc.Bucket, bf.st.key(bf.name), bf.etag, off, n)
	}
	if n > 0 {
		k.tail = &piece{src: bf, off: off, n: n}
	}
	return nil
}

// through reads a range through the client and appends it like written
// bytes.
func (k *s3Composer) through(src File, off, n int64) error {
	buf := make([]byte, min(n, 1<<20))
	for n > 0 {
		m := min(n, int64(len(buf)))
		if _, err := src.ReadAt(buf[:m], off); err != nil {
			return k.fail(err)
		}
		if _, err := k.Write(buf[:m]); err != nil {
			return err
		}
		off, n = off+m, n-m
	}
	return nil
}

// readTail turns a deferred short range into written bytes, since
// something follows it.
func (k *s3Composer) readTail() error {
	if k.tail == nil {
		return nil
	}
	p := k.tail
	k.tail = nil
	return k.through(p.src, p.off, p.n)
}

func (k *s3Composer) fail(err error) error {
	if k.err == nil {
		k.err = err
	}
	return k.err
}

func (k *s3Composer) start() error {
	if k.uploadID != nil {
		return nil
	}
	k.t.c.Requests.Add(1)
	out, err := k.t.s3.CreateMultipartUpload(k.ctx, &s3.CreateMultipartUploadInput{
		Bucket: aws.String(k.t.loc.Bucket), Key: aws.String(k.key), ContentType: aws.String("application/octet-stream")})
	if err != nil {
		return k.fail(fmt.Errorf("storage: starting the upload of %s: %w", k.key, err))
	}
	k.uploadID = out.UploadId
	return nil
}

func (k *s3Composer) nextPart() (*int32, error) {
	if len(k.parts) >= maxParts {
		return nil, k.fail(fmt.Errorf("storage: %s needs more than %d parts", k.key, maxParts))
	}
	return aws.Int32(int32(len(k.parts) + 1)), nil
}

// sendPending uploads the first n pending bytes as a part.
func (k *s3Composer) sendPending(n int) error {
	if err := k.start(); err != nil {
		return err
	}
	num, err := k.nextPart()
	if err != nil {
		return err
	}
	k.t.c.Requests.Add(1)
	out, err := k.t.s3.UploadPart(k.ctx, &s3.UploadPartInput{Bucket: aws.String(k.t.loc.Bucket), Key: aws.String(k.key),
		UploadId: k.uploadID, PartNumber: num, Body: bytes.NewReader(k.pending[:n]), ContentLength: aws.Int64(int64(n))})
	if err != nil {
		return k.fail(fmt.Errorf("storage: uploading part %d of %s: %w", *num, k.key, err))
	}
	k.parts = append(k.parts, s3types.CompletedPart{PartNumber: num, ETag: out.ETag})
	k.pending = append(k.pending[:0], k.pending[n:]...)
	return nil
}

// copyParts copies off..off+n of srcKey as parts of at most maxPart bytes,
// of even size so that none falls short of minPart. n must be at least
// minPart unless these are the upload's last parts. A srcETag binds the
// copies to the version of the source that was read.
func (k *s3Composer) copyParts(srcBucket, srcKey, srcETag string, off, n int64) error {
	if n == 0 {
		return nil
	}
	if err := k.start(); err != nil {
		return err
	}
	count := (n + maxPart - 1) / maxPart
	for i := range count {
		lo := off + n*i/count
		hi := off + n*(i+1)/count
		num, err := k.nextPart()
		if err != nil {
			return err
		}
		k.t.c.Requests.Add(1)
		in := &s3.UploadPartCopyInput{Bucket: aws.String(k.t.loc.Bucket), Key: aws.String(k.key),
			UploadId: k.uploadID, PartNumber: num, CopySource: aws.String(copySource(srcBucket, srcKey)),
			CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", lo, hi-1))}
		if srcETag != "" {
			in.CopySourceIfMatch = aws.String(srcETag)
		}
		out, err := k.t.s3.UploadPartCopy(k.ctx, in)
		if isPreconditionFailed(err) {
			err = fmt.Errorf("%w: %s was replaced after it was read", ErrChanged, srcKey)
		}
		if err != nil {
			return k.fail(fmt.Errorf("storage: copying bytes %d-%d of %s into part %d of %s: %w", lo, hi-1, srcKey, *num, k.key, err))
		}
		k.parts = append(k.parts, s3types.CompletedPart{PartNumber: num, ETag: out.CopyPartResult.ETag})
		k.t.c.BytesCopied.Add(hi - lo)
	}
	return nil
}

// Close sends what remains as the last part and completes the upload,
// create-only; a file that never reached a part is one PUT.
func (k *s3Composer) Close() error {
	defer k.forget()
	if k.err != nil {
		k.abort()
		return k.err
	}
	if err := k.finish(); err != nil {
		k.abort()
		return k.t.conflict(k.name, err)
	}
	k.t.mu.Lock()
	if k.named {
		k.t.named[k.name] = true
	} else {
		k.t.created[k.name] = true
	}
	k.t.mu.Unlock()
	return nil
}

func (k *s3Composer) finish() error {
	if p := k.whole; p != nil {
		k.whole = nil
		return k.t.copyObject(k.ctx, p.src.st.loc.Bucket, p.src.st.key(p.src.name), p.src.etag, k.key, p.n)
	}
	switch {
	case k.tail != nil && len(k.pending) == 0:
		p := k.tail
		k.tail = nil
		if err := k.copyParts(p.src.st.loc.Bucket, p.src.st.key(p.src.name), p.src.etag, p.off, p.n); err != nil {
			return err
		}
	case k.uploadID == nil:
		if err := k.readTail(); err != nil {
			return err
		}
		in := &s3.PutObjectInput{Bucket: aws.String(k.t.loc.Bucket), Key: aws.String(k.key), Body: bytes.NewReader(k.pending),
			ContentLength: aws.Int64(int64(len(k.pending))), ContentType: aws.String("application/octet-stream")}
		if k.createOnly {
			in.IfNoneMatch = aws.String("*")
		}
		k.t.c.Requests.Add(1)
		_, err := k.t.s3.PutObject(k.ctx, in)
		return err
	}
	if err := k.readTail(); err != nil {
		return err
	}
	if len(k.pending) > 0 {
		if err := k.sendPending(len(k.pending)); err != nil {
			return err
		}
	}
	return k.complete()
}

func (k *s3Composer) complete() error {
	in := &s3.CompleteMultipartUploadInput{Bucket: aws.String(k.t.loc.Bucket), Key: aws.String(k.key), UploadId: k.uploadID,
		MultipartUpload: &s3types.CompletedMultipartUpload{Parts: k.parts}}
	if k.createOnly {
		in.IfNoneMatch = aws.String("*")
	}
	k.t.c.Requests.Add(1)
	out, err := k.t.s3.CompleteMultipartUpload(k.ctx, in)
	if err != nil {
		return err
	}
	k.etag = aws.ToString(out.ETag)
	k.uploadID = nil
	return nil
}

// abort drops an unfinished upload, whose parts S3 would otherwise keep
// (and bill) without showing them.
func (k *s3Composer) abort() {
	if k.uploadID == nil {
		return
	}
	k.t.c.Requests.Add(1)
	k.t.s3.AbortMultipartUpload(k.ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(k.t.loc.Bucket), Key: aws.String(k.key), UploadId: k.uploadID})
	k.uploadID = nil
}

func (k *s3Composer) forget() {
	k.t.mu.Lock()
	delete(k.t.composers, k)
	k.t.mu.Unlock()
}
