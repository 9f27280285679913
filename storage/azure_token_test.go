package storage

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gocloud.dev/gcerrors"
)

// testTokenRetries keeps the token clients' backoff short.
var testTokenRetries = RetryPolicy{Attempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}

// tokenEnv is a getenv over pairs.
func tokenEnv(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

// entraServer is an HTTPS token endpoint for tenant "tenant-1" that checks
// each request's form exactly and answers a token named after the grant.
type entraServer struct {
	*httptest.Server
	calls  atomic.Int32
	forms  chan url.Values
	answer func(w http.ResponseWriter, f url.Values)
}

func newEntraServer(t *testing.T) *entraServer {
	s := &entraServer{forms: make(chan url.Values, 100)}
	s.answer = func(w http.ResponseWriter, f url.Values) {
		kind := "secret"
		if f.Get("client_assertion") != "" {
			kind = "assertion-" + f.Get("client_assertion")
		}
		fmt.Fprintf(w, `{"token_type":"Bearer","expires_in":3600,"ext_expires_in":3600,"access_token":"%s-%d"}`, kind, s.calls.Load())
	}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		if r.Method != http.MethodPost || r.URL.Path != "/tenant-1/oauth2/v2.0/token" || r.URL.RawQuery != "" {
			t.Errorf("token request %s %s", r.Method, r.URL)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
			t.Errorf("token request Content-Type %q", ct)
		}
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		s.forms <- r.PostForm
		s.answer(w, r.PostForm)
	}))
	t.Cleanup(s.Close)
	return s
}

// imdsServer stands where the metadata service is and checks its request.
func imdsServer(t *testing.T, clientID string, calls *atomic.Int32) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		want := url.Values{"api-version": {"2018-02-01"}, "resource": {"https://storage.azure.com/"}}
		if clientID != "" {
			want.Set("client_id", clientID)
		}
		if r.Method != http.MethodGet || r.URL.Path != "/metadata/identity/oauth2/token" || r.URL.Query().Encode() != want.Encode() {
			t.Errorf("IMDS request %s %s", r.Method, r.URL)
		}
		if r.Header.Get("Metadata") != "true" {
			t.Errorf("IMDS request without Metadata: true")
		}
		fmt.Fprintf(w, `{"access_token":"imds-%d","expires_on":"%d","expires_in":"86399","resource":"https://storage.azure.com/","token_type":"Bearer"}`,
			calls.Load(), time.Now().Add(time.Hour).Unix())
	}))
	t.Cleanup(srv.Close)
	setIMDS(t, srv.URL+"/metadata/identity/oauth2/token")
}

func setIMDS(t *testing.T, u string) {
	old := azureIMDSEndpoint
	azureIMDSEndpoint = u
	t.Cleanup(func() { azureIMDSEndpoint = old })
}

// closedAddr is an address nothing listens on.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// fakeAz puts an az on PATH that prints out, and nothing else on PATH.
func fakeAz(t *testing.T, script string) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "az"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
}

func testCredential(getenv func(string) string, e *entraServer) *azureCredential {
	return newAzureCredential(getenv, e.Client(), azureIMDSClient(), testTokenRetries)
}

