package storetest

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// MinPart is S3's smallest part but the last of a multipart upload.
const MinPart = 5 << 20

// Proxy forwards requests to a server and injects faults into them. It
// counts the requests by S3 operation.
type Proxy struct {
	// URL is the proxy's endpoint.
	URL    string
	target *url.URL
	rp     *httputil.ReverseProxy

	mu     sync.Mutex
	faults []*fault
	ops    map[string]int
	// parts holds the sizes of the parts of each multipart upload.
	parts map[string]map[int]int64
	// bodyBytes counts the request bytes the client sent in object and
	// part bodies; servedBytes the object bytes the server sent back.
	bodyBytes, servedBytes int64
	// inFlight counts the requests of each operation being served; peak
	// and busy are its highest value and the sum of their durations since
	// TakeConcurrency.
	inFlight, peak map[string]int
	busy           map[string]time.Duration
	gathers        []*gather
	// holding counts the requests a gather holds now.
	holding int
	// latency is how long each request waits before it is forwarded.
	latency time.Duration
	srv     *httptest.Server
}

// gather holds the first n requests of op until all n are in, or until
// wait has passed since the first came.
type gather struct {
	op      string
	n, in   int
	wait    time.Duration
	release chan struct{}
	// met is set when all n came before the wait ran out.
	met bool
}

// Fault kinds.
const (
	// Status answers with an error status and an S3 error code, not
	// forwarding the request.
	Status = iota
	// Reset closes the connection without an answer (a TCP reset).
	Reset
	// CutBody forwards the request and breaks the connection partway
	// through the answer's body.
	CutBody
	// LostAnswer forwards the request, lets the server carry it out, and
	// closes the connection without the answer: the client cannot tell
	// whether it took effect.
	LostAnswer
	// UnknownLength forwards the request and answers with the complete
	// length of the object left out of its Content-Range ("bytes
	// 0-99/*"), as HTTP allows a server that does not know it.
	UnknownLength
)

type fault struct {
	kind   int
	op     string // S3 operation matched, "" for any
	key    string // suffix of the request's path matched, "" for any
	left   int
	status int
	code   string
	after  int64 // CutBody: bytes of body sent before the break
}

// NewProxy starts a proxy in front of endpoint and stops it at the end of
// the test.
func NewProxy(t testing.TB, endpoint string) *Proxy {
	p, err := StartProxy(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// StartProxy starts a proxy in front of endpoint, for a program that is
// not a test; the caller closes it.
func StartProxy(endpoint string) (*Proxy, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: u, ops: map[string]int{}, parts: map[string]map[int]int64{},
		inFlight: map[string]int{}, peak: map[string]int{}, busy: map[string]time.Duration{}}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			// The client signed the Host it sent to the proxy.
			r.Out.Host = r.In.Host
		},
		ModifyResponse: p.modifyResponse,
		ErrorLog:       log.New(io.Discard, "", 0),
	}
	p.srv = httptest.NewServer(p)
	p.URL = p.srv.URL
	return p, nil
}

// SetLatency makes every request from now on wait d before it is
// forwarded, as a store's time to the first byte of its answer: a reader's
// requests in flight together wait once, one after another each time.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = d
}

// Close stops the proxy.
func (p *Proxy) Close() { p.srv.Close() }

// Inject adds a fault for the next n requests of operation op ("" for
// any): for Status, status and code; for CutBody, after bytes.
func (p *Proxy) Inject(kind int, op string, n int, status int, code string, after int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, &fault{kind: kind, op: op, left: n, status: status, code: code, after: after})
}

// InjectOn is Inject for the requests of op whose object key ends with
// key only.
func (p *Proxy) InjectOn(kind int, op, key string, n int, status int, code string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, &fault{kind: kind, op: op, key: key, left: n, status: status, code: code})
}

// ClearFaults drops the injected faults that have not struck yet.
func (p *Proxy) ClearFaults() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = nil
}

// Gather holds the next n requests of op (of any operation when op is
// empty) until all n of them are in, and lets them on together; if they
// are not all in within wait of the first, it lets on those it holds, and
// those after, at once. The function it
// returns reports whether all n were in together: a client that sends
// them one after another, each waiting for the one before, is not.
func (p *Proxy) Gather(op string, n int, wait time.Duration) (together func() bool) {
	g := &gather{op: op, n: n, wait: wait, release: make(chan struct{})}
	p.mu.Lock()
	p.gathers = append(p.gathers, g)
	p.mu.Unlock()
	return func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return g.met
	}
}

