package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Microsoft Entra ID tokens for the Azure client, found where the Azure
// SDK's DefaultAzureCredential finds them, without its libraries: an
// environment client secret, client certificate (azure_cert.go) or user
// name and password, a workload identity's federated token, the managed
// identity of the machine, or the Azure CLI's login.

// azureStorageScope is what a token is asked for: the storage service.
const (
	azureStorageScope    = "https://storage.azure.com/.default"
	azureStorageResource = "https://storage.azure.com/"
)

// azureIMDSEndpoint is the instance metadata service's token endpoint;
// tests point it at their own server.
var azureIMDSEndpoint = "http://169.254.169.254/metadata/identity/oauth2/token"

// azureTokenEarly is how long before its expiry a token is replaced, so
// that no request goes out with one that lapses in flight.
const azureTokenEarly = 5 * time.Minute

// azureIMDSDial bounds the connection to the metadata service: off Azure
// its address answers nothing and the chain should move on at once.
const azureIMDSDial = time.Second

// azureTokenLimit bounds a token service's answer, which is a few KiB.
const azureTokenLimit = 1 << 20

type azureToken struct {
	value   string
	expires time.Time
}

// azureTokenSource is one place a token may come from. fetch says
// unavailable (the source is not set up here, so the next one is tried)
// or returns an error that ends the search (the source is set up and
// refused).
type azureTokenSource struct {
	name  string
	fetch func(ctx context.Context) (tok azureToken, unavailable bool, err error)
}

// azureCredential hands out a bearer token, cached and replaced
// azureTokenEarly before it expires. The first source to give a token is
// kept for every refresh, as the SDK's chain does.
type azureCredential struct {
	sources []azureTokenSource
	now     func() time.Time
	// sem holds the one refresh in progress; others wait on it rather
	// than asking the token service again.
	sem    chan struct{}
	tok    azureToken
	chosen *azureTokenSource
}

// azureCredentialError is a failure to get a token: every source tried
// and why each failed. It never holds a secret or a token.
type azureCredentialError struct{ tried []string }

func (e *azureCredentialError) Error() string {
	return "azure: no token credential: " + strings.Join(e.tried, "; ")
}

func newAzureCredential(getenv func(string) string, hc, imds *http.Client, policy RetryPolicy) *azureCredential {
	c := &azureCredential{now: time.Now, sem: make(chan struct{}, 1)}
	// A token service's expires_in counts from the credential's clock.
	svc := &azureTokenClient{hc: hc, now: func() time.Time { return c.now() }, policy: policy.orDefault()}
	md := &azureTokenClient{hc: imds, now: svc.now, policy: svc.policy, imds: true}
	c.sources = []azureTokenSource{
		{"environment client secret", func(ctx context.Context) (azureToken, bool, error) {
			return azureClientSecret(ctx, svc, getenv)
		}},
		{"environment client certificate", func(ctx context.Context) (azureToken, bool, error) {
			return azureClientCertificate(ctx, svc, getenv)
		}},
		{"environment username and password", func(ctx context.Context) (azureToken, bool, error) {
			return azureUsernamePassword(ctx, svc, getenv)
		}},
		{"workload identity", func(ctx context.Context) (azureToken, bool, error) {
			return azureWorkloadIdentity(ctx, svc, getenv)
		}},
		{"managed identity", func(ctx context.Context) (azureToken, bool, error) {
			return azureManagedIdentity(ctx, md, getenv)
		}},
		{"Azure CLI", azureCLI},
	}
	return c
}

// token returns a token that is good for at least azureTokenEarly.
func (c *azureCredential) token(ctx context.Context) (string, error) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-c.sem }()
	now := c.now()
	if c.tok.value != "" && now.Before(c.tok.expires.Add(-azureTokenEarly)) {
		return c.tok.value, nil
	}
	tok, err := c.refresh(ctx)
	if err != nil {
		// A refresh that fails while the old token still holds leaves
		// it in use; the next request tries again.
		if c.tok.value != "" && now.Before(c.tok.expires) {
			return c.tok.value, nil
		}
		return "", err
	}
	c.tok = tok
	return tok.value, nil
}

func (c *azureCredential) refresh(ctx context.Context) (azureToken, error) {
	if c.chosen != nil {
		tok, _, err := c.chosen.fetch(ctx)
		if err != nil {
			return tok, &azureCredentialError{[]string{c.chosen.name + ": " + err.Error()}}
		}
		return tok, nil
	}
	var e azureCredentialError
	for i := range c.sources {
		s := &c.sources[i]
		tok, unavailable, err := s.fetch(ctx)
		if err == nil {
			c.chosen = s
			return tok, nil
		}
		e.tried = append(e.tried, s.name+": "+err.Error())
		if !unavailable || ctx.Err() != nil {
			break
		}
	}
	return azureToken{}, &e
}

