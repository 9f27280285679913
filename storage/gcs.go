package storage

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

// gcsBucket is a gocloud blob driver for Google Cloud Storage over its JSON
// API and net/http. It stands in for gocloud's own GCS driver, whose
// client links gRPC, xDS and telemetry packages that cost every command
// milliseconds of package initialisation whether it touches a bucket or
// not; the few calls a savepoint needs fit in this file.
type gcsBucket struct {
	hc     *http.Client
	base   string // scheme and host, without a trailing slash
	bucket string
	policy RetryPolicy
	c      *Counters
	// chunk is the size of an upload's chunks, gcsChunkSize but in tests.
	chunk int
}

// gcsScope is the OAuth scope for reading and writing objects.
const gcsScope = "https://www.googleapis.com/auth/devstorage.read_write"

// gcsChunkSize is the size of a resumable upload's chunks: a multiple of
// 256 KiB, as GCS requires, and what one upload holds in memory. An
// object that fits in one chunk is uploaded in one request.
const gcsChunkSize = 8 << 20

// openGCS opens a gs:// location. Credentials are Application Default
// Credentials, found as Google's SDKs find them; STORAGE_EMULATOR_HOST
// points the client at an emulator without credentials, as it does the
// SDKs; ?anonymous=true reads a public bucket without credentials.
func openGCS(ctx context.Context, loc Location, policy RetryPolicy, c *Counters) (*blob.Bucket, error) {
	b, err := newGCSBucket(ctx, loc, policy, c)
	if err != nil {
		return nil, err
	}
	return blob.NewBucket(b), nil
}