// hold keeps a request of op back while a gather of op wants it.
func (p *Proxy) hold(op string) {
	p.mu.Lock()
	var g *gather
	for _, x := range p.gathers {
		if (x.op == op || x.op == "") && x.in < x.n {
			g = x
			break
		}
	}
	if g == nil {
		p.mu.Unlock()
		return
	}
	g.in++
	p.holding++
	defer func() {
		p.mu.Lock()
		p.holding--
		p.mu.Unlock()
	}()
	switch {
	case g.in == g.n:
		g.met = true
		close(g.release)
	case g.in == 1:
		time.AfterFunc(g.wait, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if !g.met {
				g.in = g.n // the rest pass at once
				close(g.release)
			}
		})
	}
	p.mu.Unlock()
	<-g.release
}

// Holding reports how many requests a gather holds back now.
func (p *Proxy) Holding() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.holding
}

// Throttle answers the next n requests of op with 503 SlowDown.
func (p *Proxy) Throttle(op string, n int) {
	p.Inject(Status, op, n, http.StatusServiceUnavailable, "SlowDown", 0)
}

// Pending reports how many injected faults have not struck yet.
func (p *Proxy) Pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, f := range p.faults {
		n += f.left
	}
	return n
}

// Ops returns how many requests of op the proxy forwarded or faulted.
func (p *Proxy) Ops(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ops[op]
}

// BodyBytes is the number of object and part bytes clients sent.
func (p *Proxy) BodyBytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bodyBytes
}

// ServedBytes is the number of object bytes the server sent to clients in
// answers to GetObject.
func (p *Proxy) ServedBytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.servedBytes
}

// Operation names the S3 operation of a path-style request.
func Operation(r *http.Request) string {
	q := r.URL.Query()
	path := strings.Trim(r.URL.Path, "/")
	objectLevel := strings.Contains(path, "/")
	copySrc := r.Header.Get("X-Amz-Copy-Source") != ""
	switch r.Method {
	case http.MethodGet:
		if !objectLevel {
			return "ListObjects"
		}
		return "GetObject"
	case http.MethodHead:
		return "HeadObject"
	case http.MethodPut:
		switch {
		case !objectLevel:
			return "CreateBucket"
		case q.Has("partNumber") && copySrc:
			return "UploadPartCopy"
		case q.Has("partNumber"):
			return "UploadPart"
		case copySrc:
			return "CopyObject"
		}
		return "PutObject"
	case http.MethodPost:
		switch {
		case q.Has("uploads"):
			return "CreateMultipartUpload"
		case q.Has("uploadId"):
			return "CompleteMultipartUpload"
		case q.Has("delete"):
			return "DeleteObjects"
		}
	case http.MethodDelete:
		if q.Has("uploadId") {
			return "AbortMultipartUpload"
		}
		return "DeleteObject"
	}
	return r.Method
}

func (p *Proxy) take(op, path string) *fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ops[op]++
	for _, f := range p.faults {
		if f.left > 0 && (f.op == "" || f.op == op) && strings.HasSuffix(path, f.key) {
			f.left--
			return f
		}
	}
	return nil
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := Operation(r)
	p.hold(op)
	f := p.take(op, r.URL.Path)
	if f != nil {
		switch f.kind {
		case Status:
			io.Copy(io.Discard, r.Body)
			writeError(w, f.status, f.code, "injected by the test proxy")
			return
		case Reset:
			reset(w)
			return
		}
	}
	switch op {
	case "PutObject", "UploadPart":
		n := r.ContentLength
		if d := r.Header.Get("X-Amz-Decoded-Content-Length"); d != "" {
			n, _ = strconv.ParseInt(d, 10, 64)
		}
		p.mu.Lock()
		p.bodyBytes += max(n, 0)
		p.mu.Unlock()
		if op == "UploadPart" {
			p.recordPart(r, n)
		}
	case "UploadPartCopy":
		lo, hi, ok := copyRange(r.Header.Get("X-Amz-Copy-Source-Range"))
		if !ok {
			writeError(w, http.StatusBadRequest, "InvalidArgument", "the test proxy wants an explicit x-amz-copy-source-range")
			return
		}
		p.recordPart(r, hi-lo+1)
	case "CompleteMultipartUpload":
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		if msg := p.checkParts(r.URL.Query().Get("uploadId"), body); msg != "" {
			writeError(w, http.StatusBadRequest, "EntityTooSmall", msg)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	if f != nil && f.kind == CutBody {
		r = r.WithContext(withCut(r.Context(), f.after))
	}
	if f != nil && f.kind == UnknownLength {
		r = r.WithContext(context.WithValue(r.Context(), unknownLengthKey{}, true))
	}
	if f != nil && f.kind == LostAnswer {
		p.rp.ServeHTTP(httptest.NewRecorder(), r)
		reset(w)
		return
	}
	start := time.Now()
	p.mu.Lock()
	p.inFlight[op]++
	p.peak[op] = max(p.peak[op], p.inFlight[op])
	latency := p.latency
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.inFlight[op]--
		p.busy[op] += time.Since(start)
		p.mu.Unlock()
	}()
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	p.rp.ServeHTTP(w, r)
}