// The sources are tried in DefaultAzureCredential's order, and each sends
// exactly what its token service wants.
func TestAzureTokenSourceOrder(t *testing.T) {
	ctx := context.Background()
	fed := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(fed, []byte("fed-jwt\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("client secret before workload identity", func(t *testing.T) {
		e := newEntraServer(t)
		env := tokenEnv("AZURE_TENANT_ID", "tenant-1", "AZURE_CLIENT_ID", "app-1", "AZURE_CLIENT_SECRET", "s3cret",
			"AZURE_FEDERATED_TOKEN_FILE", fed, "AZURE_AUTHORITY_HOST", e.URL+"/")
		c := testCredential(env, e)
		now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		c.now = func() time.Time { return now }
		tok, err := c.token(ctx)
		if err != nil || tok != "secret-1" {
			t.Fatalf("token %q, %v", tok, err)
		}
		if want := now.Add(time.Hour); !c.tok.expires.Equal(want) {
			t.Errorf("expires_in 3600 expires at %v, want %v", c.tok.expires, want)
		}
		want := url.Values{"grant_type": {"client_credentials"}, "client_id": {"app-1"}, "client_secret": {"s3cret"}, "scope": {"https://storage.azure.com/.default"}}
		if got := <-e.forms; got.Encode() != want.Encode() {
			t.Errorf("form %v, want %v", got, want)
		}
	})

	t.Run("workload identity", func(t *testing.T) {
		e := newEntraServer(t)
		env := tokenEnv("AZURE_TENANT_ID", "tenant-1", "AZURE_CLIENT_ID", "app-1", "AZURE_FEDERATED_TOKEN_FILE", fed, "AZURE_AUTHORITY_HOST", e.URL)
		c := testCredential(env, e)
		now := time.Now()
		c.now = func() time.Time { return now }
		tok, err := c.token(ctx)
		if err != nil || tok != "assertion-fed-jwt-1" {
			t.Fatalf("token %q, %v", tok, err)
		}
		want := url.Values{"grant_type": {"client_credentials"}, "client_id": {"app-1"}, "scope": {"https://storage.azure.com/.default"},
			"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}, "client_assertion": {"fed-jwt"}}
		if got := <-e.forms; got.Encode() != want.Encode() {
			t.Errorf("form %v, want %v", got, want)
		}
		// The platform rotates the file; a refresh reads it again.
		if err := os.WriteFile(fed, []byte("fed-jwt-2"), 0o600); err != nil {
			t.Fatal(err)
		}
		now = now.Add(56 * time.Minute)
		if tok, err = c.token(ctx); err != nil || tok != "assertion-fed-jwt-2-2" {
			t.Fatalf("refreshed token %q, %v", tok, err)
		}
		os.WriteFile(fed, []byte("fed-jwt\n"), 0o600)
	})

	t.Run("managed identity, user-assigned", func(t *testing.T) {
		var calls atomic.Int32
		imdsServer(t, "app-2", &calls)
		fakeAz(t, "echo az must not run >&2; exit 1")
		tok, err := newAzureCredential(tokenEnv("AZURE_CLIENT_ID", "app-2"), http.DefaultClient, azureIMDSClient(), testTokenRetries).token(ctx)
		if err != nil || tok != "imds-1" || calls.Load() != 1 {
			t.Fatalf("token %q, %v after %d calls", tok, err, calls.Load())
		}
	})

	t.Run("App Service identity endpoint", func(t *testing.T) {
		setIMDS(t, "http://"+closedAddr(t)+"/metadata/identity/oauth2/token")
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			want := url.Values{"api-version": {"2019-08-01"}, "resource": {"https://storage.azure.com/"}}
			if r.URL.Path != "/msi/token" || r.URL.Query().Encode() != want.Encode() || r.Header.Get("X-IDENTITY-HEADER") != "hdr-1" {
				t.Errorf("identity endpoint request %s %v", r.URL, r.Header)
			}
			fmt.Fprintf(w, `{"access_token":"appsvc","expires_on":"%d","resource":"https://storage.azure.com/","token_type":"Bearer"}`, time.Now().Add(time.Hour).Unix())
		}))
		defer srv.Close()
		env := tokenEnv("IDENTITY_ENDPOINT", srv.URL+"/msi/token", "IDENTITY_HEADER", "hdr-1")
		tok, err := newAzureCredential(env, http.DefaultClient, azureIMDSClient(), testTokenRetries).token(ctx)
		if err != nil || tok != "appsvc" {
			t.Fatalf("token %q, %v", tok, err)
		}
	})

	t.Run("Azure CLI when there is no managed identity", func(t *testing.T) {
		setIMDS(t, "http://"+closedAddr(t)+"/metadata/identity/oauth2/token")
		exp := time.Now().Add(time.Hour).Unix()
		fakeAz(t, fmt.Sprintf(`[ "$*" = "account get-access-token --resource https://storage.azure.com --output json" ] || { echo "args $*" >&2; exit 2; }
echo '{"accessToken":"cli-tok","expiresOn":"2030-01-01 00:00:00.000000","expires_on":%d,"tokenType":"Bearer"}'`, exp))
		c := newAzureCredential(tokenEnv(), http.DefaultClient, azureIMDSClient(), testTokenRetries)
		tok, err := c.token(ctx)
		if err != nil || tok != "cli-tok" || c.tok.expires.Unix() != exp {
			t.Fatalf("token %q expiring %v, %v", tok, c.tok.expires, err)
		}
	})

	t.Run("Azure CLI, expiresOn in local time", func(t *testing.T) {
		setIMDS(t, "http://"+closedAddr(t)+"/metadata/identity/oauth2/token")
		fakeAz(t, `echo '{"accessToken":"cli-old","expiresOn":"2030-01-02 03:04:05.123456","tokenType":"Bearer"}'`)
		c := newAzureCredential(tokenEnv(), http.DefaultClient, azureIMDSClient(), testTokenRetries)
		tok, err := c.token(ctx)
		want := time.Date(2030, 1, 2, 3, 4, 5, 123456000, time.Local)
		if err != nil || tok != "cli-old" || !c.tok.expires.Equal(want) {
			t.Fatalf("token %q expiring %v, %v", tok, c.tok.expires, err)
		}
	})
}