func newGCSBucket(ctx context.Context, loc Location, policy RetryPolicy, c *Counters) (*gcsBucket, error) {
	anonymous := false
	for k, v := range loc.Query {
		if k != "anonymous" {
			return nil, fmt.Errorf("parameter %s: a gs:// location takes only anonymous=true (credentials come from the environment)", k)
		}
		on, err := strconv.ParseBool(v[0])
		if err != nil {
			return nil, fmt.Errorf("parameter anonymous=%q: %w", v[0], err)
		}
		anonymous = on
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// Several ranged reads are in flight per file; without idle
	// connections to spare each would dial anew.
	tr.MaxIdleConnsPerHost = 64
	var rt http.RoundTripper = tr
	base := "https://storage.googleapis.com"
	if host := os.Getenv("STORAGE_EMULATOR_HOST"); host != "" {
		base = strings.TrimSuffix(host, "/")
		if !strings.Contains(base, "://") {
			base = "http://" + base
		}
	} else if !anonymous {
		creds, err := google.FindDefaultCredentials(ctx, gcsScope)
		if err != nil {
			return nil, fmt.Errorf("finding Google credentials (set GOOGLE_APPLICATION_CREDENTIALS, run gcloud auth application-default login, or add ?anonymous=true for a public bucket): %w", err)
		}
		rt = &oauth2.Transport{Source: creds.TokenSource, Base: tr}
	}
	hc := &http.Client{
		Transport: rt,
		// A resumable upload's unfinished chunks are answered with 308 and
		// no Location: an answer, not a redirect.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &gcsBucket{hc: hc, base: base, bucket: loc.Bucket, policy: policy, c: c, chunk: gcsChunkSize}, nil
}

// gcsConditions are the preconditions of a request, set through the As
// functions of the reader and writer options (see bucketFile.ifMatch and
// bucketTarget.Publish).
type gcsConditions struct {
	// Generation reads that generation of the object only.
	Generation int64
	// IfGenerationMatch, when set, makes a write or copy succeed only
	// over that generation; 0 means only where no object exists.
	IfGenerationMatch *int64
	// SourceGeneration, when set, copies that generation of the source
	// only: one that is gone is not found.
	SourceGeneration int64
}

func (c *gcsConditions) as(i any) bool {
	p, ok := i.(**gcsConditions)
	if ok {
		*p = c
	}
	return ok
}

func (c *gcsConditions) query(q url.Values) {
	if c.Generation != 0 {
		q.Set("generation", strconv.FormatInt(c.Generation, 10))
	}
	if c.IfGenerationMatch != nil {
		q.Set("ifGenerationMatch", strconv.FormatInt(*c.IfGenerationMatch, 10))
	}
	if c.SourceGeneration != 0 {
		q.Set("sourceGeneration", strconv.FormatInt(c.SourceGeneration, 10))
	}
}

// gcsAttrs is what Attributes.As gives for a GCS object.
type gcsAttrs struct{ Generation int64 }

// generationOf is the GCS generation that attrs give, 0 off GCS.
func generationOf(attrs *blob.Attributes) int64 {
	var ga gcsAttrs
	if attrs.As(&ga) {
		return ga.Generation
	}
	return 0
}

// gcsError is an error answer of GCS.
type gcsError struct {
	status int
	what   string
	msg    string
}

func (e *gcsError) Error() string {
	return fmt.Sprintf("gcs: %s: %d %s: %s", e.what, e.status, http.StatusText(e.status), e.msg)
}

// HTTPStatusCode lets Retryable and isPreconditionFailed judge the answer.
func (e *gcsError) HTTPStatusCode() int { return e.status }

// readError turns an unsuccessful answer into a gcsError, with the message
// of GCS's JSON error body where there is one.
func readError(resp *http.Response, what string) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	return &gcsError{status: resp.StatusCode, what: what, msg: msg}
}

func (b *gcsBucket) objectURL(key string) string {
	return b.base + "/storage/v1/b/" + url.PathEscape(b.bucket) + "/o/" + url.PathEscape(key)
}

// do sends the request that newReq builds, again after transient failures
// up to the policy's attempts, and returns an answer whose status is one
// of ok. A request whose body cannot be sent twice must not come here
// with more than one attempt.
func (b *gcsBucket) do(ctx context.Context, what string, newReq func() (*http.Request, error), ok ...int) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		req, err := newReq()
		if err != nil {
			return nil, err
		}
		resp, err := b.hc.Do(req.WithContext(ctx))
		if err == nil {
			for _, s := range ok {
				if resp.StatusCode == s {
					return resp, nil
				}
			}
			err = readError(resp, what)
			resp.Body.Close()
		}
		if !Retryable(err) || attempt >= b.policy.Attempts {
			return nil, err
		}
		b.c.Retries.Add(1)
		if err := b.policy.sleep(ctx, attempt); err != nil {
			return nil, err
		}
	}
}

func (b *gcsBucket) getJSON(ctx context.Context, what, u string, v any) error {
	resp, err := b.do(ctx, what, func() (*http.Request, error) { return http.NewRequest(http.MethodGet, u, nil) }, http.StatusOK)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("gcs: %s: decoding the answer: %w", what, err)
	}
	return nil
}

// gcsObject is an object resource of the JSON API; numbers come as strings.
type gcsObject struct {
	Name            string            `json:"name"`
	Size            int64             `json:"size,string"`
	Generation      int64             `json:"generation,string"`
	Updated         time.Time         `json:"updated"`
	TimeCreated     time.Time         `json:"timeCreated"`
	ETag            string            `json:"etag"`
	MD5Hash         string            `json:"md5Hash"`
	ContentType     string            `json:"contentType"`
	ContentEncoding string            `json:"contentEncoding"`
	CacheControl    string            `json:"cacheControl"`
	Metadata        map[string]string `json:"metadata"`
}

func (o *gcsObject) md5() []byte {
	m, _ := base64.StdEncoding.DecodeString(o.MD5Hash)
	return m
}

