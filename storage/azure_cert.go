package storage

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// A service principal's certificate, as the Azure SDK's
// EnvironmentCredential reads it: AZURE_CLIENT_CERTIFICATE_PATH names a
// PEM file (the certificate and its unencrypted private key, in either
// order, with any chain after the certificate) or a PKCS#12 file (.pfx,
// .p12) whose password is AZURE_CLIENT_CERTIFICATE_PASSWORD. The token
// request carries a JWT signed with the key (RFC 7523's private_key_jwt),
// which Microsoft Entra ID checks against the certificate registered for
// the application by its SHA-1 thumbprint (x5t); with
// AZURE_CLIENT_SEND_CERTIFICATE_CHAIN set, the chain goes along (x5c) for
// subject name and issuer authentication. Entra ID signs such assertions
// with RSA only, so the key must be RSA.

// azureAssertionLife is how long a client assertion is good for: it is
// made for one token request.
const azureAssertionLife = 10 * time.Minute

// azureCertLimit bounds the certificate file.
const azureCertLimit = 1 << 20

// azureClientCert is what a token request needs of the certificate file.
type azureClientCert struct {
	key   *rsa.PrivateKey
	chain []*x509.Certificate // the key's certificate first
}

func azureClientCertificate(ctx context.Context, tc *azureTokenClient, getenv func(string) string) (azureToken, bool, error) {
	id, path := getenv("AZURE_CLIENT_ID"), getenv("AZURE_CLIENT_CERTIFICATE_PATH")
	if getenv("AZURE_TENANT_ID") == "" || id == "" || path == "" {
		return azureToken{}, true, errors.New("AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_CERTIFICATE_PATH are not all set")
	}
	endpoint, err := azureAuthority(getenv)
	if err != nil {
		return azureToken{}, false, err
	}
	// Read on every refresh, so that a renewed certificate is taken.
	data, err := readLimited(path, azureCertLimit)
	if err != nil {
		return azureToken{}, false, fmt.Errorf("AZURE_CLIENT_CERTIFICATE_PATH: %w", err)
	}
	cert, err := parseAzureClientCert(data, getenv("AZURE_CLIENT_CERTIFICATE_PASSWORD"))
	if err != nil {
		return azureToken{}, false, fmt.Errorf("AZURE_CLIENT_CERTIFICATE_PATH %s: %w", path, err)
	}
	assertion, err := cert.assertion(id, endpoint, tc.now(), azureSendChain(getenv("AZURE_CLIENT_SEND_CERTIFICATE_CHAIN")))
	if err != nil {
		return azureToken{}, false, err
	}
	form := url.Values{
		"grant_type": {"client_credentials"}, "client_id": {id}, "scope": {azureStorageScope},
		"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
		"client_assertion":      {assertion},
	}
	tok, err := tc.post(ctx, endpoint, form)
	return tok, false, err
}

// azureSendChain reads AZURE_CLIENT_SEND_CERTIFICATE_CHAIN as the SDK
// does: "true" or "1".
func azureSendChain(v string) bool {
	return v == "1" || strings.EqualFold(v, "true")
}

// parseAzureClientCert reads a PEM or PKCS#12 certificate file.
func parseAzureClientCert(data []byte, password string) (*azureClientCert, error) {
	var key any
	var certs []*x509.Certificate
	if block, _ := pem.Decode(data); block != nil {
		var err error
		if key, certs, err = parseAzurePEM(data); err != nil {
			return nil, err
		}
	} else {
		k, leaf, cas, err := pkcs12.DecodeChain(data, password)
		if err != nil {
			return nil, fmt.Errorf("neither PEM nor a PKCS#12 file this password opens: %v", err)
		}
		key, certs = k, append([]*x509.Certificate{leaf}, cas...)
	}
	rk, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("the private key is %T; Microsoft Entra ID takes RSA keys only", key)
	}
	// The certificate of the key goes first, the rest of the chain after.
	at := -1
	for i, c := range certs {
		if pub, ok := c.PublicKey.(*rsa.PublicKey); ok && pub.Equal(&rk.PublicKey) {
			at = i
			break
		}
	}
	if at < 0 {
		return nil, errors.New("no certificate in the file is the private key's")
	}
	chain := append([]*x509.Certificate{certs[at]}, certs[:at]...)
	return &azureClientCert{key: rk, chain: append(chain, certs[at+1:]...)}, nil
}