// A token is kept until 5 minutes before its expiry and then replaced.
func TestAzureTokenRefresh(t *testing.T) {
	var calls atomic.Int32
	expires := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		fmt.Fprintf(w, `{"access_token":"imds-%d","expires_on":%d}`, n, expires.Add(time.Duration(n-1)*time.Hour).Unix())
	}))
	defer srv.Close()
	setIMDS(t, srv.URL)
	c := newAzureCredential(tokenEnv(), http.DefaultClient, azureIMDSClient(), testTokenRetries)
	now := expires.Add(-time.Hour)
	c.now = func() time.Time { return now }
	for _, step := range []struct {
		at    time.Duration // before the first token's expiry
		want  string
		calls int32
	}{
		{time.Hour, "imds-1", 1},
		{30 * time.Minute, "imds-1", 1},
		{5*time.Minute + time.Second, "imds-1", 1},
		{5*time.Minute - time.Second, "imds-2", 2},
		{0, "imds-2", 2},
	} {
		now = expires.Add(-step.at)
		tok, err := c.token(context.Background())
		if err != nil || tok != step.want || calls.Load() != step.calls {
			t.Errorf("%v before expiry: token %q, %v after %d calls; want %s after %d", step.at, tok, err, calls.Load(), step.want, step.calls)
		}
	}
}

