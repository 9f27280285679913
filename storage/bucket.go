package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/logging"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"

	gcaws "gocloud.dev/aws"
)

// bucketStore is an open bucket and the prefix a savepoint lies under.
type bucketStore struct {
	loc    Location
	b      *blob.Bucket
	s3     *s3.Client // for S3 only: conditions and copies gocloud lacks
	policy RetryPolicy
	c      *Counters
	// view is set for a view of another store's bucket under a longer
	// prefix (Sub), whose closing is the other's.
	view bool
}

func openBucketStore(ctx context.Context, loc Location, opts Options) (*bucketStore, error) {
	st := &bucketStore{loc: loc, policy: opts.Retry.orDefault(), c: opts.Counters}
	if st.c == nil {
		st.c = new(Counters)
	}
	var err error
	switch loc.Scheme {
	case "s3":
		st.b, st.s3, err = openS3(ctx, loc, st.policy, st.c)
	case "gs":
		st.b, err = openGCS(ctx, loc, st.policy, st.c)
	case "azblob":
		st.b, err = openAzure(loc, st.policy, st.c)
	default:
		err = fmt.Errorf("unsupported scheme %q", loc.Scheme)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: opening %s: %w", loc, err)
	}
	return st, nil
}

// openS3 builds the S3 client itself, rather than through gocloud's URL
// opener, so that its retries follow the policy and are counted. The
// parameters mean what they mean to gocloud's opener.
func openS3(ctx context.Context, loc Location, policy RetryPolicy, c *Counters) (*blob.Bucket, *s3.Client, error) {
	q := url.Values{}
	for k, v := range loc.Query {
		q[k] = v
	}
	var clientOpts []func(*s3.Options)
	var bucketOpts s3blob.Options
	for _, key := range []string{"use_path_style", "s3ForcePathStyle", "disable_https", "accelerate"} {
		v := q.Get(key)
		if v == "" {
			continue
		}
		q.Del(key)
		on, err := strconv.ParseBool(v)
		if err != nil {
			return nil, nil, fmt.Errorf("parameter %s=%q: %w", key, v, err)
		}
		switch key {
		case "use_path_style", "s3ForcePathStyle":
			clientOpts = append(clientOpts, func(o *s3.Options) { o.UsePathStyle = on })
		case "disable_https":
			clientOpts = append(clientOpts, func(o *s3.Options) { o.EndpointOptions.DisableHTTPS = on })
		case "accelerate":
			clientOpts = append(clientOpts, func(o *s3.Options) { o.UseAccelerate = on })
		}
	}
	if v := q.Get("ssetype"); v != "" {
		q.Del("ssetype")
		bucketOpts.EncryptionType = s3Encryption(v)
	}
	if v := q.Get("kmskeyid"); v != "" {
		q.Del("kmskeyid")
		bucketOpts.KMSEncryptionID = v
	}
	cfg, err := gcaws.V2ConfigFromURLParams(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	cfg.Retryer = func() aws.Retryer { return policy.awsRetryer(c) }
	// The SDK logs to stderr, for instance about every ranged read that
	// carries no whole-object checksum; its errors reach the caller anyway.
	cfg.Logger = logging.Nop{}
	client := s3.NewFromConfig(cfg, clientOpts...)
	bucketOpts.RequestChecksumCalculation = cfg.RequestChecksumCalculation
	b, err := s3blob.OpenBucket(ctx, client, loc.Bucket, &bucketOpts)
	return b, client, err
}

func (st *bucketStore) key(name string) string {
	if st.loc.Prefix == "" {
		return name
	}
	return st.loc.Prefix + "/" + name
}

func (st *bucketStore) where(name string) string { return st.loc.String() + "/" + name }

func (st *bucketStore) counters() *Counters { return st.c }

func (st *bucketStore) Close() error {
	if st.view {
		return nil
	}
	return st.b.Close()
}

func (st *bucketStore) Location() string { return st.loc.String() }

// openBucketDir opens a bucket location for reading.
func openBucketDir(ctx context.Context, loc Location, opts Options) (DirCloser, error) {
	st, err := openBucketStore(ctx, loc, opts)
	if err != nil {
		return nil, err
	}
	return &bucketDir{bucketStore: st}, nil
}

type bucketDir struct {
	*bucketStore
	mu sync.Mutex
	// preloaded holds the objects Preload read, by name.
	preloaded map[string]preloaded
}

// preloaded is what Preload read of an object: its first bytes, all of
// them when rest is nil, and otherwise the object for the bytes after.
type preloaded struct {
	head []byte
	rest *bucketFile
}

// Preload reads the file name of d when d lies in a bucket, its first limit
// bytes, in one request that also gives its size and version, and has d
// serve the later opens of it from those bytes. It is for a small file
// that several readers open one after another, as opening a savepoint
// does its _metadata (once to tell its layout, once to read it), where
// every open and read is a round trip. The bytes past limit of a larger
// file are read as any file's are. Elsewhere it does nothing. A missing
// file is an error that wraps fs.ErrNotExist.
func Preload(ctx context.Context, d Dir, name string, limit int64) error {
	bd, ok := d.(*bucketDir)
	if !ok {
		return nil
	}
	if err := CheckName(name); err != nil {
		return err
	}
	f, head, err := bd.openHead(ctx, name, limit)
	if err != nil {
		return err
	}
	p := preloaded{head: head}
	if f.size > int64(len(head)) {
		p.rest = f
	}
	bd.mu.Lock()
	defer bd.mu.Unlock()
	if bd.preloaded == nil {
		bd.preloaded = map[string]preloaded{}
	}
	bd.preloaded[name] = p
	return nil
}

// preloadedFile is a file Preload read, opened with its own context.
type preloadedFile struct {
	preloaded
	ctx context.Context
}

func (f *preloadedFile) Size() int64 {
	if f.rest != nil {
		return f.rest.size
	}
	return int64(len(f.head))
}

func (f *preloadedFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("storage: negative offset %d", off)
	}
	n := 0
	if off < int64(len(f.head)) {
		n = copy(p, f.head[off:])
	}
	if n == len(p) {
		return n, nil
	}
	if f.rest == nil {
		return n, io.EOF
	}
	m, err := WithContext(f.ctx, f.rest).ReadAt(p[n:], off+int64(n))
	return n + m, err
}