func (b *gcsBucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	var o gcsObject
	if err := b.getJSON(ctx, "object "+key, b.objectURL(key), &o); err != nil {
		return nil, err
	}
	return &driver.Attributes{
		CacheControl:    o.CacheControl,
		ContentEncoding: o.ContentEncoding,
		ContentType:     o.ContentType,
		Metadata:        o.Metadata,
		CreateTime:      o.TimeCreated,
		ModTime:         o.Updated,
		Size:            o.Size,
		MD5:             o.md5(),
		ETag:            o.ETag,
		AsFunc: func(i any) bool {
			p, ok := i.(*gcsAttrs)
			if ok {
				p.Generation = o.Generation
			}
			return ok
		},
	}, nil
}

func (b *gcsBucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	q := url.Values{"prefix": {opts.Prefix}}
	if opts.Delimiter != "" {
		q.Set("delimiter", opts.Delimiter)
	}
	if opts.PageSize > 0 {
		q.Set("maxResults", strconv.Itoa(opts.PageSize))
	}
	if len(opts.PageToken) > 0 {
		q.Set("pageToken", string(opts.PageToken))
	}
	var page struct {
		Items         []gcsObject `json:"items"`
		Prefixes      []string    `json:"prefixes"`
		NextPageToken string      `json:"nextPageToken"`
	}
	u := b.base + "/storage/v1/b/" + url.PathEscape(b.bucket) + "/o?" + q.Encode()
	if err := b.getJSON(ctx, "listing "+opts.Prefix, u, &page); err != nil {
		return nil, err
	}
	out := &driver.ListPage{NextPageToken: []byte(page.NextPageToken)}
	for _, o := range page.Items {
		out.Objects = append(out.Objects, &driver.ListObject{Key: o.Name, ModTime: o.Updated, Size: o.Size, MD5: o.md5()})
	}
	for _, p := range page.Prefixes {
		out.Objects = append(out.Objects, &driver.ListObject{Key: p, IsDir: true})
	}
	return out, nil
}

// NewRangeReader sends one GET for the range. It is not retried here: the
// caller retries reads for the bytes still missing (bucketFile.ReadAt).
func (b *gcsBucket) NewRangeReader(ctx context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	var conds gcsConditions
	if opts != nil && opts.BeforeRead != nil {
		if err := opts.BeforeRead(conds.as); err != nil {
			return nil, err
		}
	}
	if length == 0 {
		a, err := b.Attributes(ctx, key)
		if err != nil {
			return nil, err
		}
		return &httpReader{body: http.NoBody, attrs: driver.ReaderAttributes{ContentType: a.ContentType, ModTime: a.ModTime, Size: a.Size}}, nil
	}
	q := url.Values{"alt": {"media"}}
	conds.query(q)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.objectURL(key)+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	if offset > 0 || length > 0 {
		req.Header.Set("Range", byteRange(offset, length))
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return nil, err
	}
	return rangedReader(resp, "gcs", key, offset, readError)
}

// httpReader is the body of a GET with the attributes of its answer.
type httpReader struct {
	body    io.ReadCloser
	attrs   driver.ReaderAttributes
	version objectVersion
}

func (r *httpReader) Read(p []byte) (int, error)           { return r.body.Read(p) }
func (r *httpReader) Close() error                         { return r.body.Close() }
func (r *httpReader) Attributes() *driver.ReaderAttributes { return &r.attrs }

// As gives the version served, as an *objectVersion.
func (r *httpReader) As(i any) bool {
	p, ok := i.(*objectVersion)
	if ok {
		*p = r.version
	}
	return ok
}

// byteRange is the value of a Range header for length bytes from offset,
// or for the rest of the object when length is negative.
func byteRange(offset, length int64) string {
	r := fmt.Sprintf("bytes=%d-", offset)
	if length > 0 {
		r += strconv.FormatInt(offset+length-1, 10)
	}
	return r
}