// Requests that find the token stale together ask for one new token.
func TestAzureTokenConcurrentRefresh(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		time.Sleep(50 * time.Millisecond)
		fmt.Fprintf(w, `{"access_token":"imds-%d","expires_in":"3600"}`, n)
	}))
	defer srv.Close()
	setIMDS(t, srv.URL)
	c := newAzureCredential(tokenEnv(), http.DefaultClient, azureIMDSClient(), testTokenRetries)
	var wg sync.WaitGroup
	toks := make([]string, 16)
	for i := range toks {
		wg.Go(func() {
			var err error
			if toks[i], err = c.token(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i, tok := range toks {
		if tok != "imds-1" {
			t.Errorf("request %d: token %q", i, tok)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d token requests for 16 concurrent ones", n)
	}
}

// A failure names every source tried and why it failed, and no secret.
func TestAzureTokenErrors(t *testing.T) {
	ctx := context.Background()

	t.Run("none available", func(t *testing.T) {
		setIMDS(t, "http://"+closedAddr(t)+"/metadata/identity/oauth2/token")
		t.Setenv("PATH", t.TempDir())
		_, err := newAzureCredential(tokenEnv("AZURE_CLIENT_ID", "app-1"), http.DefaultClient, azureIMDSClient(), testTokenRetries).token(ctx)
		if err == nil {
			t.Fatal("a token without any source")
		}
		for _, want := range []string{
			"environment client secret: AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET are not all set",
			"environment client certificate: AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_CERTIFICATE_PATH are not all set",
			"environment username and password: AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_USERNAME and AZURE_PASSWORD are not all set",
			"workload identity: AZURE_FEDERATED_TOKEN_FILE, AZURE_CLIENT_ID and AZURE_TENANT_ID are not all set",
			"managed identity: ", "connection refused",
			"Azure CLI: az is not on PATH",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v\nsays nothing of %q", err, want)
			}
		}
	})

	t.Run("secret refused ends the search", func(t *testing.T) {
		var imdsCalls atomic.Int32
		imdsServer(t, "", &imdsCalls)
		e := newEntraServer(t)
		e.answer = func(w http.ResponseWriter, _ url.Values) {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided.\r\nTrace ID: x","error_codes":[7000215]}`)
		}
		env := tokenEnv("AZURE_TENANT_ID", "tenant-1", "AZURE_CLIENT_ID", "app-1", "AZURE_CLIENT_SECRET", "s3cret-value", "AZURE_AUTHORITY_HOST", e.URL)
		_, err := testCredential(env, e).token(ctx)
		if err == nil || !strings.Contains(err.Error(), "environment client secret: ") ||
			!strings.Contains(err.Error(), "401 Unauthorized: invalid_client: AADSTS7000215: Invalid client secret provided.") {
			t.Fatalf("%v", err)
		}
		if strings.Contains(err.Error(), "s3cret-value") {
			t.Errorf("the error shows the secret: %v", err)
		}
		if imdsCalls.Load() != 0 {
			t.Errorf("the managed identity was asked after the secret was refused")
		}
	})

	t.Run("bad settings", func(t *testing.T) {
		for _, c := range []struct{ env, want string }{
			{"AZURE_TENANT_ID=../x", `AZURE_TENANT_ID "../x" is not a tenant ID`},
			{"AZURE_TENANT_ID=t1 AZURE_AUTHORITY_HOST=http://login.example.com", `AZURE_AUTHORITY_HOST "http://login.example.com": an https:// address`},
		} {
			kv := []string{"AZURE_CLIENT_ID", "app-1", "AZURE_CLIENT_SECRET", "s"}
			for _, f := range strings.Fields(c.env) {
				k, v, _ := strings.Cut(f, "=")
				kv = append(kv, k, v)
			}
			_, err := newAzureCredential(tokenEnv(kv...), http.DefaultClient, azureIMDSClient(), testTokenRetries).token(ctx)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want %s", c.env, err, c.want)
			}
		}
	})
}

// A token service that is busy or briefly away is asked again, within
// the policy's attempts: Entra ID after 503 and 429, the metadata service
// after 410 as well; a refusal is final, and so is a metadata service that
// does not take the connection (TestAzureTokenErrors) or answers 404, as
// the same address does on another cloud.
func TestAzureTokenRetries(t *testing.T) {
	ctx := context.Background()
	t.Run("entra", func(t *testing.T) {
		e := newEntraServer(t)
		ok := e.answer
		e.answer = func(w http.ResponseWriter, f url.Values) {
			switch e.calls.Load() {
			case 1:
				w.WriteHeader(http.StatusServiceUnavailable)
			case 2:
				w.WriteHeader(http.StatusTooManyRequests)
			default:
				ok(w, f)
			}
		}
		env := tokenEnv("AZURE_TENANT_ID", "tenant-1", "AZURE_CLIENT_ID", "app-1", "AZURE_CLIENT_SECRET", "s", "AZURE_AUTHORITY_HOST", e.URL)
		tok, err := testCredential(env, e).token(ctx)
		if err != nil || tok != "secret-3" || e.calls.Load() != 3 {
			t.Fatalf("token %q, %v after %d requests; want secret-3 after 3", tok, err, e.calls.Load())
		}
		// Every attempt sent the whole form.
		for range 3 {
			if f := <-e.forms; f.Get("client_secret") != "s" || f.Get("grant_type") != "client_credentials" {
				t.Fatalf("form of a retried request: %v", f)
			}
		}
	})
	t.Run("entra gives up", func(t *testing.T) {
		e := newEntraServer(t)
		e.answer = func(w http.ResponseWriter, _ url.Values) { w.WriteHeader(http.StatusBadGateway) }
		env := tokenEnv("AZURE_TENANT_ID", "tenant-1", "AZURE_CLIENT_ID", "app-1", "AZURE_CLIENT_SECRET", "s", "AZURE_AUTHORITY_HOST", e.URL)
		if _, err := testCredential(env, e).token(ctx); err == nil || !strings.Contains(err.Error(), "502 Bad Gateway") || e.calls.Load() != int32(testTokenRetries.Attempts) {
			t.Fatalf("%v after %d requests; want the 502 after %d", err, e.calls.Load(), testTokenRetries.Attempts)
		}
	})
	t.Run("imds", func(t *testing.T) {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch calls.Add(1) {
			case 1:
				w.WriteHeader(http.StatusServiceUnavailable)
			case 2:
				w.WriteHeader(http.StatusGone)
			default:
				fmt.Fprintf(w, `{"access_token":"imds-%d","expires_in":"3600"}`, calls.Load())
			}
		}))
		t.Cleanup(srv.Close)
		setIMDS(t, srv.URL+"/metadata/identity/oauth2/token")
		t.Setenv("PATH", t.TempDir())
		tok, err := newAzureCredential(tokenEnv(), http.DefaultClient, azureIMDSClient(), testTokenRetries).token(ctx)
		if err != nil || tok != "imds-3" {
			t.Fatalf("token %q, %v after %d requests; want imds-3", tok, err, calls.Load())
		}
	})
	t.Run("imds 404", func(t *testing.T) {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.WriteHeader(http.StatusNotFound)
		}))
		t.Cleanup(srv.Close)
		setIMDS(t, srv.URL+"/metadata/identity/oauth2/token")
		t.Setenv("PATH", t.TempDir())
		_, err := newAzureCredential(tokenEnv(), http.DefaultClient, azureIMDSClient(), testTokenRetries).token(ctx)
		if err == nil || !strings.Contains(err.Error(), "404 Not Found") || !strings.Contains(err.Error(), "Azure CLI: az is not on PATH") || calls.Load() != 1 {
			t.Fatalf("%v after %d requests; want the 404 after one, and the chain gone on to the CLI", err, calls.Load())
		}
	})
}