func (*preloadedFile) Close() error { return nil }

// Open asks for the object's size and version. The reads that follow are
// bound to ctx, and to that version: a replaced object fails them with
// ErrChanged.
func (d *bucketDir) Open(ctx context.Context, name string) (File, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if isTempName(name) {
		return nil, &fs.PathError{Op: "open", Path: d.where(name), Err: fs.ErrNotExist}
	}
	if f, ok := d.preloadedFile(ctx, name); ok {
		return f, nil
	}
	return d.stat(ctx, name)
}

// stat opens the object name as it is now on the server, with a request
// for its attributes, whether or not a copy of it was preloaded.
func (d *bucketDir) stat(ctx context.Context, name string) (*bucketFile, error) {
	d.c.Requests.Add(1)
	attrs, err := d.b.Attributes(ctx, d.key(name))
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil, &fs.PathError{Op: "open", Path: d.where(name), Err: fs.ErrNotExist}
		}
		return nil, fmt.Errorf("storage: %s: %w", d.where(name), err)
	}
	return &bucketFile{st: d.bucketStore, ctx: ctx, name: name, size: attrs.Size, etag: attrs.ETag, modTime: attrs.ModTime,
		generation: generationOf(attrs)}, nil
}

func (d *bucketDir) preloadedFile(ctx context.Context, name string) (File, bool) {
	d.mu.Lock()
	p, ok := d.preloaded[name]
	d.mu.Unlock()
	if !ok {
		return nil, false
	}
	return &preloadedFile{preloaded: p, ctx: ctx}, true
}

