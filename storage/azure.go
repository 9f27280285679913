package storage

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
)

// azureBucket is a gocloud blob driver for Azure Blob Storage over its
// REST API and net/http. It stands in for gocloud's own Azure driver,
// whose SDK and token credentials (the Microsoft authentication library)
// cost every command package initialisation whether it touches a bucket
// or not; the calls a savepoint needs fit in this file. Requests are
// signed with the account's Shared Key, carry a SAS token, or carry a
// Microsoft Entra ID bearer token (azure_token.go).
type azureBucket struct {
	hc        *http.Client
	base      string // the service URL: scheme, host and, path-style, the account
	container string
	account   string
	key       []byte           // the account key, for Shared Key signing; nil with a SAS
	sas       url.Values       // the SAS token's parameters, added to every request
	cred      *azureCredential // the bearer token's source, without key or SAS
	policy    RetryPolicy
	c         *Counters
	// block is the size of an upload's blocks, azureBlockSize but in tests.
	block int
}

// azureVersion is the REST API version the requests ask for.
const azureVersion = "2021-08-06"

// azureBlockSize is the size of an upload's blocks and what one upload
// holds in memory. An object that fits in one block is uploaded in one
// Put Blob.
const azureBlockSize = 8 << 20

// Azurite's development account and its key, which a connection string's
// UseDevelopmentStorage=true stands for.
const (
	azureEmulatorAccount = "devstoreaccount1"
	azureEmulatorKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// openAzure opens an azblob:// location. The account, its key, a SAS token
// or a connection string come from the environment, as gocloud's driver
// reads them (AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY, else
// AZURE_STORAGE_SAS_TOKEN, else AZURE_STORAGE_CONNECTION_STRING), and the
// service's address from AZURE_STORAGE_DOMAIN, AZURE_STORAGE_PROTOCOL,
// AZURE_STORAGE_IS_CDN and AZURE_STORAGE_IS_LOCAL_EMULATOR, which the
// URL's domain, protocol, cdn, localemu and storage_account parameters
// override. Without a key, SAS or connection string the requests carry a
// Microsoft Entra ID token (see azureCredential).
func openAzure(loc Location, policy RetryPolicy, c *Counters) (*blob.Bucket, error) {
	b, err := newAzureBucket(loc, policy, c, os.Getenv)
	if err != nil {
		return nil, err
	}
	return blob.NewBucket(b), nil
}

// azureService is where the service is and how requests to it authorise.
type azureService struct {
	account, key, sas string
	token             bool // neither key nor SAS: a bearer token
	domain, protocol  string
	cdn, emulator     bool
	endpoint          string // a connection string's BlobEndpoint, whole
}

func (s *azureService) url() (string, error) {
	if s.endpoint != "" {
		return strings.TrimSuffix(s.endpoint, "/"), nil
	}
	if s.account == "" {
		return "", errors.New("azure: no storage account: set AZURE_STORAGE_ACCOUNT, or ?storage_account=")
	}
	domain := cmp.Or(s.domain, "blob.core.windows.net")
	protocol := cmp.Or(s.protocol, "https")
	if protocol != "http" && protocol != "https" {
		return "", fmt.Errorf("azure: protocol %q: http or https", protocol)
	}
	switch {
	case s.emulator || strings.HasPrefix(domain, "127.0.0.1") || strings.HasPrefix(domain, "localhost"):
		return protocol + "://" + domain + "/" + s.account, nil
	case s.cdn:
		return protocol + "://" + domain, nil
	}
	return protocol + "://" + s.account + "." + domain, nil
}

// azureServiceFromEnv reads the environment as gocloud's driver does.
func azureServiceFromEnv(getenv func(string) string) (azureService, error) {
	s := azureService{
		account: getenv("AZURE_STORAGE_ACCOUNT"), key: getenv("AZURE_STORAGE_KEY"),
		domain: getenv("AZURE_STORAGE_DOMAIN"), protocol: getenv("AZURE_STORAGE_PROTOCOL"),
	}
	s.cdn, _ = strconv.ParseBool(getenv("AZURE_STORAGE_IS_CDN"))
	s.emulator, _ = strconv.ParseBool(getenv("AZURE_STORAGE_IS_LOCAL_EMULATOR"))
	switch {
	case s.account != "" && s.key != "":
	case getenv("AZURE_STORAGE_SAS_TOKEN") != "":
		s.key, s.sas = "", strings.TrimPrefix(getenv("AZURE_STORAGE_SAS_TOKEN"), "?")
	default:
		cs := cmp.Or(getenv("AZURE_STORAGE_CONNECTION_STRING"), getenv("AZURE_STORAGEBLOB_CONNECTIONSTRING"))
		if cs == "" {
			s.key, s.token = "", true
			return s, nil
		}
		return parseAzureConnectionString(cs)
	}
	return s, nil
}

// parseAzureConnectionString reads the keys of a storage connection
// string that address and authorise the blob service.
func parseAzureConnectionString(cs string) (azureService, error) {
	s := azureService{protocol: "https"}
	suffix := "core.windows.net"
	for _, part := range strings.Split(cs, ";") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "AccountName":
			s.account = v
		case "AccountKey":
			s.key = v
		case "SharedAccessSignature":
			s.sas = strings.TrimPrefix(v, "?")
		case "BlobEndpoint":
			s.endpoint = v
		case "DefaultEndpointsProtocol":
			s.protocol = v
		case "EndpointSuffix":
			suffix = v
		case "UseDevelopmentStorage":
			if on, _ := strconv.ParseBool(v); on {
				s.account, s.key, s.endpoint = azureEmulatorAccount, azureEmulatorKey, "http://127.0.0.1:10000/"+azureEmulatorAccount
			}
		}
	}
	if s.key != "" && s.sas != "" {
		s.key = ""
	}
	if s.key == "" && s.sas == "" {
		return s, errors.New("azure: the connection string has neither AccountKey nor SharedAccessSignature")
	}
	if s.endpoint == "" {
		if s.account == "" {
			return s, errors.New("azure: the connection string has neither AccountName nor BlobEndpoint")
		}
		s.domain = "blob." + suffix
	}
	if s.account == "" && s.key != "" {
		return s, errors.New("azure: the connection string has an AccountKey but no AccountName")
	}
	return s, nil
}