// azureTenantValid keeps a tenant, which goes into the token URL's path,
// to the characters a tenant ID or domain has.
func azureTenantValid(t string) bool {
	if t == "" {
		return false
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// azureAuthority is the token endpoint of the tenant.
func azureAuthority(getenv func(string) string) (string, error) {
	tenant := getenv("AZURE_TENANT_ID")
	if !azureTenantValid(tenant) {
		return "", fmt.Errorf("AZURE_TENANT_ID %q is not a tenant ID", tenant)
	}
	host := strings.TrimSuffix(getenv("AZURE_AUTHORITY_HOST"), "/")
	if host == "" {
		host = "https://login.microsoftonline.com"
	}
	if u, err := url.Parse(host); err != nil || u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("AZURE_AUTHORITY_HOST %q: an https:// address", host)
	}
	return host + "/" + tenant + "/oauth2/v2.0/token", nil
}

func azureClientSecret(ctx context.Context, tc *azureTokenClient, getenv func(string) string) (azureToken, bool, error) {
	id, secret := getenv("AZURE_CLIENT_ID"), getenv("AZURE_CLIENT_SECRET")
	if getenv("AZURE_TENANT_ID") == "" || id == "" || secret == "" {
		return azureToken{}, true, errors.New("AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET are not all set")
	}
	endpoint, err := azureAuthority(getenv)
	if err != nil {
		return azureToken{}, false, err
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "scope": {azureStorageScope}}
	tok, err := tc.post(ctx, endpoint, form)
	return tok, false, err
}

func azureWorkloadIdentity(ctx context.Context, tc *azureTokenClient, getenv func(string) string) (azureToken, bool, error) {
	file, id := getenv("AZURE_FEDERATED_TOKEN_FILE"), getenv("AZURE_CLIENT_ID")
	if file == "" || id == "" || getenv("AZURE_TENANT_ID") == "" {
		return azureToken{}, true, errors.New("AZURE_FEDERATED_TOKEN_FILE, AZURE_CLIENT_ID and AZURE_TENANT_ID are not all set")
	}
	endpoint, err := azureAuthority(getenv)
	if err != nil {
		return azureToken{}, false, err
	}
	// The file is rotated by the platform: read it on every refresh.
	assertion, err := readLimited(file, azureTokenLimit)
	if err != nil {
		return azureToken{}, false, fmt.Errorf("the federated token: %w", err)
	}
	form := url.Values{
		"grant_type": {"client_credentials"}, "client_id": {id}, "scope": {azureStorageScope},
		"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
		"client_assertion":      {strings.TrimSpace(string(assertion))},
	}
	tok, err := tc.post(ctx, endpoint, form)
	return tok, false, err
}

func readLimited(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("%s: longer than %d bytes", name, limit)
	}
	return b, err
}

// azureTokenClient asks a token service for a token, retrying under
// policy what a token service answers when it is busy or briefly away:
// 429 and 5xx, and for the metadata service also 410, which it answers
// while it is updated. Not its 404, which it may also answer then: on
// another cloud the same address answers 404 to every path, and the chain
// must go on to the next source quickly. A broken connection is retried
// on the Entra ID endpoints only: a metadata service that does not take
// the connection is absent.
type azureTokenClient struct {
	hc     *http.Client
	now    func() time.Time
	policy RetryPolicy
	imds   bool
}

func (tc *azureTokenClient) post(ctx context.Context, endpoint string, form url.Values) (azureToken, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return azureToken{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return tc.answer(req)
}

// answer sends req and reads the token from its answer, in
// either of the shapes the token services use: expires_in seconds from
// now, or expires_on seconds since the epoch, each a number or a string.
func (tc *azureTokenClient) answer(req *http.Request) (azureToken, error) {
	for attempt := 1; ; attempt++ {
		tok, retry, err := tc.try(req)
		if err == nil || !retry || attempt >= tc.policy.Attempts {
			return tok, err
		}
		if err := tc.policy.sleep(req.Context(), attempt); err != nil {
			return azureToken{}, err
		}
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return azureToken{}, err
			}
			req.Body = body
		}
	}
}

// try sends req once and reads the token from its answer; retry says
// whether a failure is worth another attempt.
func (tc *azureTokenClient) try(req *http.Request) (tok azureToken, retry bool, err error) {
	sent := tc.now()
	resp, err := tc.hc.Do(req)
	if err != nil {
		return azureToken{}, !tc.imds && req.Context().Err() == nil && Retryable(err), err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, azureTokenLimit))
	if err != nil {
		return azureToken{}, true, fmt.Errorf("%s: %w", req.URL.Host, err)
	}
	tok, err = tc.token(req, resp, body, sent)
	return tok, err != nil && tc.busy(resp.StatusCode), err
}

// busy reports whether a token service's status says to ask again.
func (tc *azureTokenClient) busy(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500 || tc.imds && status == http.StatusGone
}

