package storage_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/storage"
)

// Sub is the directory inside another, in a bucket and on disk: it opens
// and lists the names under it, and Subdirs gives those inside it. In a
// bucket it is read as a bucket (a file opens with its first read, in one
// GET and no HEAD), and closing it leaves the directory it came from open.
func TestSub(t *testing.T) {
	ctx := context.Background()
	files := map[string]string{"chk-2/_metadata": "meta", "chk-2/sub/a": "a", "shared/x": "x", "top": "t"}
	local := t.TempDir()
	for name, body := range files {
		p := filepath.Join(local, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := newBucket(t)
	srv.Upload(t, local, "state", "job")
	p := storetest.NewProxy(t, srv.Endpoint())
	bucket := openVia(t, p.URL, "job", fastRetries)
	for _, c := range []struct {
		name   string
		parent storage.Dir
		where  string
	}{
		{"bucket", bucket, "s3://state/job/chk-2"},
		{"disk", storage.LocalDir(local), filepath.Join(local, "chk-2")},
	} {
		d, err := storage.Sub(c.parent, "chk-2")
		if err != nil {
			t.Fatal(err)
		}
		if d.Location() != c.where {
			t.Errorf("%s: Location %q, want %q", c.name, d.Location(), c.where)
		}
		if got := storage.InBucket(d); got != (c.name == "bucket") {
			t.Errorf("%s: InBucket = %v", c.name, got)
		}
		names, err := d.List(ctx)
		if err != nil || !slices.Equal(names, []string{"_metadata", "sub/a"}) {
			t.Errorf("%s: List = %v, %v", c.name, names, err)
		}
		dirs, err := storage.Subdirs(ctx, d)
		if err != nil || !slices.Equal(dirs, []string{"sub"}) {
			t.Errorf("%s: Subdirs = %v, %v", c.name, dirs, err)
		}
		gets, heads := p.Ops("GetObject"), p.Ops("HeadObject")
		f, head, err := storage.OpenHead(ctx, d, "_metadata", 1<<20)
		if err != nil || string(head) != "meta" || f.Size() != 4 {
			t.Fatalf("%s: OpenHead(_metadata) = %q, %v", c.name, head, err)
		}
		if c.name == "bucket" {
			if g, h := p.Ops("GetObject")-gets, p.Ops("HeadObject")-heads; g != 1 || h != 0 {
				t.Errorf("%s: opening with the first read made %d GETs and %d HEADs, want 1 and 0", c.name, g, h)
			}
		}
		if _, err := storage.Sub(d, "../shared"); err == nil {
			t.Errorf("%s: Sub(../shared) climbed out", c.name)
		}
		if c, ok := d.(interface{ Close() error }); ok {
			c.Close()
		}
		if got := readAll(t, c.parent, "shared/x"); string(got) != "x" {
			t.Errorf("%s: the parent reads %q after the sub was closed", c.name, got)
		}
	}
}