// withQuery applies a location's parameters, which gocloud's driver takes
// too. With a SAS token they must not send it to another origin.
func (s azureService) withQuery(q url.Values) (azureService, error) {
	before, _ := s.url()
	for k, v := range q {
		if len(v) > 1 {
			return s, fmt.Errorf("parameter %s given %d times", k, len(v))
		}
		var err error
		switch k {
		case "domain":
			s.domain, s.endpoint = v[0], ""
		case "protocol":
			s.protocol, s.endpoint = v[0], ""
		case "cdn":
			s.cdn, err = strconv.ParseBool(v[0])
		case "localemu":
			s.emulator, err = strconv.ParseBool(v[0])
		case "storage_account":
			s.account = v[0]
		default:
			return s, fmt.Errorf("parameter %s: an azblob:// location takes domain, protocol, cdn, localemu and storage_account", k)
		}
		if err != nil {
			return s, fmt.Errorf("parameter %s=%q: %w", k, v[0], err)
		}
	}
	if s.sas != "" && len(q) > 0 {
		after, err := s.url()
		if err != nil {
			return s, err
		}
		if !sameOrigin(before, after) {
			return s, errors.New("azure: the location's parameters cannot change the service's address when a SAS token is set")
		}
	}
	return s, nil
}

func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host)
}

