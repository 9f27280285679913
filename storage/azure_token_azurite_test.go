package storage

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Azurite under --oauth basic takes a bearer token over HTTPS, checking
// its issuer, audience and lifetime but not its signature: a token that
// the managed identity stand-in hands out reaches it through the driver,
// which lists, copies and deletes under it.
// startAzuriteHTTPS starts Azurite's blob service over HTTPS with bearer
// tokens on a free loopback port, and returns its address once it
// accepts connections, with the log of its output. A port that another
// process took between its choice and Azurite's start ends Azurite: it is
// started again on another, twice at most.
func startAzuriteHTTPS(t *testing.T, bin, dir string) (addr, logPath string) {
	for attempt := 1; ; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr = l.Addr().String()
		l.Close()
		host, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(bin, "--blobHost", host, "--blobPort", port, "--location", dir, "--silent", "--skipApiVersionCheck", "--loose",
			"--oauth", "basic", "--cert", filepath.Join(dir, "cert.pem"), "--key", filepath.Join(dir, "key.pem"))
		logPath = filepath.Join(dir, fmt.Sprintf("azurite-%d.log", attempt))
		log, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); log.Close(); close(exited) }()
		t.Cleanup(func() { cmd.Process.Kill(); <-exited })
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				return addr, logPath
			}
			select {
			case <-exited:
			default:
				if time.Now().Before(deadline) {
					continue
				}
			}
			break
		}
		if said, _ := os.ReadFile(logPath); attempt == 3 {
			t.Fatalf("azurite did not listen on %s: %s", addr, said)
		}
	}
}

func TestAzureBearerAzurite(t *testing.T) {
	bin := os.Getenv("STATEPROC_AZURITE")
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("STATEPROC_AZURITE is not set")
		}
		t.Skip("STATEPROC_AZURITE is not set (see internal/storetest.StartAzurite)")
	}
	dir := t.TempDir()
	pool := selfSignedCert(t, dir)
	addr, logPath := startAzuriteHTTPS(t, bin, dir)

	now := time.Now()
	var issuer atomic.Value
	issuer.Store("https://sts.windows.net/tenant-1/")
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		jwt := fakeJWT(map[string]any{
			"aud": "https://storage.azure.com", "iss": issuer.Load(),
			"iat": now.Unix() - 60, "nbf": now.Unix() - 60, "exp": now.Add(time.Hour).Unix(),
		})
		fmt.Fprintf(w, `{"access_token":%q,"expires_on":"%d"}`, jwt, now.Add(time.Hour).Unix())
	}))
	defer imds.Close()
	setIMDS(t, imds.URL)

	env := tokenEnv("AZURE_STORAGE_ACCOUNT", "devstoreaccount1", "AZURE_STORAGE_DOMAIN", addr, "AZURE_STORAGE_PROTOCOL", "https", "AZURE_STORAGE_IS_LOCAL_EMULATOR", "true")
	openBucket := func() *azureBucket {
		d, err := newAzureBucket(Location{Scheme: "azblob", Bucket: "state"}, fastPolicy, new(Counters), env)
		if err != nil {
			t.Fatal(err)
		}
		d.hc = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		return d
	}
	d := openBucket()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := d.do(context.Background(), "creating the container", func() (*http.Request, error) {
			return d.newRequest(http.MethodPut, d.base+"/state", map[string][]string{"restype": {"container"}}, []byte{}, nil)
		}, http.StatusCreated)
		if err == nil {
			drain(resp)
			break
		}
		if time.Now().After(deadline) {
			said, _ := os.ReadFile(logPath)
			t.Fatalf("azurite over HTTPS: %v; azurite's output:\n%s", err, said)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b := blob.NewBucket(d)
	defer b.Close()
	testAzureListCopyDelete(t, b)

	// Azurite does check the token: one from an issuer it does not
	// know is refused.
	issuer.Store("https://sts.example.com/tenant-1/")
	other := blob.NewBucket(openBucket())
	defer other.Close()
	if _, err := other.Attributes(context.Background(), "p/a"); gcerrors.Code(err) != gcerrors.PermissionDenied {
		t.Errorf("a token of another issuer: %v", err)
	}
}

// fakeJWT is a token of the given claims with an empty signature.
func fakeJWT(claims map[string]any) string {
	enc := base64.RawURLEncoding
	c, _ := json.Marshal(claims)
	return enc.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc.EncodeToString(c) + "." + enc.EncodeToString([]byte("sig"))
}

// selfSignedCert writes cert.pem and key.pem for 127.0.0.1 into dir and
// returns a pool that trusts the certificate.
func selfSignedCert(t *testing.T, dir string) *x509.CertPool {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, blk := range map[string]*pem.Block{"cert.pem": {Type: "CERTIFICATE", Bytes: der}, "key.pem": {Type: "PRIVATE KEY", Bytes: kder}} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(blk), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}
