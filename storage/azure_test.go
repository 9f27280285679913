package storage

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/stateproc/stateproc/internal/storetest"
)

// TestAzureDriver runs the driver against one Azurite, whose start takes
// seconds.
func TestAzureDriver(t *testing.T) {
	q, err := url.ParseQuery(storetest.StartAzurite(t, "state"))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("blocks and conditions", func(t *testing.T) { testAzureBlocksAndConditions(t, azuriteBucket(t, q, 64<<10)) })
	t.Run("list, copy, delete", func(t *testing.T) { testAzureListCopyDelete(t, azuriteBucket(t, q, azureBlockSize)) })
	t.Run("another key refused", func(t *testing.T) { testAzureWrongKeyRefused(t, q) })
}

// azuriteBucket opens container "state" of the Azurite that q addresses
// through the driver, with blocks of block bytes.
func azuriteBucket(t *testing.T, q url.Values, block int) *blob.Bucket {
	t.Helper()
	d, err := newAzureBucket(Location{Scheme: "azblob", Bucket: "state", Query: q}, fastPolicy, new(Counters), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	d.block = block
	b := blob.NewBucket(d)
	t.Cleanup(func() { b.Close() })
	return b
}

var fastPolicy = RetryPolicy{Attempts: 3, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}

// A blob larger than a block goes up as blocks committed by one block
// list, create-only: it reads back whole and in ranges, and a second
// create-only write of the name fails as a failed precondition without
// changing it. A write conditional on the ETag replaces it; on a stale
// ETag it fails the same way.
func testAzureBlocksAndConditions(t *testing.T, b *blob.Bucket) {
	ctx := context.Background()
	data := make([]byte, 200<<10+7)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	opts := &blob.WriterOptions{ContentType: "application/octet-stream", IfNotExist: true}
	if err := b.Upload(ctx, "sp/data", bytes.NewReader(data), opts); err != nil {
		t.Fatal(err)
	}
	got, err := b.ReadAll(ctx, "sp/data")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes (%v), wrote %d", len(got), err, len(data))
	}
	r, err := b.NewRangeReader(ctx, "sp/data", 70<<10, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	part, _ := io.ReadAll(r)
	r.Close()
	if !bytes.Equal(part, data[70<<10:70<<10+100]) {
		t.Errorf("the range reads %d other bytes", len(part))
	}
	err = b.Upload(ctx, "sp/data", strings.NewReader("other"), opts)
	if gcerrors.Code(err) != gcerrors.FailedPrecondition {
		t.Fatalf("a second create-only write: %v", err)
	}
	// The same, through blocks.
	err = b.Upload(ctx, "sp/data", bytes.NewReader(data[:150<<10]), opts)
	if gcerrors.Code(err) != gcerrors.FailedPrecondition {
		t.Fatalf("a second create-only write in blocks: %v", err)
	}
	if got, _ := b.ReadAll(ctx, "sp/data"); !bytes.Equal(got, data) {
		t.Fatal("a refused write changed the blob")
	}
	a, err := b.Attributes(ctx, "sp/data")
	if err != nil || a.Size != int64(len(data)) || a.ETag == "" {
		t.Fatalf("attributes %+v, %v", a, err)
	}
	ifMatch := func(etag string) *blob.WriterOptions {
		return &blob.WriterOptions{ContentType: "application/octet-stream", BeforeWrite: func(as func(any) bool) error {
			var c *azureConditions
			if as(&c) {
				c.IfMatch = etag
			}
			return nil
		}}
	}
	if err := b.Upload(ctx, "sp/data", strings.NewReader("new"), ifMatch(a.ETag)); err != nil {
		t.Fatalf("a write on the current ETag: %v", err)
	}
	if err := b.Upload(ctx, "sp/data", strings.NewReader("newer"), ifMatch(a.ETag)); gcerrors.Code(err) != gcerrors.FailedPrecondition {
		t.Fatalf("a write on a stale ETag: %v", err)
	}
	// A read bound to the replaced version fails rather than mix versions.
	f := &bucketFile{etag: a.ETag}
	_, err = b.NewRangeReader(ctx, "sp/data", 0, 2, &blob.ReaderOptions{BeforeRead: f.ifMatch})
	if !isPreconditionFailed(err) {
		t.Fatalf("a read bound to the replaced version: %v", err)
	}
	if got, _ := b.ReadAll(ctx, "sp/data"); string(got) != "new" {
		t.Fatalf("the blob holds %q", got)
	}
}

// Listing pages through markers, with prefixes under a delimiter; a copy
// is made on the server; a delete removes.
func testAzureListCopyDelete(t *testing.T, b *blob.Bucket) {
	ctx := context.Background()
	var want []string
	for _, k := range []string{"p/a", "p/b", "p/c", "p/d", "p/e", "p/sub/x"} {
		if err := b.WriteAll(ctx, k, []byte(k), &blob.WriterOptions{ContentType: "text/plain"}); err != nil {
			t.Fatal(err)
		}
		want = append(want, k)
	}
	var keys []string
	token := blob.FirstPageToken
	pages := 0
	for {
		objs, next, err := b.ListPage(ctx, token, 2, &blob.ListOptions{Prefix: "p/"})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, o := range objs {
			keys = append(keys, o.Key)
		}
		if len(next) == 0 {
			break
		}
		token = next
	}
	if !slices.Equal(keys, want) || pages != 3 {
		t.Fatalf("listed %q in %d pages, want %q in 3", keys, pages, want)
	}
	objs, _, err := b.ListPage(ctx, blob.FirstPageToken, 10, &blob.ListOptions{Prefix: "p/", Delimiter: "/"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(objs); n != 6 || !objs[5].IsDir || objs[5].Key != "p/sub/" {
		t.Errorf("listed %d under the delimiter, the last %+v", n, objs[n-1])
	}
	if err := b.Copy(ctx, "q/a", "p/a", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := b.ReadAll(ctx, "q/a"); err != nil || string(got) != "p/a" {
		t.Fatalf("the copy holds %q (%v)", got, err)
	}
	if err := b.Delete(ctx, "q/a"); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Exists(ctx, "q/a"); ok || err != nil {
		t.Fatalf("deleted, exists %v (%v)", ok, err)
	}
	if err := b.Delete(ctx, "q/a"); gcerrors.Code(err) != gcerrors.NotFound {
		t.Errorf("deleting what is gone: %v", err)
	}
}

// The service checks every request's Shared Key signature: under another
// key nothing is read.
func testAzureWrongKeyRefused(t *testing.T, q url.Values) {
	other := "b3RoZXIga2V5IG9mIHRoZSByaWdodCBsZW5ndGggZm9yIGFuIGFjY291bnQ="
	d, err := newAzureBucket(Location{Scheme: "azblob", Bucket: "state", Query: q}, fastPolicy, new(Counters), func(k string) string {
		if k == "AZURE_STORAGE_KEY" {
			return other
		}
		return os.Getenv(k)
	})
	if err != nil {
		t.Fatal(err)
	}
	b := blob.NewBucket(d)
	defer b.Close()
	_, err = b.Attributes(context.Background(), "anything")
	if gcerrors.Code(err) != gcerrors.PermissionDenied {
		t.Fatalf("a request under another key: %v", err)
	}
}

// Where the service is, from the environment and the location's
// parameters, as gocloud's driver reads them.
func TestAzureServiceAddress(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	key := "a2V5"
	for _, c := range []struct {
		env     func(string) string
		query   string
		want    string
		wantErr string
	}{
		{env("AZURE_STORAGE_ACCOUNT", "acct", "AZURE_STORAGE_KEY", key), "", "https://acct.blob.core.windows.net", ""},
		{env("AZURE_STORAGE_ACCOUNT", "acct", "AZURE_STORAGE_KEY", key), "domain=127.0.0.1:10000&protocol=http", "http://127.0.0.1:10000/acct", ""},
		{env("AZURE_STORAGE_ACCOUNT", "acct", "AZURE_STORAGE_KEY", key, "AZURE_STORAGE_IS_LOCAL_EMULATOR", "true", "AZURE_STORAGE_DOMAIN", "azurite:10000"), "", "https://azurite:10000/acct", ""},
		{env("AZURE_STORAGE_ACCOUNT", "acct", "AZURE_STORAGE_KEY", key), "cdn=true&domain=cdn.example.com", "https://cdn.example.com", ""},
		{env("AZURE_STORAGE_ACCOUNT", "acct", "AZURE_STORAGE_SAS_TOKEN", "?sv=1&sig=x"), "storage_account=acct", "https://acct.blob.core.windows.net", ""},
		{env("AZURE_STORAGE_ACCOUNT", "acct", "AZURE_STORAGE_SAS_TOKEN", "sv=1&sig=x"), "domain=evil.example.com", "", "SAS token"},
		{env("AZURE_STORAGE_CONNECTION_STRING", "DefaultEndpointsProtocol=https;AccountName=cs;AccountKey="+key+";EndpointSuffix=core.chinacloudapi.cn"), "", "https://cs.blob.core.chinacloudapi.cn", ""},
		{env("AZURE_STORAGE_CONNECTION_STRING", "BlobEndpoint=http://127.0.0.1:9/devstoreaccount1/;SharedAccessSignature=sv=1&sig=y"), "", "http://127.0.0.1:9/devstoreaccount1", ""},
		{env("AZURE_STORAGE_CONNECTION_STRING", "UseDevelopmentStorage=true"), "", "http://127.0.0.1:10000/devstoreaccount1", ""},
		{env("AZURE_STORAGE_CONNECTION_STRING", "AccountName=cs"), "", "", "neither AccountKey"},
		{env(), "", "", "no storage account"},
		{env("AZURE_STORAGE_ACCOUNT", "acct", "AZURE_STORAGE_KEY", key), "region=x", "", "parameter region"},
		{env("AZURE_STORAGE_ACCOUNT", "acct", "AZURE_STORAGE_KEY", key), "protocol=ftp", "", "protocol"},
		{env("AZURE_STORAGE_ACCOUNT", "acct", "AZURE_STORAGE_KEY", "not base64!"), "", "", "base64"},
	} {
		q, _ := url.ParseQuery(c.query)
		b, err := newAzureBucket(Location{Scheme: "azblob", Bucket: "c", Query: q}, fastPolicy, new(Counters), c.env)
		switch {
		case c.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: %v, want an error about %s", c.query, err, c.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", c.query, err)
		case b.base != c.want:
			t.Errorf("%s: service %s, want %s", c.query, b.base, c.want)
		}
	}
}