// OpenFirst opens the file name of d and reads its first len(p) bytes
// into p, or all of it when it is shorter, and returns the file and the
// bytes read. In a bucket one ranged GET does both, taking the object's
// size and version from the answer, where Open and ReadAt would be two
// round trips; it is how a reader that checks every file's first bytes
// opens its files. A missing file is an error that wraps fs.ErrNotExist.
func OpenFirst(ctx context.Context, d Dir, name string, p []byte) (File, int, error) {
	if InBucket(d) && len(p) > 0 {
		f, head, err := OpenHead(ctx, d, name, int64(len(p)))
		if err != nil {
			return nil, 0, err
		}
		return f, copy(p, head), nil
	}
	f, err := d.Open(ctx, name)
	if err != nil {
		return nil, 0, err
	}
	return readFirst(f, p)
}

// OpenHead is OpenFirst for a reader that does not know the file's length:
// it returns the file's first limit bytes, or all of a shorter file, in a
// slice of their length, read with the open in one request in a bucket.
func OpenHead(ctx context.Context, d Dir, name string, limit int64) (File, []byte, error) {
	if bd, ok := d.(*bucketDir); ok && limit > 0 {
		if err := CheckName(name); err != nil {
			return nil, nil, err
		}
		if _, ok := bd.preloadedFile(ctx, name); !ok {
			f, head, err := bd.openHead(ctx, name, limit)
			if err != nil {
				return nil, nil, err
			}
			return f, head, nil
		}
	}
	f, err := d.Open(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	head := make([]byte, min(max(limit, 0), f.Size()))
	f, n, err := readFirst(f, head)
	if err != nil {
		return nil, nil, err
	}
	return f, head[:n], nil
}

// readFirst reads the first bytes of an open file for OpenFirst and
// OpenHead.
func readFirst(f File, p []byte) (File, int, error) {
	n, err := f.ReadAt(p, 0)
	if err != nil && !(errors.Is(err, io.EOF) && int64(n) == f.Size()) {
		f.Close()
		return nil, n, err
	}
	return f, n, nil
}

// openHead opens the object name with a GET of its first limit bytes,
// and returns it with those bytes, fewer where it is shorter. An empty
// object has no range to serve: it is opened as Open does.
func (d *bucketDir) openHead(ctx context.Context, name string, limit int64) (*bucketFile, []byte, error) {
	r, refused, err := d.openGet(ctx, name, 0, limit, nil)
	if err != nil {
		return nil, nil, err
	}
	if r == nil {
		// Only an empty object has no first byte to serve.
		if refused.size != 0 {
			return nil, nil, fmt.Errorf("%w: %s had no first byte to read, and now has %d bytes", ErrChanged, d.where(name), refused.size)
		}
		return refused, nil, nil
	}
	defer r.Close()
	f := &bucketFile{st: d.bucketStore, ctx: ctx, name: name, size: r.Size(), modTime: r.ModTime()}
	var out s3.GetObjectOutput
	if r.As(&out) {
		f.etag = aws.ToString(out.ETag)
		if !sizeGiven(aws.ToString(out.ContentRange)) {
			// The answer does not say how long the object is: it is
			// asked, and the head read as every read is.
			return d.statHead(ctx, name, limit)
		}
	}
	var v objectVersion
	if r.As(&v) {
		f.etag, f.generation = v.ETag, v.Generation
	}
	if f.size < 0 {
		return nil, nil, fmt.Errorf("storage: %s: the server gives a size of %d", d.where(name), f.size)
	}
	head := make([]byte, min(limit, f.size))
	n, err := io.ReadFull(r, head)
	d.c.BytesRead.Add(int64(n))
	if err == nil {
		// Reading on to the body's end lets the connection be reused. A
		// server that ignores the range sends the whole object, whose
		// rest closing discards.
		r.Read(make([]byte, 1))
	} else if n < len(head) {
		// The body broke off: the rest is read as every read is, with
		// retries, and bound to the version the answer gave.
		if m, err := f.ReadAt(head[n:], int64(n)); n+m < len(head) {
			if err == nil || errors.Is(err, io.EOF) {
				err = fmt.Errorf("storage: %s ended after %d of its %d bytes", d.where(name), n+m, f.size)
			}
			return nil, nil, err
		}
	}
	return f, head, nil
}

// statHead is openHead by a request for the object's attributes, then a
// read of its first limit bytes.
func (d *bucketDir) statHead(ctx context.Context, name string, limit int64) (*bucketFile, []byte, error) {
	f, err := d.stat(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	head := make([]byte, min(limit, f.size))
	if m, err := f.ReadAt(head, 0); m < len(head) {
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("storage: %s ended after %d of its %d bytes", d.where(name), m, f.size)
		}
		return nil, nil, err
	}
	return f, head, nil
}

// openGet makes the GET that opens the object name: of length bytes at
// off, or of the range before sets. It is tried again as a read is, where
// the client does not retry itself. A range the server refuses as not
// satisfiable (an empty object has none to serve) gives no reader, and the
// object as it is now, opened by its attributes.
func (d *bucketDir) openGet(ctx context.Context, name string, off, length int64, before func(func(any) bool) error) (*blob.Reader, *bucketFile, error) {
	if isTempName(name) {
		return nil, nil, &fs.PathError{Op: "open", Path: d.where(name), Err: fs.ErrNotExist}
	}
	for attempt := 1; ; attempt++ {
		d.c.Requests.Add(1)
		r, err := d.b.NewRangeReader(ctx, d.key(name), off, length, &blob.ReaderOptions{BeforeRead: before})
		switch {
		case err == nil:
			return r, nil, nil
		case gcerrors.Code(err) == gcerrors.NotFound:
			return nil, nil, &fs.PathError{Op: "open", Path: d.where(name), Err: fs.ErrNotExist}
		case isRangeNotSatisfiable(err):
			f, err := d.stat(ctx, name)
			return nil, f, err
		// The S3 client has retried the request itself.
		case d.s3 != nil, !Retryable(err), attempt >= d.policy.Attempts:
			return nil, nil, fmt.Errorf("storage: %s: %w", d.where(name), err)
		}
		d.c.Retries.Add(1)
		if err := d.policy.sleep(ctx, attempt); err != nil {
			return nil, nil, err
		}
	}
}

// isRangeNotSatisfiable reports the answer to a ranged read of an empty
// object.
func isRangeNotSatisfiable(err error) bool {
	var status interface{ HTTPStatusCode() int }
	return errors.As(err, &status) && status.HTTPStatusCode() == http.StatusRequestedRangeNotSatisfiable
}

// objectVersion is what the As of a reader of the project's own clients
// gives of the version it serves: the ETag, and on GCS the generation.
type objectVersion struct {
	ETag       string
	Generation int64
}

// List names the objects under the prefix, temporary uploads and the
// lease of a removal of orphans left out.
func (d *bucketDir) List(ctx context.Context) ([]string, error) {
	objs, err := d.listObjects(ctx, "")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, o := range objs {
		if !isTempName(o.Name) && o.Name != CleanupName {
			names = append(names, o.Name)
		}
	}
	return names, nil
}

// Object is a file as a listing shows it.
type Object struct {
	Name    string
	Size    int64
	ModTime time.Time
}

// listObjects lists every object under the prefix whose name starts with
// under, temporaries included, sorted by name.
func (st *bucketStore) listObjects(ctx context.Context, under string) ([]Object, error) {
	prefix := ""
	if st.loc.Prefix != "" {
		prefix = st.loc.Prefix + "/"
	}
	var out []Object
	it := st.b.List(&blob.ListOptions{Prefix: prefix + under})
	st.c.Requests.Add(1)
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("storage: listing %s: %w", st.loc, err)
		}
		if o.IsDir {
			continue
		}
		out = append(out, Object{Name: strings.TrimPrefix(o.Key, prefix), Size: o.Size, ModTime: o.ModTime})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// isTempName reports whether an object is a temporary upload, never part
// of a savepoint.
func isTempName(name string) bool {
	base := name[strings.LastIndexByte(name, '/')+1:]
	return strings.HasPrefix(base, TempPrefix)
}

// bucketFile reads an object with one ranged GET per ReadAt.
type bucketFile struct {
	st      *bucketStore
	ctx     context.Context
	name    string
	size    int64
	etag    string
	modTime time.Time
	// generation is the GCS object's generation, 0 elsewhere.
	generation int64
}

func (f *bucketFile) Size() int64 { return f.size }

// bucketReadSize is ReadSize for a bucket object: large enough that a
// request's latency is small against its transfer, small enough that a
// few of them in flight per reader stay within a memory budget.
const bucketReadSize = 4 << 20

func (f *bucketFile) readSize() int64 { return bucketReadSize }

func (f *bucketFile) Close() error { return nil }

// ReadAt reads len(p) bytes at off. A connection that breaks or a throttled
// request is tried again for the bytes still missing, up to the policy's
// attempts; a changed object is not.
func (f *bucketFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("storage: %s: negative offset %d", f.st.where(f.name), off)
	}
	if off >= f.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := int(min(int64(len(p)), f.size-off))
	got := 0
	for attempt := 1; got < want; attempt++ {
		n, err := f.readRange(p[got:want], off+int64(got))
		got += n
		f.st.c.BytesRead.Add(int64(n))
		if err == nil {
			break
		}
		var opening *openError
		switch {
		case errors.Is(err, ErrChanged):
			return got, err
		// The S3 client has retried the request itself; only a body that
		// broke after the answer began is for this loop.
		case errors.As(err, &opening) && f.st.s3 != nil,
			!Retryable(err) || attempt >= f.st.policy.Attempts:
			return got, fmt.Errorf("storage: reading %s at offset %d: %w", f.st.where(f.name), off+int64(got), err)
		}
		f.st.c.Retries.Add(1)
		if err := f.st.policy.sleep(f.ctx, attempt); err != nil {
			return got, err
		}
	}
	if want < len(p) {
		return want, io.EOF
	}
	return want, nil
}