// rangedReader reads the answer to a ranged GET of key from offset, taking
// the object's whole size from Content-Range. store names the client in
// messages; failed turns any other status into the store's error.
func rangedReader(resp *http.Response, store, key string, offset int64, failed func(*http.Response, string) error) (driver.Reader, error) {
	size := resp.ContentLength
	switch resp.StatusCode {
	case http.StatusOK:
		if offset > 0 {
			resp.Body.Close()
			return nil, fmt.Errorf("%s: reading %s: the server ignored the range from offset %d", store, key, offset)
		}
	case http.StatusPartialContent:
		cr := resp.Header.Get("Content-Range")
		_, total, ok := strings.Cut(cr, "/")
		n, err := strconv.ParseInt(total, 10, 64)
		if !ok || err != nil || n < 0 {
			resp.Body.Close()
			return nil, fmt.Errorf("%s: reading %s: the answer's Content-Range %q gives no size", store, key, cr)
		}
		size = n
	default:
		defer resp.Body.Close()
		return nil, failed(resp, "reading "+key)
	}
	mod, _ := http.ParseTime(resp.Header.Get("Last-Modified"))
	// GCS names the generation served; elsewhere it is 0.
	gen, _ := strconv.ParseInt(resp.Header.Get("X-Goog-Generation"), 10, 64)
	return &httpReader{
		body:    resp.Body,
		attrs:   driver.ReaderAttributes{ContentType: resp.Header.Get("Content-Type"), ModTime: mod, Size: size},
		version: objectVersion{ETag: resp.Header.Get("ETag"), Generation: gen},
	}, nil
}

func (b *gcsBucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	w := &gcsWriter{b: b, ctx: ctx, key: key, contentType: contentType}
	if opts.IfNotExist {
		zero := int64(0)
		w.conds.IfGenerationMatch = &zero
	}
	if opts.BeforeWrite != nil {
		if err := opts.BeforeWrite(w.conds.as); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// gcsWriter buffers a chunk: an object that fits in it goes up in one
// request at Close; a larger one through a resumable upload, a chunk at a
// time. Nothing is visible until the last request succeeds.
type gcsWriter struct {
	b           *gcsBucket
	ctx         context.Context
	key         string
	contentType string
	conds       gcsConditions
	buf         []byte
	session     string // the resumable upload's URL, once started
	sent        int64  // bytes the session holds
	err         error
}

func (w *gcsWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 && w.err == nil {
		if w.buf == nil {
			w.buf = make([]byte, 0, w.b.chunk)
		}
		k := copy(w.buf[len(w.buf):cap(w.buf)], p)
		w.buf = w.buf[:len(w.buf)+k]
		n += k
		p = p[k:]
		if len(w.buf) == cap(w.buf) && len(p) > 0 {
			w.err = w.flush(false)
		}
	}
	return n, w.err
}

func (w *gcsWriter) Close() error {
	if w.err != nil {
		w.cancel()
		return w.err
	}
	if err := w.ctx.Err(); err != nil {
		w.cancel()
		return err
	}
	if w.session == "" {
		return w.uploadWhole()
	}
	if err := w.flush(true); err != nil {
		w.cancel()
		return err
	}
	return nil
}

func (w *gcsWriter) uploadQuery(uploadType string) string {
	q := url.Values{"uploadType": {uploadType}, "name": {w.key}}
	w.conds.query(q)
	return w.b.base + "/upload/storage/v1/b/" + url.PathEscape(w.b.bucket) + "/o?" + q.Encode()
}

// uploadWhole sends an object that fits in one chunk in one request.
func (w *gcsWriter) uploadWhole() error {
	resp, err := w.b.do(w.ctx, "uploading "+w.key, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPost, w.uploadQuery("media"), bytes.NewReader(w.buf))
		if err == nil {
			req.Header.Set("Content-Type", w.contentType)
		}
		return req, err
	}, http.StatusOK)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// flush sends the buffer as the session's next chunk, starting the session
// first if need be; last finishes the object. A chunk whose request fails
// transiently is sent again from where the server says it stands.
func (w *gcsWriter) flush(last bool) error {
	if w.session == "" {
		if err := w.start(); err != nil {
			return err
		}
	}
	start := w.sent
	total := "*"
	if last {
		total = strconv.FormatInt(start+int64(len(w.buf)), 10)
	}
	for attempt := 1; ; attempt++ {
		from := w.sent - start
		chunk := w.buf[from:]
		req, err := http.NewRequestWithContext(w.ctx, http.MethodPut, w.session, bytes.NewReader(chunk))
		if err != nil {
			return err
		}
		if len(chunk) == 0 {
			req.Header.Set("Content-Range", "bytes */"+total)
		} else {
			req.Header.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%s", w.sent, w.sent+int64(len(chunk))-1, total))
		}
		resp, err := w.b.hc.Do(req)
		if err == nil {
			switch {
			case last && (resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated):
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				w.sent += int64(len(chunk))
				w.buf = w.buf[:0]
				return nil
			case !last && resp.StatusCode == http.StatusPermanentRedirect:
				resp.Body.Close()
				before := w.sent
				if err := w.acknowledged(resp, start); err != nil {
					return err
				}
				if w.sent == start+int64(len(w.buf)) {
					w.buf = w.buf[:0]
					return nil
				}
				if w.sent > before {
					// The server took part of the chunk; send it the rest.
					continue
				}
				err = fmt.Errorf("gcs: uploading %s: the server took none of a chunk of %d bytes", w.key, len(chunk))
			}
			if err == nil {
				err = readError(resp, "uploading "+w.key)
				resp.Body.Close()
			}
		}
		if !Retryable(err) || attempt >= w.b.policy.Attempts {
			return err
		}
		w.b.c.Retries.Add(1)
		if err := w.b.policy.sleep(w.ctx, attempt); err != nil {
			return err
		}
		if err := w.status(start); err != nil {
			return err
		}
	}
}

// start opens a resumable upload session, with the write's conditions.
func (w *gcsWriter) start() error {
	meta, _ := json.Marshal(map[string]string{"name": w.key, "contentType": w.contentType})
	resp, err := w.b.do(w.ctx, "starting the upload of "+w.key, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPost, w.uploadQuery("resumable"), bytes.NewReader(meta))
		if err == nil {
			req.Header.Set("Content-Type", "application/json; charset=UTF-8")
			req.Header.Set("X-Upload-Content-Type", w.contentType)
		}
		return req, err
	}, http.StatusOK, http.StatusCreated)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	w.session = resp.Header.Get("Location")
	if w.session == "" {
		return fmt.Errorf("gcs: uploading %s: the server started no resumable session", w.key)
	}
	return nil
}