func newAzureBucket(loc Location, policy RetryPolicy, c *Counters, getenv func(string) string) (*azureBucket, error) {
	s, err := azureServiceFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	if s, err = s.withQuery(loc.Query); err != nil {
		return nil, err
	}
	base, err := s.url()
	if err != nil {
		return nil, err
	}
	b := &azureBucket{base: base, container: loc.Bucket, account: s.account, policy: policy, c: c, block: azureBlockSize}
	switch {
	case s.token:
		b.cred = newAzureCredential(getenv, &http.Client{Timeout: time.Minute}, azureIMDSClient(), policy)
	case s.key != "":
		if b.key, err = base64.StdEncoding.DecodeString(s.key); err != nil {
			return nil, fmt.Errorf("azure: the account key is not base64: %w", err)
		}
	default:
		if b.sas, err = url.ParseQuery(s.sas); err != nil {
			return nil, fmt.Errorf("azure: the SAS token is not a query string: %w", err)
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// Several ranged reads are in flight per file; without idle
	// connections to spare each would dial anew.
	tr.MaxIdleConnsPerHost = 64
	b.hc = &http.Client{Transport: tr}
	return b, nil
}

// azureConditions are the preconditions of a request, set through the As
// functions of the reader, writer and copy options (see bucketFile.ifMatch
// and bucketTarget.Publish).
type azureConditions struct {
	IfMatch     string
	IfNoneMatch string
	// SourceIfMatch makes a copy succeed only from the source of that
	// ETag.
	SourceIfMatch string
}

func (c *azureConditions) as(i any) bool {
	p, ok := i.(**azureConditions)
	if ok {
		*p = c
	}
	return ok
}

func (c *azureConditions) set(h http.Header) {
	if c.IfMatch != "" {
		h.Set("If-Match", c.IfMatch)
	}
	if c.IfNoneMatch != "" {
		h.Set("If-None-Match", c.IfNoneMatch)
	}
	if c.SourceIfMatch != "" {
		h.Set("x-ms-source-if-match", c.SourceIfMatch)
	}
}

// azureError is an error answer of the service.
type azureError struct {
	status int
	code   string // x-ms-error-code
	what   string
	msg    string
}

func (e *azureError) Error() string {
	msg := e.msg
	if msg == "" {
		msg = e.code
	}
	return fmt.Sprintf("azure: %s: %d %s: %s", e.what, e.status, http.StatusText(e.status), msg)
}

// HTTPStatusCode lets Retryable and isPreconditionFailed judge the answer.
func (e *azureError) HTTPStatusCode() int { return e.status }

func readAzureError(resp *http.Response, what string) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	var e struct {
		Message string `xml:"Message"`
	}
	msg := strings.TrimSpace(string(body))
	if xml.Unmarshal(body, &e) == nil && e.Message != "" {
		msg, _, _ = strings.Cut(strings.TrimSpace(e.Message), "\n")
	}
	return &azureError{status: resp.StatusCode, code: resp.Header.Get("x-ms-error-code"), what: what, msg: msg}
}

// blobURL is the URL of a blob, each segment of its name escaped.
func (b *azureBucket) blobURL(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return b.base + "/" + url.PathEscape(b.container) + "/" + strings.Join(segs, "/")
}

// newRequest builds a signed request; q is the query beside the URL's. A
// PUT of no bytes still says Content-Length: 0, as the service wants
// (net/http sends it for PUT), and the signature covers it as empty.
func (b *azureBucket) newRequest(method, u string, q url.Values, body []byte, h http.Header) (*http.Request, error) {
	if len(b.sas) > 0 {
		if q == nil {
			q = url.Values{}
		}
		for k, v := range b.sas {
			q[k] = v
		}
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("x-ms-version", azureVersion)
	req.Header.Set("x-ms-date", time.Now().UTC().Format(http.TimeFormat))
	if b.key != nil {
		req.Header.Set("Authorization", "SharedKey "+b.account+":"+b.signature(req))
	}
	return req, nil
}

// signature is the Shared Key signature of req: an HMAC-SHA256 under the
// account key of the verb, the standard headers, the x-ms- headers and the
// resource with its query, each as the service canonicalises it.
func (b *azureBucket) signature(req *http.Request) string {
	h := req.Header
	length := ""
	if req.ContentLength > 0 {
		length = strconv.FormatInt(req.ContentLength, 10)
	}
	var s strings.Builder
	for _, v := range []string{
		req.Method, h.Get("Content-Encoding"), h.Get("Content-Language"), length, h.Get("Content-MD5"),
		h.Get("Content-Type"), "", h.Get("If-Modified-Since"), h.Get("If-Match"), h.Get("If-None-Match"),
		h.Get("If-Unmodified-Since"), h.Get("Range"),
	} {
		s.WriteString(v)
		s.WriteByte('\n')
	}
	var names []string
	for k := range h {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-ms-") {
			names = append(names, lk)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		s.WriteString(k + ":" + strings.TrimSpace(strings.Join(h.Values(k), ",")) + "\n")
	}
	s.WriteString("/" + b.account + req.URL.EscapedPath())
	q := req.URL.Query()
	var params []string
	for k := range q {
		params = append(params, k)
	}
	sort.Strings(params)
	for _, k := range params {
		vs := append([]string(nil), q[k]...)
		sort.Strings(vs)
		s.WriteString("\n" + strings.ToLower(k) + ":" + strings.Join(vs, ","))
	}
	m := hmac.New(sha256.New, b.key)
	m.Write([]byte(s.String()))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// do sends the request that newReq builds, again after transient failures
// up to the policy's attempts, and returns an answer whose status is one
// of ok.
func (b *azureBucket) do(ctx context.Context, what string, newReq func() (*http.Request, error), ok ...int) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		req, err := newReq()
		if err != nil {
			return nil, err
		}
		resp, err := b.send(ctx, req)
		var ce *azureCredentialError
		if errors.As(err, &ce) {
			return nil, err
		}
		if err == nil {
			for _, s := range ok {
				if resp.StatusCode == s {
					return resp, nil
				}
			}
			err = readAzureError(resp, what)
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

// send sends req, with a bearer token when the bucket authorises by one.
func (b *azureBucket) send(ctx context.Context, req *http.Request) (*http.Response, error) {
	if b.cred != nil {
		tok, err := b.cred.token(ctx)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return b.hc.Do(req.WithContext(ctx))
}

// drain reads what is left of an answer and closes it, so that its
// connection goes back to the pool.
func drain(resp *http.Response) error {
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// azureAttrs is what Attributes.As gives for an Azure blob.
type azureAttrs struct{ CopyStatus string }

func (b *azureBucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	resp, err := b.do(ctx, "blob "+key, func() (*http.Request, error) {
		return b.newRequest(http.MethodHead, b.blobURL(key), nil, nil, nil)
	}, http.StatusOK)
	if err != nil {
		return nil, err
	}
	drain(resp)
	h := resp.Header
	md5, _ := base64.StdEncoding.DecodeString(h.Get("Content-MD5"))
	mod, _ := http.ParseTime(h.Get("Last-Modified"))
	created, _ := http.ParseTime(h.Get("x-ms-creation-time"))
	meta := map[string]string{}
	for k, v := range h {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-ms-meta-") && len(v) > 0 {
			meta[strings.TrimPrefix(lk, "x-ms-meta-")] = v[0]
		}
	}
	copyStatus := h.Get("x-ms-copy-status")
	return &driver.Attributes{
		CacheControl:    h.Get("Cache-Control"),
		ContentEncoding: h.Get("Content-Encoding"),
		ContentType:     h.Get("Content-Type"),
		Metadata:        meta,
		CreateTime:      created,
		ModTime:         mod,
		Size:            resp.ContentLength,
		MD5:             md5,
		ETag:            h.Get("ETag"),
		AsFunc: func(i any) bool {
			p, ok := i.(*azureAttrs)
			if ok {
				p.CopyStatus = copyStatus
			}
			return ok
		},
	}, nil
}

// azureList is the answer of List Blobs.
type azureList struct {
	Blobs struct {
		Blob []struct {
			Name       string `xml:"Name"`
			Properties struct {
				LastModified  string `xml:"Last-Modified"`
				ContentLength int64  `xml:"Content-Length"`
				ContentMD5    string `xml:"Content-MD5"`
			} `xml:"Properties"`
		} `xml:"Blob"`
		BlobPrefix []struct {
			Name string `xml:"Name"`
		} `xml:"BlobPrefix"`
	} `xml:"Blobs"`
	NextMarker string `xml:"NextMarker"`
}

func (b *azureBucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	q := url.Values{"restype": {"container"}, "comp": {"list"}}
	if opts.Prefix != "" {
		q.Set("prefix", opts.Prefix)
	}
	if opts.Delimiter != "" {
		q.Set("delimiter", opts.Delimiter)
	}
	if opts.PageSize > 0 {
		q.Set("maxresults", strconv.Itoa(opts.PageSize))
	}
	if len(opts.PageToken) > 0 {
		q.Set("marker", string(opts.PageToken))
	}
	resp, err := b.do(ctx, "listing "+opts.Prefix, func() (*http.Request, error) {
		return b.newRequest(http.MethodGet, b.base+"/"+url.PathEscape(b.container), q, nil, nil)
	}, http.StatusOK)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var page azureList
	if err := xml.NewDecoder(resp.Body).Decode(&page); err != nil {
		return nil, fmt.Errorf("azure: listing %s: decoding the answer: %w", opts.Prefix, err)
	}
	out := &driver.ListPage{}
	if page.NextMarker != "" {
		out.NextPageToken = []byte(page.NextMarker)
	}
	for _, o := range page.Blobs.Blob {
		mod, _ := http.ParseTime(o.Properties.LastModified)
		md5, _ := base64.StdEncoding.DecodeString(o.Properties.ContentMD5)
		out.Objects = append(out.Objects, &driver.ListObject{Key: o.Name, ModTime: mod, Size: o.Properties.ContentLength, MD5: md5})
	}
	for _, p := range page.Blobs.BlobPrefix {
		out.Objects = append(out.Objects, &driver.ListObject{Key: p.Name, IsDir: true})
	}
	return out, nil
}

// NewRangeReader sends one GET for the range. It is not retried here: the
// caller retries reads for the bytes still missing (bucketFile.ReadAt).
func (b *azureBucket) NewRangeReader(ctx context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	var conds azureConditions
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
	h := http.Header{}
	conds.set(h)
	if offset > 0 || length > 0 {
		h.Set("x-ms-range", byteRange(offset, length))
	}
	req, err := b.newRequest(http.MethodGet, b.blobURL(key), nil, nil, h)
	if err != nil {
		return nil, err
	}
	resp, err := b.send(ctx, req)
	if err != nil {
		return nil, err
	}
	return rangedReader(resp, "azure", key, offset, readAzureError)
}

func (b *azureBucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	w := &azureWriter{b: b, ctx: ctx, key: key, contentType: contentType}
	if opts.IfNotExist {
		w.conds.IfNoneMatch = "*"
	}
	if opts.BeforeWrite != nil {
		if err := opts.BeforeWrite(w.conds.as); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// azureWriter buffers a block: an object that fits in it goes up in one
// Put Blob at Close; a larger one as uncommitted blocks, a block at a
// time, committed by one Put Block List at Close. Nothing is visible until
// that last request succeeds, and the conditions apply to it.
type azureWriter struct {
	b           *azureBucket
	ctx         context.Context
	key         string
	contentType string
	conds       azureConditions
	buf         []byte
	// prefix starts this writer's block ids: random, so that two writers
	// of one name never commit each other's blocks.
	prefix string
	blocks []string
	err    error
}

func (w *azureWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 && w.err == nil {
		if w.buf == nil {
			w.buf = make([]byte, 0, w.b.block)
		}
		k := copy(w.buf[len(w.buf):cap(w.buf)], p)
		w.buf = w.buf[:len(w.buf)+k]
		n += k
		p = p[k:]
		if len(w.buf) == cap(w.buf) && len(p) > 0 {
			w.err = w.putBlock()
		}
	}
	return n, w.err
}

func (w *azureWriter) Close() error {
	if w.err != nil {
		return w.err
	}
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if w.blocks == nil {
		return w.putBlob()
	}
	if len(w.buf) > 0 {
		if err := w.putBlock(); err != nil {
			return err
		}
	}
	return w.commit()
}

func (w *azureWriter) headers() http.Header {
	h := http.Header{}
	w.conds.set(h)
	h.Set("x-ms-blob-content-type", w.contentType)
	return h
}

func (w *azureWriter) putBlob() error {
	body := w.buf
	if body == nil {
		body = []byte{}
	}
	resp, err := w.b.do(w.ctx, "uploading "+w.key, func() (*http.Request, error) {
		h := w.headers()
		h.Set("x-ms-blob-type", "BlockBlob")
		return w.b.newRequest(http.MethodPut, w.b.blobURL(w.key), nil, body, h)
	}, http.StatusCreated)
	if err != nil {
		return err
	}
	return drain(resp)
}

// putBlock stages the buffer as the upload's next block.
func (w *azureWriter) putBlock() error {
	if w.prefix == "" {
		var r [12]byte
		rand.Read(r[:])
		w.prefix = hex.EncodeToString(r[:])
	}
	id := base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s-%08d", w.prefix, len(w.blocks)))
	q := url.Values{"comp": {"block"}, "blockid": {id}}
	resp, err := w.b.do(w.ctx, "uploading "+w.key, func() (*http.Request, error) {
		return w.b.newRequest(http.MethodPut, w.b.blobURL(w.key), q, w.buf, nil)
	}, http.StatusCreated)
	if err != nil {
		return err
	}
	w.blocks = append(w.blocks, id)
	w.buf = w.buf[:0]
	return drain(resp)
}

// commit makes the staged blocks the blob, under the write's conditions.
func (w *azureWriter) commit() error {
	var list bytes.Buffer
	list.WriteString(`<?xml version="1.0" encoding="utf-8"?><BlockList>`)
	for _, id := range w.blocks {
		list.WriteString("<Latest>" + id + "</Latest>")
	}
	list.WriteString("</BlockList>")
	q := url.Values{"comp": {"blocklist"}}
	resp, err := w.b.do(w.ctx, "uploading "+w.key, func() (*http.Request, error) {
		return w.b.newRequest(http.MethodPut, w.b.blobURL(w.key), q, list.Bytes(), w.headers())
	}, http.StatusCreated)
	if err != nil {
		return err
	}
	return drain(resp)
}

// azureCopyPoll is how often Copy asks after a copy the service runs in
// the background.
const azureCopyPoll = 200 * time.Millisecond

// Copy has the service copy the blob (Copy Blob), and waits while the copy
// is pending: within an account it is done on answer, mostly.
func (b *azureBucket) Copy(ctx context.Context, dstKey, srcKey string, opts *driver.CopyOptions) error {
	var conds azureConditions
	if opts != nil && opts.BeforeCopy != nil {
		if err := opts.BeforeCopy(conds.as); err != nil {
			return err
		}
	}
	src := b.blobURL(srcKey)
	if len(b.sas) > 0 {
		src += "?" + b.sas.Encode()
	}
	what := "copying " + srcKey + " to " + dstKey
	resp, err := b.do(ctx, what, func() (*http.Request, error) {
		h := http.Header{}
		conds.set(h)
		h.Set("x-ms-copy-source", src)
		return b.newRequest(http.MethodPut, b.blobURL(dstKey), nil, []byte{}, h)
	}, http.StatusAccepted, http.StatusCreated)
	if err != nil {
		return err
	}
	drain(resp)
	status := resp.Header.Get("x-ms-copy-status")
	for status == "pending" {
		t := time.NewTimer(azureCopyPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		a, err := b.Attributes(ctx, dstKey)
		if err != nil {
			return err
		}
		var aa azureAttrs
		a.AsFunc(&aa)
		status = aa.CopyStatus
	}
	if status != "" && status != "success" {
		return fmt.Errorf("azure: %s: the copy ended %s", what, status)
	}
	return nil
}

// Delete deletes key, on the conditions that opts' BeforeDelete sets on
// an *azureConditions (If-Match).
func (b *azureBucket) Delete(ctx context.Context, key string, opts *driver.DeleteOptions) error {
	var c azureConditions
	if opts != nil && opts.BeforeDelete != nil {
		if err := opts.BeforeDelete(c.as); err != nil {
			return err
		}
	}
	resp, err := b.do(ctx, "deleting "+key, func() (*http.Request, error) {
		h := http.Header{}
		c.set(h)
		return b.newRequest(http.MethodDelete, b.blobURL(key), nil, nil, h)
	}, http.StatusAccepted, http.StatusOK)
	if err != nil {
		return err
	}
	return drain(resp)
}

func (b *azureBucket) ErrorCode(err error) gcerrors.ErrorCode {
	var e *azureError
	switch {
	case errors.Is(err, context.Canceled):
		return gcerrors.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return gcerrors.DeadlineExceeded
	case errors.As(err, new(*azureCredentialError)):
		return gcerrors.PermissionDenied
	case !errors.As(err, &e):
		return gcerrors.Unknown
	}
	switch s := e.status; {
	case s == http.StatusNotFound:
		return gcerrors.NotFound
	case s == http.StatusPreconditionFailed, e.code == "BlobAlreadyExists", e.code == "ConditionNotMet":
		return gcerrors.FailedPrecondition
	case s == http.StatusUnauthorized, s == http.StatusForbidden:
		return gcerrors.PermissionDenied
	case s == http.StatusBadRequest:
		return gcerrors.InvalidArgument
	case s == http.StatusConflict:
		return gcerrors.AlreadyExists
	case s == http.StatusTooManyRequests, s == http.StatusServiceUnavailable && e.code == "ServerBusy":
		return gcerrors.ResourceExhausted
	case s >= 500:
		return gcerrors.Internal
	}
	return gcerrors.Unknown
}

func (b *azureBucket) As(any) bool { return false }

func (b *azureBucket) ErrorAs(err error, i any) bool { return errors.As(err, i) }

func (b *azureBucket) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", errors.New("azure: signed URLs are not supported")
}

func (b *azureBucket) Close() error {
	b.hc.CloseIdleConnections()
	return nil
}