// token reads the token from an answer.
func (tc *azureTokenClient) token(req *http.Request, resp *http.Response, body []byte, sent time.Time) (azureToken, error) {
	var a struct {
		AccessToken string          `json:"access_token"`
		ExpiresIn   json.RawMessage `json:"expires_in"`
		ExpiresOn   json.RawMessage `json:"expires_on"`
		Error       string          `json:"error"`
		Description string          `json:"error_description"`
	}
	jerr := json.Unmarshal(body, &a)
	if resp.StatusCode != http.StatusOK {
		msg := resp.Status
		if jerr == nil && a.Error != "" {
			desc, _, _ := strings.Cut(a.Description, "\n")
			msg += ": " + a.Error + ": " + strings.TrimSpace(desc)
		}
		return azureToken{}, fmt.Errorf("%s answered %s", req.URL.Host, msg)
	}
	if jerr != nil {
		return azureToken{}, fmt.Errorf("%s: the answer is not a token: %v", req.URL.Host, jerr)
	}
	if a.AccessToken == "" {
		return azureToken{}, fmt.Errorf("%s: the answer has no access_token", req.URL.Host)
	}
	if n, ok := jsonSeconds(a.ExpiresOn); ok {
		return azureToken{a.AccessToken, time.Unix(n, 0)}, nil
	}
	if n, ok := jsonSeconds(a.ExpiresIn); ok {
		return azureToken{a.AccessToken, sent.Add(time.Duration(n) * time.Second)}, nil
	}
	return azureToken{}, fmt.Errorf("%s: the answer has neither expires_in nor expires_on", req.URL.Host)
}

// jsonSeconds reads a count of seconds given as a JSON number or string.
func jsonSeconds(raw json.RawMessage) (int64, bool) {
	s := strings.Trim(string(bytes.TrimSpace(raw)), `"`)
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}

// azureManagedIdentity asks the App Service identity endpoint where one
// is set (IDENTITY_ENDPOINT, IDENTITY_HEADER), else the instance metadata
// service. AZURE_CLIENT_ID picks a user-assigned identity. Every failure
// lets the chain go on, as a machine outside Azure has none.
func azureManagedIdentity(ctx context.Context, tc *azureTokenClient, getenv func(string) string) (azureToken, bool, error) {
	q := url.Values{"resource": {azureStorageResource}}
	if id := getenv("AZURE_CLIENT_ID"); id != "" {
		q.Set("client_id", id)
	}
	endpoint, header := getenv("IDENTITY_ENDPOINT"), getenv("IDENTITY_HEADER")
	if endpoint != "" && header != "" {
		q.Set("api-version", "2019-08-01")
	} else {
		endpoint = azureIMDSEndpoint
		q.Set("api-version", "2018-02-01")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"?"+q.Encode(), nil)
	if err != nil {
		return azureToken{}, true, err
	}
	if header != "" && endpoint != azureIMDSEndpoint {
		req.Header.Set("X-IDENTITY-HEADER", header)
	} else {
		req.Header.Set("Metadata", "true")
	}
	tok, err := tc.answer(req)
	return tok, true, err
}

// azureIMDSClient gives up quickly on a metadata service that does not
// answer the connection, and waits for one that does.
func azureIMDSClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // the metadata service is link-local, never behind a proxy
	tr.DialContext = (&net.Dialer{Timeout: azureIMDSDial}).DialContext
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// azureCLITimeout bounds the Azure CLI, which may refresh its own login.
const azureCLITimeout = 30 * time.Second

func azureCLI(ctx context.Context) (azureToken, bool, error) {
	az, err := exec.LookPath("az")
	if err != nil {
		return azureToken{}, true, errors.New("az is not on PATH")
	}
	ctx, cancel := context.WithTimeout(ctx, azureCLITimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, az, "account", "get-access-token", "--resource", "https://storage.azure.com", "--output", "json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		if msg == "" {
			msg = err.Error()
		}
		return azureToken{}, true, fmt.Errorf("az account get-access-token: %s", msg)
	}
	var a struct {
		AccessToken string          `json:"accessToken"`
		ExpiresOn   string          `json:"expiresOn"`
		ExpiresOnTS json.RawMessage `json:"expires_on"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &a); err != nil || a.AccessToken == "" {
		return azureToken{}, true, errors.New("az account get-access-token: the output has no accessToken")
	}
	if n, ok := jsonSeconds(a.ExpiresOnTS); ok {
		return azureToken{a.AccessToken, time.Unix(n, 0)}, false, nil
	}
	// Older versions give only the local time, without a zone.
	t, err := time.ParseInLocation("2006-01-02 15:04:05.999999", a.ExpiresOn, time.Local)
	if err != nil {
		return azureToken{}, true, fmt.Errorf("az account get-access-token: expiresOn %q: %v", a.ExpiresOn, err)
	}
	return azureToken{a.AccessToken, t}, false, nil
}