// Without key, SAS or connection string the bucket's requests carry the
// token, under an API version that takes bearer tokens, and a failure to
// get one is a permission error.
func TestAzureBucketBearer(t *testing.T) {
	var imdsCalls atomic.Int32
	imdsServer(t, "", &imdsCalls)
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer imds-1" || r.Header.Get("x-ms-version") < "2017-11-09" || r.URL.RawQuery != "" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		if r.Method != http.MethodHead || r.URL.Path != "/acct/c/a/b" {
			t.Errorf("request %s %s", r.Method, r.URL)
		}
		w.Header().Set("Content-Length", "3")
		w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
	}))
	defer store.Close()
	u, _ := url.Parse(store.URL)
	env := tokenEnv("AZURE_STORAGE_ACCOUNT", "acct", "AZURE_STORAGE_DOMAIN", u.Host, "AZURE_STORAGE_PROTOCOL", "http")
	b, err := newAzureBucket(Location{Scheme: "azblob", Bucket: "c"}, fastPolicy, new(Counters), env)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		a, err := b.Attributes(context.Background(), "a/b")
		if err != nil || a.Size != 3 {
			t.Fatalf("attributes %+v, %v", a, err)
		}
	}
	if imdsCalls.Load() != 1 {
		t.Errorf("%d token requests for 3 requests", imdsCalls.Load())
	}

	setIMDS(t, "http://"+closedAddr(t)+"/metadata/identity/oauth2/token")
	t.Setenv("PATH", t.TempDir())
	b, err = newAzureBucket(Location{Scheme: "azblob", Bucket: "c"}, fastPolicy, new(Counters), env)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Attributes(context.Background(), "a/b")
	if b.ErrorCode(err) != gcerrors.PermissionDenied || !strings.Contains(err.Error(), "no token credential") {
		t.Errorf("without a token: %v (%v)", err, b.ErrorCode(err))
	}
}