// status asks how much of the upload the server holds, after a failed
// chunk.
func (w *gcsWriter) status(start int64) error {
	resp, err := w.b.do(w.ctx, "asking after the upload of "+w.key, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPut, w.session, nil)
		if err == nil {
			req.Header.Set("Content-Range", "bytes */*")
		}
		return req, err
	}, http.StatusPermanentRedirect)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return w.acknowledged(resp, start)
}

// acknowledged takes the server's count of bytes received from a 308
// answer's Range header (none: nothing yet). It must lie within the chunk
// being sent: the bytes before it are gone from the buffer.
func (w *gcsWriter) acknowledged(resp *http.Response, start int64) error {
	got := int64(0)
	if r := resp.Header.Get("Range"); r != "" {
		_, end, ok := strings.Cut(r, "-")
		n, err := strconv.ParseInt(end, 10, 64)
		if !ok || err != nil {
			return fmt.Errorf("gcs: uploading %s: the server's Range %q is not bytes=0-N", w.key, r)
		}
		got = n + 1
	}
	if got < start || got > start+int64(len(w.buf)) {
		return fmt.Errorf("gcs: uploading %s: the server holds %d bytes, outside the chunk of bytes %d to %d being sent", w.key, got, start, start+int64(len(w.buf)))
	}
	w.sent = got
	return nil
}

