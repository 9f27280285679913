package storage

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// testCA is a certificate authority and a leaf certificate it signed for
// an application's RSA key.
type testCA struct {
	caKey   *rsa.PrivateKey
	ca      *x509.Certificate
	leafKey *rsa.PrivateKey
	leaf    *x509.Certificate
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	var c testCA
	var err error
	if c.caKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if c.leafKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &c.caKey.PublicKey, c.caKey)
	if err != nil {
		t.Fatal(err)
	}
	if c.ca, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "app-1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	if der, err = x509.CreateCertificate(rand.Reader, leafTmpl, c.ca, &c.leafKey.PublicKey, c.caKey); err != nil {
		t.Fatal(err)
	}
	if c.leaf, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	return &c
}

func pemBlock(typ string, der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

func writeCertFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkAssertion verifies a client assertion as Entra ID does: signed
// with the key of the certificate whose SHA-1 thumbprint is x5t, for the
// token endpoint aud, issued by and about client app-1, short-lived. It
// returns the header's x5c.
func checkAssertion(t *testing.T, jwt, aud string, cert *x509.Certificate, now time.Time) []string {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("assertion %q has %d parts", jwt, len(parts))
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(cert.PublicKey.(*rsa.PublicKey), crypto.SHA256, digest[:], sig); err != nil {
		t.Fatalf("the assertion's signature is not the certificate key's: %v", err)
	}
	var header struct {
		Alg, Typ, X5t string
		X5c           []string
	}
	var claims struct {
		Aud, Iss, Sub, Jti string
		Nbf, Iat, Exp      int64
	}
	for i, v := range []any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	thumb := sha1.Sum(cert.Raw)
	if header.Alg != "RS256" || header.Typ != "JWT" || header.X5t != base64.RawURLEncoding.EncodeToString(thumb[:]) {
		t.Errorf("header %+v", header)
	}
	if claims.Aud != aud || claims.Iss != "app-1" || claims.Sub != "app-1" {
		t.Errorf("claims %+v, want aud %s", claims, aud)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(claims.Jti) {
		t.Errorf("jti %q is not a random UUID", claims.Jti)
	}
	if claims.Nbf != now.Unix() || claims.Iat != now.Unix() || claims.Exp != now.Add(10*time.Minute).Unix() {
		t.Errorf("nbf %d iat %d exp %d, now %d", claims.Nbf, claims.Iat, claims.Exp, now.Unix())
	}
	return header.X5c
}

// A certificate file in each of the shapes the SDK reads gives a token
// request signed with its key and naming its certificate, the chain going
// along only when asked.
func TestAzureClientCertificate(t *testing.T) {
	ca := newTestCA(t)
	pkcs8, err := x509.MarshalPKCS8PrivateKey(ca.leafKey)
	if err != nil {
		t.Fatal(err)
	}
	leafPEM, caPEM := pemBlock("CERTIFICATE", ca.leaf.Raw), pemBlock("CERTIFICATE", ca.ca.Raw)
	modern, err := pkcs12.Modern.Encode(ca.leafKey, ca.leaf, []*x509.Certificate{ca.ca}, "pfx-pass")
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := pkcs12.Legacy.Encode(ca.leafKey, ca.leaf, []*x509.Certificate{ca.ca}, "pfx-pass")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, password string
		file           []byte
		chain          bool
	}{
		{name: "PEM, PKCS#8 key first", file: []byte(pemBlock("PRIVATE KEY", pkcs8) + leafPEM + caPEM)},
		{name: "PEM, chain before the PKCS#1 key", file: []byte(caPEM + leafPEM + pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(ca.leafKey))), chain: true},
		{name: "PKCS#12 with AES", file: modern, password: "pfx-pass", chain: true},
		{name: "PKCS#12, legacy ciphers", file: legacy, password: "pfx-pass"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEntraServer(t)
			path := writeCertFile(t, "cert", c.file)
			kv := []string{"AZURE_TENANT_ID", "tenant-1", "AZURE_CLIENT_ID", "app-1", "AZURE_CLIENT_CERTIFICATE_PATH", path,
				"AZURE_CLIENT_CERTIFICATE_PASSWORD", c.password, "AZURE_AUTHORITY_HOST", e.URL}
			if c.chain {
				kv = append(kv, "AZURE_CLIENT_SEND_CERTIFICATE_CHAIN", "true")
			}
			cred := testCredential(tokenEnv(kv...), e)
			now := time.Now().Truncate(time.Second)
			cred.now = func() time.Time { return now }
			tok, err := cred.token(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			form := <-e.forms
			if tok != "assertion-"+form.Get("client_assertion")+"-1" {
				t.Errorf("token %q", tok)
			}
			assertion := form.Get("client_assertion")
			form.Del("client_assertion")
			want := url.Values{"grant_type": {"client_credentials"}, "client_id": {"app-1"}, "scope": {"https://storage.azure.com/.default"},
				"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}}
			if form.Encode() != want.Encode() {
				t.Errorf("form %v, want %v", form, want)
			}
			x5c := checkAssertion(t, assertion, e.URL+"/tenant-1/oauth2/v2.0/token", ca.leaf, now)
			wantX5c := []string(nil)
			if c.chain {
				wantX5c = []string{base64.StdEncoding.EncodeToString(ca.leaf.Raw), base64.StdEncoding.EncodeToString(ca.ca.Raw)}
			}
			if strings.Join(x5c, ",") != strings.Join(wantX5c, ",") {
				t.Errorf("x5c %q, want %q", x5c, wantX5c)
			}
		})
	}
}

// A certificate file that cannot sign ends the search with an error that
// names the variable, the file and what is wrong with it, and shows no
// secret.
func TestAzureClientCertificateErrors(t *testing.T) {
	ca := newTestCA(t)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, err := x509.MarshalPKCS8PrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	leafPEM := pemBlock("CERTIFICATE", ca.leaf.Raw)
	pfx, err := pkcs12.Modern.Encode(ca.leafKey, ca.leaf, nil, "right-pass")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, password, want string
		file                 []byte
	}{
		{name: "no such file", want: "no such file or directory"},
		{name: "encrypted PEM key", file: []byte(pemBlock("ENCRYPTED PRIVATE KEY", []byte{1, 2, 3}) + leafPEM), want: "the private key is encrypted"},
		{name: "EC key", file: []byte(pemBlock("PRIVATE KEY", ecDER) + leafPEM), want: "Microsoft Entra ID takes RSA keys only"},
		{name: "key of another certificate", file: []byte(pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(other)) + leafPEM), want: "no certificate in the file is the private key's"},
		{name: "key without certificate", file: []byte(pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(ca.leafKey))), want: "no certificate in the PEM file"},
		{name: "certificate without key", file: []byte(leafPEM), want: "no private key in the PEM file"},
		{name: "PKCS#12, wrong password", file: pfx, password: "wrong-pass", want: "neither PEM nor a PKCS#12 file this password opens"},
		{name: "neither", file: []byte("not a certificate"), want: "neither PEM nor a PKCS#12 file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var imdsCalls atomic.Int32
			imdsServer(t, "", &imdsCalls)
			e := newEntraServer(t)
			path := filepath.Join(t.TempDir(), "missing")
			if c.file != nil {
				path = writeCertFile(t, "cert", c.file)
			}
			env := tokenEnv("AZURE_TENANT_ID", "tenant-1", "AZURE_CLIENT_ID", "app-1", "AZURE_CLIENT_CERTIFICATE_PATH", path,
				"AZURE_CLIENT_CERTIFICATE_PASSWORD", c.password, "AZURE_AUTHORITY_HOST", e.URL)
			_, err := testCredential(env, e).token(context.Background())
			if err == nil || !strings.Contains(err.Error(), "environment client certificate: AZURE_CLIENT_CERTIFICATE_PATH") ||
				!strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v\nwant %q", err, c.want)
			}
			if c.password != "" && strings.Contains(err.Error(), c.password) {
				t.Errorf("the error shows the password: %v", err)
			}
			if e.calls.Load() != 0 || imdsCalls.Load() != 0 {
				t.Errorf("asked Entra ID %d and the managed identity %d times after a broken certificate", e.calls.Load(), imdsCalls.Load())
			}
		})
	}
}