// TakeConcurrency returns, for requests of op since the last call, the
// most that were served at once and the sum of the times they took, whole
// answers included: that sum over a run's wall time is how many were in
// flight on average.
func (p *Proxy) TakeConcurrency(op string) (peak int, busy time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	peak, busy = p.peak[op], p.busy[op]
	p.peak[op], p.busy[op] = p.inFlight[op], 0
	return peak, busy
}

func (p *Proxy) recordPart(r *http.Request, n int64) {
	q := r.URL.Query()
	num, _ := strconv.Atoi(q.Get("partNumber"))
	p.mu.Lock()
	defer p.mu.Unlock()
	id := q.Get("uploadId")
	if p.parts[id] == nil {
		p.parts[id] = map[int]int64{}
	}
	p.parts[id][num] = n
}

// checkParts applies S3's rule to the parts a completion names.
func (p *Proxy) checkParts(id string, body []byte) string {
	var req struct {
		Parts []struct {
			PartNumber int
		} `xml:"Part"`
	}
	if err := xml.Unmarshal(body, &req); err != nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, part := range req.Parts {
		size, known := p.parts[id][part.PartNumber]
		if known && i < len(req.Parts)-1 && size < MinPart {
			return fmt.Sprintf("part %d is %d bytes; every part but the last must be at least %d", part.PartNumber, size, MinPart)
		}
	}
	return ""
}

func copyRange(h string) (lo, hi int64, ok bool) {
	r, found := strings.CutPrefix(h, "bytes=")
	a, b, dash := strings.Cut(r, "-")
	if !found || !dash {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseInt(a, 10, 64)
	hi, err2 := strconv.ParseInt(b, 10, 64)
	return lo, hi, err1 == nil && err2 == nil && hi >= lo
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, msg)
}

// reset closes the client's connection with a TCP RST.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// modifyResponse cuts the body of an answer whose request carries a cut,
// leaves the object's length out of one that is to lose it,
// and counts the bytes of objects served.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	if after, ok := cutOf(resp.Request.Context()); ok {
		resp.Body = &cutBody{ReadCloser: resp.Body, left: after}
	}
	if resp.Request.Context().Value(unknownLengthKey{}) != nil {
		if r, _, ok := strings.Cut(resp.Header.Get("Content-Range"), "/"); ok {
			resp.Header.Set("Content-Range", r+"/*")
		}
	}
	if Operation(resp.Request) == "GetObject" && resp.StatusCode/100 == 2 {
		resp.Body = &servedBody{ReadCloser: resp.Body, p: p}
	}
	return nil
}

// unknownLengthKey marks a request whose answer's Content-Range loses the
// object's length.
type unknownLengthKey struct{}

// servedBody counts what the client reads of an object.
type servedBody struct {
	io.ReadCloser
	p *Proxy
}

func (b *servedBody) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	b.p.mu.Lock()
	b.p.servedBytes += int64(n)
	b.p.mu.Unlock()
	return n, err
}

// cutBody ends with an error after left bytes: the reverse proxy then
// aborts the connection, and the client sees its body end early.
type cutBody struct {
	io.ReadCloser
	left int64
}

var errCut = errors.New("storetest: body cut by the test proxy")

func (b *cutBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errCut
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

type cutKey struct{}

func withCut(ctx context.Context, after int64) context.Context {
	return context.WithValue(ctx, cutKey{}, after)
}

func cutOf(ctx context.Context) (int64, bool) {
	v, ok := ctx.Value(cutKey{}).(int64)
	return v, ok
}