// cancel ends an unfinished upload session, so that the server drops what
// it holds of it; an object never appears from it either way.
func (w *gcsWriter) cancel() {
	if w.session == "" {
		return
	}
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if req, err := http.NewRequestWithContext(ctx, http.MethodDelete, w.session, nil); err == nil {
		if resp, err := w.b.hc.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	w.session = ""
}

// Copy rewrites the object on the server, in as many calls as the server
// takes for it.
func (b *gcsBucket) Copy(ctx context.Context, dstKey, srcKey string, opts *driver.CopyOptions) error {
	var conds gcsConditions
	if opts != nil && opts.BeforeCopy != nil {
		if err := opts.BeforeCopy(conds.as); err != nil {
			return err
		}
	}
	token := ""
	for {
		q := url.Values{}
		conds.query(q)
		if token != "" {
			q.Set("rewriteToken", token)
		}
		u := b.objectURL(srcKey) + "/rewriteTo/b/" + url.PathEscape(b.bucket) + "/o/" + url.PathEscape(dstKey) + "?" + q.Encode()
		resp, err := b.do(ctx, "copying "+srcKey+" to "+dstKey, func() (*http.Request, error) {
			req, err := http.NewRequest(http.MethodPost, u, strings.NewReader("{}"))
			if err == nil {
				req.Header.Set("Content-Type", "application/json")
			}
			return req, err
		}, http.StatusOK)
		if err != nil {
			return err
		}
		var r struct {
			Done         bool   `json:"done"`
			RewriteToken string `json:"rewriteToken"`
		}
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		switch {
		case err != nil:
			return fmt.Errorf("gcs: copying %s to %s: decoding the answer: %w", srcKey, dstKey, err)
		case r.Done:
			return nil
		case r.RewriteToken == "":
			return fmt.Errorf("gcs: copying %s to %s: the server neither finished nor gave a token to go on", srcKey, dstKey)
		}
		token = r.RewriteToken
	}
}

// Delete deletes key, on the conditions that opts' BeforeDelete sets on
// a *gcsConditions (ifGenerationMatch).
func (b *gcsBucket) Delete(ctx context.Context, key string, opts *driver.DeleteOptions) error {
	var c gcsConditions
	if opts != nil && opts.BeforeDelete != nil {
		if err := opts.BeforeDelete(c.as); err != nil {
			return err
		}
	}
	resp, err := b.do(ctx, "deleting "+key, func() (*http.Request, error) {
		u := b.objectURL(key)
		if q := (url.Values{}); c.IfGenerationMatch != nil {
			c.query(q)
			u += "?" + q.Encode()
		}
		return http.NewRequest(http.MethodDelete, u, nil)
	}, http.StatusNoContent, http.StatusOK)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

func (b *gcsBucket) ErrorCode(err error) gcerrors.ErrorCode {
	var e *gcsError
	switch {
	case errors.Is(err, context.Canceled):
		return gcerrors.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return gcerrors.DeadlineExceeded
	case !errors.As(err, &e):
		return gcerrors.Unknown
	}
	switch s := e.status; {
	case s == http.StatusNotFound:
		return gcerrors.NotFound
	case s == http.StatusPreconditionFailed:
		return gcerrors.FailedPrecondition
	case s == http.StatusUnauthorized, s == http.StatusForbidden:
		return gcerrors.PermissionDenied
	case s == http.StatusBadRequest:
		return gcerrors.InvalidArgument
	case s == http.StatusConflict:
		return gcerrors.AlreadyExists
	case s == http.StatusTooManyRequests:
		return gcerrors.ResourceExhausted
	case s >= 500:
		return gcerrors.Internal
	}
	return gcerrors.Unknown
}

func (b *gcsBucket) As(any) bool { return false }

func (b *gcsBucket) ErrorAs(err error, i any) bool { return errors.As(err, i) }

func (b *gcsBucket) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", errors.New("gcs: signed URLs are not supported")
}

func (b *gcsBucket) Close() error {
	b.hc.CloseIdleConnections()
	return nil
}