func (f *bucketFile) readRange(p []byte, off int64) (int, error) {
	f.st.c.Requests.Add(1)
	r, err := f.st.b.NewRangeReader(f.ctx, f.st.key(f.name), off, int64(len(p)), &blob.ReaderOptions{BeforeRead: f.ifMatch})
	if err != nil {
		return 0, &openError{f.changed(err)}
	}
	defer r.Close()
	// Where the store takes no version condition, the size and time of
	// what it serves tell a replaced object; some serve the time to the
	// second only.
	if r.Size() != f.size || (!r.ModTime().IsZero() && !f.modTime.IsZero() && !r.ModTime().Truncate(time.Second).Equal(f.modTime.Truncate(time.Second))) {
		return 0, fmt.Errorf("%w: %s was %d bytes of %v when opened, is %d bytes of %v now", ErrChanged, f.st.where(f.name), f.size, f.modTime, r.Size(), r.ModTime())
	}
	n, err := io.ReadFull(r, p)
	if err == nil {
		// Reading on to the body's end lets the connection be reused;
		// closing a body before its end discards the connection.
		var extra [1]byte
		if m, _ := r.Read(extra[:]); m != 0 {
			return n, fmt.Errorf("%w: %s served more bytes than asked for", ErrChanged, f.st.where(f.name))
		}
	}
	return n, err
}

// openError is a read that failed before its body began.
type openError struct{ err error }

func (e *openError) Error() string { return e.err.Error() }
func (e *openError) Unwrap() error { return e.err }

// ifMatch makes a read fail rather than return bytes of another version
// of the object than the one opened: on S3 and Azure by If-Match on the
// ETag, on GCS by asking for the generation opened.
func (f *bucketFile) ifMatch(as func(any) bool) error {
	return readIfMatch(f.etag, f.generation)(as)
}

func (f *bucketFile) changed(err error) error {
	switch {
	case gcerrors.Code(err) == gcerrors.NotFound:
		return fmt.Errorf("%w: %s was removed after it was opened", ErrChanged, f.st.where(f.name))
	case isPreconditionFailed(err):
		return fmt.Errorf("%w: %s was replaced after it was opened", ErrChanged, f.st.where(f.name))
	}
	return err
}

func s3Encryption(v string) (t s3types.ServerSideEncryption) {
	for _, e := range s3types.ServerSideEncryptionAes256.Values() {
		if strings.EqualFold(string(e), v) {
			return e
		}
	}
	return s3types.ServerSideEncryption(v)
}
