package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// bucketTarget writes a savepoint in place under a bucket prefix. Nothing
// is visible as a savepoint until Publish writes _metadata, with a
// condition: create-only, or with force, only over the _metadata that was
// there when the target was opened.
type bucketTarget struct {
	*bucketStore
	force bool
	// marker is the file written last, whose presence makes the target
	// whole: _metadata, unless the options name another.
	marker string
	// oldETag is the version of the _metadata being replaced, "" if none;
	// oldGeneration is the same on GCS.
	oldETag       string
	oldGeneration int64
	// old lists the files under the prefix when the target was opened
	// with force: a published replacement deletes those it does not use.
	old []string

	mu        sync.Mutex
	created   map[string]bool // exact names this run created, create-only
	named     map[string]bool // content names this run wrote
	temps     map[string]bool // keys of temporary uploads in flight
	composers map[*s3Composer]bool
	// claims are the claimed copies neither kept nor discarded yet.
	claims    map[*ClaimedCopy]bool
	meta      *bytes.Buffer
	published bool
}

func openBucketTarget(ctx context.Context, loc Location, opts TargetOptions) (Target, error) {
	st, err := openBucketStore(ctx, loc, opts.Options)
	if err != nil {
		return nil, err
	}
	marker := opts.Marker
	if marker == "" {
		marker = MetadataName
	}
	t := &bucketTarget{bucketStore: st, force: opts.Force, marker: marker, created: map[string]bool{}, named: map[string]bool{},
		temps: map[string]bool{}, composers: map[*s3Composer]bool{}, claims: map[*ClaimedCopy]bool{}}
	// The output there, if any: one of this target's kind, or of the
	// other (an export where a savepoint goes, or the reverse).
	found := ""
	for _, m := range []string{marker, otherMarker(marker)} {
		if m == "" || found != "" {
			continue
		}
		st.c.Requests.Add(1)
		attrs, err := st.b.Attributes(ctx, st.key(m))
		switch {
		case err == nil && !opts.Force:
			st.Close()
			return nil, fmt.Errorf("%w: %s holds %s (use --force to replace it)", ErrExists, loc, Holding(m))
		case err == nil:
			found = m
			if m == marker {
				t.oldETag = attrs.ETag
				t.oldGeneration = generationOf(attrs)
			}
		case gcerrors.Code(err) != gcerrors.NotFound:
			st.Close()
			return nil, fmt.Errorf("storage: %s: %w", st.where(m), err)
		}
	}
	if opts.Force {
		objs, err := st.listObjects(ctx, "")
		if err != nil {
			st.Close()
			return nil, err
		}
		for _, o := range objs {
			// A savepoint's files lie directly under its prefix: an object
			// below a deeper prefix is another savepoint's, or anybody's,
			// and stays, unless an export is replaced. An export's
			// datasets are its own directories.
			nested := t.marker == MetadataName && found != SuccessName && strings.Contains(o.Name, "/")
			if o.Name != t.marker && o.Name != CleanupName && !isTempName(o.Name) && !nested {
				t.old = append(t.old, o.Name)
			}
		}
		// The replaced output's marker goes first, so that no reader
		// takes what is left of it for whole.
		if i := slices.Index(t.old, found); i > 0 {
			t.old[0], t.old[i] = t.old[i], t.old[0]
		}
	}
	return t, nil
}

// otherMarker is the marker of the other kind of finished output than
// marker's, "" for a marker of neither kind.
func otherMarker(marker string) string {
	switch marker {
	case MetadataName:
		return SuccessName
	case SuccessName:
		return MetadataName
	}
	return ""
}

// Holding names what a location holding marker holds: a savepoint for
// _metadata, an export for _SUCCESS.
func Holding(marker string) string {
	switch marker {
	case MetadataName:
		return "a savepoint"
	case SuccessName:
		return "an export: its " + SuccessName + " exists"
	}
	return "a finished output: its " + marker + " exists"
}