// parseAzurePEM reads the certificates and the one private key of a PEM
// file.
func parseAzurePEM(data []byte) (any, []*x509.Certificate, error) {
	var key any
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		switch {
		case block.Type == "CERTIFICATE":
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, nil, fmt.Errorf("certificate %d: %v", len(certs)+1, err)
			}
			certs = append(certs, c)
		case block.Type == "ENCRYPTED PRIVATE KEY" || block.Headers["Proc-Type"] != "":
			return nil, nil, errors.New("the private key is encrypted; give it unencrypted, or as a PKCS#12 file with AZURE_CLIENT_CERTIFICATE_PASSWORD")
		case strings.HasSuffix(block.Type, "PRIVATE KEY"):
			if key != nil {
				return nil, nil, errors.New("more than one private key")
			}
			var err error
			if key, err = x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
				var err1 error
				if key, err1 = x509.ParsePKCS1PrivateKey(block.Bytes); err1 != nil {
					return nil, nil, fmt.Errorf("the private key is neither PKCS#8 nor PKCS#1: %v", err)
				}
			}
		}
	}
	switch {
	case key == nil:
		return nil, nil, errors.New("no private key in the PEM file")
	case len(certs) == 0:
		return nil, nil, errors.New("no certificate in the PEM file")
	}
	return key, certs, nil
}

// assertion is a signed JWT that proves to the token endpoint aud that
// client id holds the certificate's key.
func (c *azureClientCert) assertion(id, aud string, now time.Time, sendChain bool) (string, error) {
	thumb := sha1.Sum(c.chain[0].Raw)
	header := map[string]any{"alg": "RS256", "typ": "JWT", "x5t": base64.RawURLEncoding.EncodeToString(thumb[:])}
	if sendChain {
		x5c := make([]string, len(c.chain))
		for i, cert := range c.chain {
			x5c[i] = base64.StdEncoding.EncodeToString(cert.Raw)
		}
		header["x5c"] = x5c
	}
	var jti [16]byte
	if _, err := rand.Read(jti[:]); err != nil {
		return "", err
	}
	jti[6] = jti[6]&0x0f | 0x40 // a version 4 UUID
	jti[8] = jti[8]&0x3f | 0x80
	claims := map[string]any{
		"aud": aud, "iss": id, "sub": id,
		"jti": fmt.Sprintf("%x-%x-%x-%x-%x", jti[0:4], jti[4:6], jti[6:8], jti[8:10], jti[10:]),
		"nbf": now.Unix(), "iat": now.Unix(), "exp": now.Add(azureAssertionLife).Unix(),
	}
	h, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	cl, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signed := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(cl)
	digest := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, c.key, crypto.SHA256, digest[:])
	if err != nil {
		return "", fmt.Errorf("signing the client assertion: %w", err)
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// azureUsernamePassword is the resource owner password grant, which the
// SDK's EnvironmentCredential still takes (AZURE_USERNAME, AZURE_PASSWORD)
// though Microsoft deprecates it: it fails for accounts that need
// multi-factor authentication.
func azureUsernamePassword(ctx context.Context, tc *azureTokenClient, getenv func(string) string) (azureToken, bool, error) {
	id, user, password := getenv("AZURE_CLIENT_ID"), getenv("AZURE_USERNAME"), getenv("AZURE_PASSWORD")
	if getenv("AZURE_TENANT_ID") == "" || id == "" || user == "" || password == "" {
		return azureToken{}, true, errors.New("AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_USERNAME and AZURE_PASSWORD are not all set")
	}
	endpoint, err := azureAuthority(getenv)
	if err != nil {
		return azureToken{}, false, err
	}
	form := url.Values{
		"grant_type": {"password"}, "client_id": {id}, "username": {user}, "password": {password},
		"scope": {azureStorageScope},
	}
	tok, err := tc.post(ctx, endpoint, form)
	return tok, false, err
}