// A client secret goes before a certificate, and a certificate before a
// user name and password, as in the SDK's EnvironmentCredential; the
// password grant sends the user's credentials.
func TestAzureEnvironmentOrder(t *testing.T) {
	ca := newTestCA(t)
	pkcs8, err := x509.MarshalPKCS8PrivateKey(ca.leafKey)
	if err != nil {
		t.Fatal(err)
	}
	path := writeCertFile(t, "cert.pem", []byte(pemBlock("PRIVATE KEY", pkcs8)+pemBlock("CERTIFICATE", ca.leaf.Raw)))
	for _, c := range []struct {
		name  string
		env   []string
		grant string
	}{
		{"secret over certificate", []string{"AZURE_CLIENT_SECRET", "s3cret", "AZURE_CLIENT_CERTIFICATE_PATH", path, "AZURE_USERNAME", "u@example.com", "AZURE_PASSWORD", "pw"}, "secret"},
		{"certificate over password", []string{"AZURE_CLIENT_CERTIFICATE_PATH", path, "AZURE_USERNAME", "u@example.com", "AZURE_PASSWORD", "pw"}, "certificate"},
		{"password", []string{"AZURE_USERNAME", "u@example.com", "AZURE_PASSWORD", "pw"}, "password"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEntraServer(t)
			env := tokenEnv(append([]string{"AZURE_TENANT_ID", "tenant-1", "AZURE_CLIENT_ID", "app-1", "AZURE_AUTHORITY_HOST", e.URL}, c.env...)...)
			if _, err := testCredential(env, e).token(context.Background()); err != nil {
				t.Fatal(err)
			}
			f := <-e.forms
			var got string
			switch {
			case f.Get("client_secret") == "s3cret" && f.Get("grant_type") == "client_credentials":
				got = "secret"
			case f.Get("client_assertion") != "" && f.Get("grant_type") == "client_credentials":
				got = "certificate"
			case f.Encode() == url.Values{"grant_type": {"password"}, "client_id": {"app-1"}, "username": {"u@example.com"},
				"password": {"pw"}, "scope": {"https://storage.azure.com/.default"}}.Encode():
				got = "password"
			}
			if got != c.grant {
				t.Errorf("form %v, want the %s grant", f, c.grant)
			}
		})
	}
}

// A refused password ends the search, and the error shows neither the
// password nor the user's other secrets.
func TestAzurePasswordRefused(t *testing.T) {
	e := newEntraServer(t)
	e.answer = func(w http.ResponseWriter, _ url.Values) {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":"invalid_grant","error_description":"AADSTS50076: Due to a configuration change made by your administrator, you must use multi-factor authentication.\r\nTrace ID: x"}`))
	}
	env := tokenEnv("AZURE_TENANT_ID", "tenant-1", "AZURE_CLIENT_ID", "app-1", "AZURE_USERNAME", "u@example.com", "AZURE_PASSWORD", "hunter2-pw", "AZURE_AUTHORITY_HOST", e.URL)
	_, err := testCredential(env, e).token(context.Background())
	if err == nil || !strings.Contains(err.Error(), "environment username and password: ") || !strings.Contains(err.Error(), "400 Bad Request: invalid_grant: AADSTS50076") {
		t.Fatalf("%v", err)
	}
	if strings.Contains(err.Error(), "hunter2-pw") {
		t.Errorf("the error shows the password: %v", err)
	}
}