func (t *bucketTarget) checkWritable(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if isTempName(name) {
		return fmt.Errorf("%w: %q has the prefix of temporary objects", ErrBadName, name)
	}
	if name == CleanupName {
		return fmt.Errorf("%w: %q is the lease of a removal of orphans", ErrBadName, name)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.published {
		return errors.New("storage: target already published")
	}
	return nil
}

// Create writes name create-only; _metadata is held back for Publish.
func (t *bucketTarget) Create(ctx context.Context, name string) (io.WriteCloser, error) {
	if err := t.checkWritable(name); err != nil {
		return nil, err
	}
	if name == t.marker {
		return &metadataWriter{t: t}, nil
	}
	t.c.Requests.Add(1)
	w := upload(ctx, t.b, t.key(name), &blob.WriterOptions{IfNotExist: true, ContentType: "application/octet-stream"})
	return &bucketWriter{t: t, name: name, w: w}, nil
}

type bucketWriter struct {
	t    *bucketTarget
	name string
	w    *uploadWriter
}

// uploadWriter streams what is written to it into one upload. It feeds the
// driver's Upload through a pipe rather than writing to a blob.Writer,
// whose Azure driver dereferences a nil pipe when Close follows a failed
// upload (a create-only conflict, say).
type uploadWriter struct {
	pw   *io.PipeWriter
	done chan error
}

func upload(ctx context.Context, b *blob.Bucket, key string, opts *blob.WriterOptions) *uploadWriter {
	pr, pw := io.Pipe()
	w := &uploadWriter{pw: pw, done: make(chan error, 1)}
	go func() {
		err := b.Upload(ctx, key, pr, opts)
		pr.CloseWithError(err)
		w.done <- err
	}()
	return w
}

func (w *uploadWriter) Write(p []byte) (int, error) { return w.pw.Write(p) }

// Close ends the upload and returns its outcome.
func (w *uploadWriter) Close() error {
	w.pw.Close()
	return <-w.done
}

func (w *bucketWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.t.c.BytesWritten.Add(int64(n))
	return n, err
}

func (w *bucketWriter) Close() error {
	if err := w.w.Close(); err != nil {
		return w.t.conflict(w.name, err)
	}
	w.t.mu.Lock()
	w.t.created[w.name] = true
	w.t.mu.Unlock()
	return nil
}

// conflict names a lost create-only write as such.
func (t *bucketTarget) conflict(name string, err error) error {
	if isPreconditionFailed(err) {
		return fmt.Errorf("%w: %s exists: it is left by a run that died before its _metadata, or another writer is writing it now (remove orphans to retry)", ErrConflict, t.where(name))
	}
	return fmt.Errorf("storage: writing %s: %w", t.where(name), err)
}

// metadataWriter keeps _metadata in memory until Publish.
type metadataWriter struct {
	t   *bucketTarget
	buf bytes.Buffer
}

func (w *metadataWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }

func (w *metadataWriter) Close() error {
	w.t.mu.Lock()
	defer w.t.mu.Unlock()
	w.t.meta = &w.buf
	return nil
}

// CreateNamed keeps a file of up to namedInMemory bytes in memory, and at
// Close, when the hash is known, puts it under its name in one request. A
// longer one is uploaded to a temporary object as it is written, and at
// Close copied on the server to its name and deleted: S3 cannot rename.
// Neither is conditional: an object of the same name holds the same bytes,
// and rewriting it renews its age, so that an orphan cleanup running
// meanwhile does not take it for an old one.
func (t *bucketTarget) CreateNamed(ctx context.Context, stem, ext string) (NamedWriter, error) {
	if err := t.checkWritable(stem + ext); err != nil {
		return nil, err
	}
	if stem+ext == t.marker {
		return nil, fmt.Errorf("%w: a data file cannot be named %s", ErrBadName, t.marker)
	}
	return &bucketNamed{t: t, ctx: ctx, h: NewContentHash(), stem: stem, ext: ext}, nil
}

// namedInMemory is the most a file of CreateNamed holds in memory: one
// request where the temporary object takes four (its upload, the copy, and
// the look and the delete that remove it).
const namedInMemory = 8 << 20

type bucketNamed struct {
	t   *bucketTarget
	ctx context.Context
	// held is the file while it is no longer than namedInMemory; then tmp
	// is its temporary object, written through w.
	held      []byte
	tmp       string
	w         *uploadWriter
	h         hash.Hash
	size      int64
	stem, ext string
	name      string
	// closed is set by the first Close, whose outcome closeErr is: a
	// second Close writes nothing again, and returns it.
	closed   bool
	closeErr error
}

func (w *bucketNamed) Write(p []byte) (int, error) {
	if w.closed {
		return 0, fmt.Errorf("storage: writing %s after its close: %w", w.t.where(w.stem+w.ext), fs.ErrClosed)
	}
	if w.w == nil && len(w.held)+len(p) > namedInMemory {
		w.upload()
		if _, err := w.w.Write(w.held); err != nil {
			return 0, err
		}
		w.held = nil
	}
	var n int
	var err error
	if w.w == nil {
		w.held, n = append(w.held, p...), len(p)
	} else {
		n, err = w.w.Write(p)
	}
	w.h.Write(p[:n])
	w.size += int64(n)
	w.t.c.BytesWritten.Add(int64(n))
	return n, err
}

// upload starts the upload to a temporary object.
func (w *bucketNamed) upload() {
	w.tmp = w.t.key(randomTempName())
	w.t.c.Requests.Add(1)
	w.w = upload(w.ctx, w.t.b, w.tmp, &blob.WriterOptions{ContentType: "application/octet-stream"})
	w.t.mu.Lock()
	w.t.temps[w.tmp] = true
	w.t.mu.Unlock()
}

func (w *bucketNamed) Close() error {
	if !w.closed {
		w.closed = true
		w.closeErr = w.close()
	}
	return w.closeErr
}

func (w *bucketNamed) close() error {
	name := NameByContent(w.stem, w.h.Sum(nil), w.ext)
	var err error
	if w.w == nil {
		w.t.c.Requests.Add(1)
		err = w.t.b.WriteAll(w.ctx, w.t.key(name), w.held, &blob.WriterOptions{ContentType: "application/octet-stream"})
		w.held = nil
	} else {
		if err = w.w.Close(); err == nil {
			err = w.t.copyKey(w.ctx, w.t.bucketStore, copyFrom{key: w.tmp}, w.t.key(name), w.size, false)
		}
		if derr := w.t.deleteKey(w.ctx, w.tmp); derr == nil {
			w.t.mu.Lock()
			delete(w.t.temps, w.tmp)
			w.t.mu.Unlock()
		}
	}
	if err != nil {
		return fmt.Errorf("storage: writing %s: %w", w.t.where(name), err)
	}
	w.name = name
	w.t.markNamed(name)
	return nil
}

func (w *bucketNamed) Name() string { return w.name }

// sameStore reports whether a copy from a can be made on b's server.
func sameStore(a, b *bucketStore) bool {
	return a.loc.Scheme == b.loc.Scheme && a.loc.Bucket == b.loc.Bucket && a.loc.Query.Get("endpoint") == b.loc.Query.Get("endpoint")
}

// Copy copies a whole file, create-only, on the server when src lies in the
// same bucket store.
func (t *bucketTarget) Copy(ctx context.Context, src Dir, srcName, name string) error {
	if err := t.checkWritable(name); err != nil {
		return err
	}
	sd, ok := src.(*bucketDir)
	if !ok || !sameStore(sd.bucketStore, t.bucketStore) {
		return copyThrough(ctx, t, src, srcName, name)
	}
	f, err := sd.Open(ctx, srcName)
	if err != nil {
		return err
	}
	bf := f.(*bucketFile)
	if err := t.copyKey(ctx, sd.bucketStore, bf.copyFrom(), t.key(name), f.Size(), true); err != nil {
		return t.conflict(name, err)
	}
	t.mu.Lock()
	t.created[name] = true
	t.mu.Unlock()
	return nil
}

// maxCopyObject is the largest object S3 copies in one CopyObject; larger
// ones are copied in parts.
const maxCopyObject = 5 << 30

// copyFrom is the source of a copy on the server: its key, and the
// version of it that was opened, if one was (its ETag, and on GCS its
// generation).
type copyFrom struct {
	key, etag  string
	generation int64
}

func (f *bucketFile) copyFrom() copyFrom {
	return copyFrom{key: f.st.key(f.name), etag: f.etag, generation: f.generation}
}

// copyKey copies src of store to dstKey of t on the server. createOnly
// refuses an existing destination; on S3 and GCS by condition, on Azure by
// a check that a writer racing this one can slip past. The version of the
// source that was opened binds the copy (on S3 and Azure its ETag, on GCS
// its generation): a source replaced or removed since fails it with
// ErrChanged.
func (t *bucketTarget) copyKey(ctx context.Context, store *bucketStore, src copyFrom, dstKey string, size int64, createOnly bool) error {
	t.c.Requests.Add(1)
	if t.s3 == nil {
		if createOnly {
			if ok, err := t.b.Exists(ctx, dstKey); err != nil {
				return err
			} else if ok {
				return fmt.Errorf("%w: %s exists", ErrConflict, dstKey)
			}
		}
		// GCS checks the condition itself too (its emulator does not).
		azure := false
		opts := &blob.CopyOptions{BeforeCopy: func(as func(any) bool) error {
			var c *gcsConditions
			if as(&c) {
				if createOnly {
					zero := int64(0)
					c.IfGenerationMatch = &zero
				}
				c.SourceGeneration = src.generation
			}
			var ac *azureConditions
			if azure = as(&ac); azure {
				ac.SourceIfMatch = src.etag
			}
			return nil
		}}
		if err := t.b.Copy(ctx, dstKey, src.key, opts); err != nil {
			// A generation that is gone is not found on GCS; on Azure the
			// only condition on the copy is the source's.
			bound := src.etag != "" || src.generation != 0
			if bound && (gcerrors.Code(err) == gcerrors.NotFound || azure && isPreconditionFailed(err)) {
				return fmt.Errorf("%w: %s was replaced or removed after it was read", ErrChanged, src.key)
			}
			return err
		}
		t.c.BytesCopied.Add(size)
		return nil
	}
	// A create-only copy is a multipart upload of copied parts, completed
	// with If-None-Match: not every server honours the condition on
	// CopyObject, every one that has conditions does on completion.
	if size > maxCopyObject || createOnly {
		k := &s3Composer{t: t, ctx: ctx, key: dstKey, createOnly: createOnly}
		err := k.copyParts(store.loc.Bucket, src.key, src.etag, 0, size)
		if err == nil {
			// With no part (an empty file), finish makes it one PUT.
			err = k.finish()
		}
		if err != nil {
			k.abort()
		}
		return err
	}
	return t.copyObject(ctx, store.loc.Bucket, src.key, src.etag, dstKey, size)
}

// copyObject copies a whole object of at most maxCopyObject bytes on S3
// in one request.
func (t *bucketTarget) copyObject(ctx context.Context, srcBucket, srcKey, srcETag, dstKey string, size int64) error {
	in := &s3.CopyObjectInput{Bucket: aws.String(t.loc.Bucket), Key: aws.String(dstKey), CopySource: aws.String(copySource(srcBucket, srcKey))}
	if srcETag != "" {
		in.CopySourceIfMatch = aws.String(srcETag)
	}
	if _, err := t.s3.CopyObject(ctx, in); err != nil {
		if isPreconditionFailed(err) {
			return fmt.Errorf("%w: %s was replaced after it was read", ErrChanged, srcKey)
		}
		return err
	}
	t.c.BytesCopied.Add(size)
	return nil
}

// copySource is the bucket/key of a copy's source, URL-encoded as S3 wants.
func copySource(bucket, key string) string { return url.QueryEscape(bucket + "/" + key) }

// isPreconditionFailed reports whether a write lost its condition, be it
// made through the bucket or on the S3 client directly.
func isPreconditionFailed(err error) bool {
	if gcerrors.Code(err) == gcerrors.FailedPrecondition {
		return true
	}
	var api interface{ ErrorCode() string }
	if errors.As(err, &api) && api.ErrorCode() == "PreconditionFailed" {
		return true
	}
	var status interface{ HTTPStatusCode() int }
	return errors.As(err, &status) && status.HTTPStatusCode() == 412
}

func (t *bucketTarget) deleteKey(ctx context.Context, key string) error {
	t.c.Requests.Add(1)
	err := t.b.Delete(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil
	}
	return err
}

// Compose writes with multipart uploads and server-side part copies on S3,
// through the client elsewhere.
func (t *bucketTarget) Compose(ctx context.Context, name string) (Composer, error) {
	if err := t.checkWritable(name); err != nil {
		return nil, err
	}
	if name == t.marker {
		return nil, fmt.Errorf("%w: %s is not composed", ErrBadName, t.marker)
	}
	if t.s3 == nil {
		w, err := t.Create(ctx, name)
		if err != nil {
			return nil, err
		}
		return &clientComposer{w: w, c: t.c}, nil
	}
	k := &s3Composer{t: t, ctx: ctx, name: name, key: t.key(name), createOnly: true}
	t.mu.Lock()
	t.composers[k] = true
	t.mu.Unlock()
	return k, nil
}

// ComposeNamed composes a content-named file: like Compose, without the
// create-only condition, since a file of that name holds the same bytes.
func (t *bucketTarget) ComposeNamed(ctx context.Context, name string) (Composer, error) {
	if err := t.checkWritable(name); err != nil {
		return nil, err
	}
	if name == t.marker {
		return nil, fmt.Errorf("%w: %s is not composed", ErrBadName, t.marker)
	}
	if t.s3 == nil {
		return &clientComposer{w: t.createNamedAs(ctx, name), c: t.c}, nil
	}
	k := &s3Composer{t: t, ctx: ctx, name: name, key: t.key(name), named: true}
	t.mu.Lock()
	t.composers[k] = true
	t.mu.Unlock()
	return k, nil
}

// CopyNamed copies the whole of src to a content-named file, on the server
// when src lies in the same store.
func (t *bucketTarget) CopyNamed(ctx context.Context, src File, name string) error {
	if err := t.checkWritable(name); err != nil {
		return err
	}
	if name == t.marker {
		return fmt.Errorf("%w: a data file cannot be named %s", ErrBadName, t.marker)
	}
	bf, ok := src.(*bucketFile)
	if !ok || !sameStore(bf.st, t.bucketStore) {
		w := t.createNamedAs(ctx, name)
		if _, err := io.Copy(w, io.NewSectionReader(src, 0, src.Size())); err != nil {
			w.Close()
			return fmt.Errorf("storage: copying into %s: %w", t.where(name), err)
		}
		return w.Close()
	}
	if err := t.copyKey(ctx, bf.st, bf.copyFrom(), t.key(name), bf.size, false); err != nil {
		return fmt.Errorf("storage: copying %s to %s: %w", bf.st.where(bf.name), t.where(name), err)
	}
	t.markNamed(name)
	return nil
}

func (t *bucketTarget) markNamed(name string) {
	t.mu.Lock()
	t.named[name] = true
	t.mu.Unlock()
}

// createNamedAs uploads a content-named file the caller has named: no
// condition, since a file of that name holds the same bytes.
func (t *bucketTarget) createNamedAs(ctx context.Context, name string) io.WriteCloser {
	t.c.Requests.Add(1)
	return &namedAsWriter{t: t, name: name, w: upload(ctx, t.b, t.key(name), &blob.WriterOptions{ContentType: "application/octet-stream"})}
}

type namedAsWriter struct {
	t    *bucketTarget
	name string
	w    *uploadWriter
}

func (w *namedAsWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.t.c.BytesWritten.Add(int64(n))
	return n, err
}

func (w *namedAsWriter) Close() error {
	if err := w.w.Close(); err != nil {
		return fmt.Errorf("storage: writing %s: %w", w.t.where(w.name), err)
	}
	w.t.markNamed(w.name)
	return nil
}

// Publish writes _metadata, which makes the savepoint visible in one PUT:
// create-only, or over the very version of _metadata that was there when
// the target was opened, so that of two writers one wins and the other
// learns it (ErrConflict). A forced publish then deletes the files of the
// replaced savepoint that the new one does not use.
func (t *bucketTarget) Publish(ctx context.Context) error {
	t.mu.Lock()
	meta, done := t.meta, t.published
	t.mu.Unlock()
	switch {
	case done:
		return errors.New("storage: target already published")
	case meta == nil:
		return fmt.Errorf("storage: %s: no %s written", t.Location(), t.marker)
	}
	opts := &blob.WriterOptions{ContentType: "application/octet-stream", IfNotExist: t.oldETag == ""}
	if t.oldETag != "" {
		// The replacement is conditional on the version replaced.
		opts.BeforeWrite = ifMatch(t.oldETag, t.oldGeneration)
	}
	if err := t.settleWithCleanup(ctx); err != nil {
		return err
	}
	t.c.Requests.Add(1)
	if err := t.b.Upload(ctx, t.key(t.marker), bytes.NewReader(meta.Bytes()), opts); err != nil {
		landed := t.landed(ctx, meta.Bytes())
		switch {
		case isPreconditionFailed(err) && landed:
			// Another writer of the very same savepoint won, or this
			// run's own first attempt did and the retry met its
			// condition: either way this run did not win the race.
			return fmt.Errorf("%w: %s holds a savepoint whose %s is exactly this run's, published by another writer or by an earlier attempt of this request whose answer was lost", ErrConflict, t.Location(), t.marker)
		case isPreconditionFailed(err):
			return fmt.Errorf("%w: another writer published a savepoint at %s first; nothing of this run is visible", ErrConflict, t.Location())
		case !landed:
			return fmt.Errorf("storage: writing %s: %w", t.where(t.marker), err)
		}
	}
	t.c.BytesWritten.Add(int64(meta.Len()))
	t.mu.Lock()
	t.published = true
	var obsolete []string
	for _, name := range t.old {
		if !t.created[name] && !t.named[name] {
			obsolete = append(obsolete, name)
		}
	}
	t.mu.Unlock()
	var errs []error
	for _, name := range obsolete {
		if err := t.deleteKey(ctx, t.key(name)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("storage: the savepoint is published at %s, but %d files of the one it replaced could not be removed and are orphans now: %w",
			t.Location(), len(errs), errors.Join(errs...))
	}
	return nil
}

// settleWithCleanup makes sure that no removal of orphans took a file this
// run wrote by its content. Such a file may have been an orphan already,
// a dead run's of the same bytes, which a removal that listed it before
// this run wrote it again would delete by the age it had then. A removal
// holds the prefix's lease (CleanupName) from before its listing to after
// its last delete, so once no lease is held, a file that is still there
// stays: a later removal lists it with the age this run gave it.
// Create-only files need no check: no listing before this run saw them.
// Neither do files under a deeper prefix (an export's), which a removal
// leaves. A content-named file this run put create-only needs the check
// all the same: a removal's DELETE of an older copy that it sent again
// after its answer was lost may land after this run's create.
func (t *bucketTarget) settleWithCleanup(ctx context.Context) error {
	t.mu.Lock()
	var named []string
	for name := range t.named {
		if !strings.Contains(name, "/") {
			named = append(named, name)
		}
	}
	t.mu.Unlock()
	if len(named) == 0 {
		return nil
	}
	if err := awaitCleanup(ctx, t.bucketStore); err != nil {
		return err
	}
	objs, err := t.listObjects(ctx, "")
	if err != nil {
		return err
	}
	there := make(map[string]bool, len(objs))
	for _, o := range objs {
		there[o.Name] = true
	}
	var gone []string
	for _, name := range named {
		if !there[name] {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		sort.Strings(gone)
		return fmt.Errorf("%w: a removal of orphans at %s deleted %d files this run had written (%s) while it wrote them; nothing of this run is visible, run it again",
			ErrConflict, t.Location(), len(gone), strings.Join(gone, ", "))
	}
	return nil
}

// landed reports whether the marker holds exactly want, after an upload
// of it failed. A failed upload may still have landed: its answer may have
// been lost after the server stored it, or the caller's context ended
// while the request was on its way; the savepoint is visible then, and
// Publish must not report it as not written. When the failure is the
// write's condition, the bytes cannot tell this run's own earlier attempt
// from another writer of the same savepoint, and Publish reports the
// conflict, saying so. The check runs on a context of its own, since the
// caller's may be done.
func (t *bucketTarget) landed(ctx context.Context, want []byte) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	t.c.Requests.Add(1)
	if attrs, err := t.b.Attributes(ctx, t.key(t.marker)); err != nil || attrs.Size != int64(len(want)) {
		return false
	}
	t.c.Requests.Add(1)
	got, err := t.b.ReadAll(ctx, t.key(t.marker))
	return err == nil && bytes.Equal(got, want)
}

// abortTimeout bounds the cleanup of an aborted target, which runs when
// the caller's context may already be done.
const abortTimeout = time.Minute

// Abort deletes the temporary uploads, the create-only files of this run,
// which no other writer can reference, and its unconfirmed claimed copies. Content-named files stay: a
// concurrent writer of the same bytes may use them; until a savepoint
// does, they are orphans (see RemoveOrphans).
func (t *bucketTarget) Abort() error { return t.abort(nil) }

// abort is Abort; with under, each delete of a name another writer may
// use is made under the context under gives for it, and none once under
// fails.
func (t *bucketTarget) abort(under Under) error {
	t.mu.Lock()
	if t.published {
		t.mu.Unlock()
		return nil
	}
	var temps, keys []string
	for k := range t.temps {
		temps = append(temps, k)
	}
	for name := range t.created {
		keys = append(keys, t.key(name))
	}
	var composers []*s3Composer
	for k := range t.composers {
		composers = append(composers, k)
	}
	var claims []*ClaimedCopy
	for c := range t.claims {
		claims = append(claims, c)
	}
	t.temps, t.created, t.composers, t.claims = map[string]bool{}, map[string]bool{}, map[*s3Composer]bool{}, map[*ClaimedCopy]bool{}
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
	defer cancel()
	var errs []error
	for _, k := range composers {
		k.ctx = ctx
		k.abort()
	}
	del := func(f func(context.Context) error) error {
		if under == nil {
			return f(ctx)
		}
		uctx, cancel, err := under(ctx)
		if err != nil {
			return err
		}
		defer cancel()
		return f(uctx)
	}
	// A temporary upload's random name is this writer's alone, so it goes
	// even once under fails: the hold guards the names that the next
	// holder may have written since.
	for _, key := range temps {
		if err := t.deleteKey(ctx, key); err != nil {
			errs = append(errs, err)
		}
	}
	for _, key := range keys {
		if err := del(func(ctx context.Context) error { return t.deleteKey(ctx, key) }); err != nil {
			errs = append(errs, err)
		}
	}
	// A claimed copy nobody confirmed may not hold the bytes its name
	// claims: it goes, unless another run has replaced it since.
	for _, c := range claims {
		if err := del(c.remove); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
