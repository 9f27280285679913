package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/storage"
)

func openTarget(t *testing.T, loc string, force bool) storage.Target {
	t.Helper()
	tg, err := storage.OpenTarget(context.Background(), loc, storage.TargetOptions{Force: force, Options: storage.Options{Retry: fastRetries}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	return tg
}

// TestComposeCopiesOnTheServerWithinThePartRule composes a file from
// written bytes and ranges of a 20 MiB object, through the proxy that
// refuses parts under 5 MiB but the last. Long ranges must be copied on the
// server, short ones go through the client, and the bytes must be right.
func TestComposeCopiesOnTheServerWithinThePartRule(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	src := randomBytes(10, 20<<20)
	putObject(t, srv, "in/data-000", src)
	p := storetest.NewProxy(t, srv.Endpoint())
	in := openVia(t, p.URL, "in", fastRetries)
	f, err := in.Open(ctx, "data-000")
	if err != nil {
		t.Fatal(err)
	}
	tg := openTarget(t, storetest.URL(p.URL, "state", "out"), false)
	k, err := tg.Compose(ctx, "data-000")
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	write := func(b []byte) {
		if _, err := k.Write(b); err != nil {
			t.Fatal(err)
		}
		want = append(want, b...)
	}
	copyRange := func(off, n int64) {
		if err := k.CopyRange(ctx, f, off, n); err != nil {
			t.Fatal(err)
		}
		want = append(want, src[off:off+n]...)
	}
	write([]byte("a preamble of a few bytes"))
	copyRange(0, 6<<20)        // the preamble is topped up from it; too little is left: through the client
	copyRange(7<<20, 1<<20)    // short, and not last: through the client
	write([]byte("new block")) //
	copyRange(8<<20, 12<<20)   // topped up to 5 MiB, the rest copied on the server
	copyRange(1, 1000)         // short but last: copied on the server as the last part
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	out := openVia(t, srv.Endpoint(), "out", storage.RetryPolicy{})
	if !bytes.Equal(readAll(t, out, "data-000"), want) {
		t.Fatal("the composed file holds different bytes")
	}
	c := storage.CountersOf(tg)
	if n := p.Ops("UploadPartCopy"); n != 2 {
		t.Errorf("%d part copies on the server, want 2", n)
	}
	if got, min := c.BytesCopied.Load(), int64(7<<20); got < min {
		t.Errorf("%d bytes copied on the server, want at least %d", got, min)
	}
	if int64(len(want)) != c.BytesCopied.Load()+p.BodyBytes() {
		t.Errorf("%d bytes in the file, %d copied on the server and %d sent by the client", len(want), c.BytesCopied.Load(), p.BodyBytes())
	}
	// A composition that never fills a part is one PUT; over an existing
	// name it is refused.
	small, err := tg.Compose(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	small.Write([]byte("x"))
	small.CopyRange(ctx, f, 5, 10)
	if err := small.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, out, "small"); !bytes.Equal(got, append([]byte("x"), src[5:15]...)) {
		t.Fatalf("small composition = %q", got)
	}
	again, _ := tg.Compose(ctx, "data-000")
	again.Write([]byte("other"))
	if err := again.Close(); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("composing over an existing file = %v, want ErrConflict", err)
	}
}

// TestCopyOnTheServer copies a whole file between two prefixes of a bucket
// on the server, and from a local directory through the client.
func TestCopyOnTheServer(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	src := randomBytes(11, 3<<20)
	putObject(t, srv, "in/data-000", src)
	p := storetest.NewProxy(t, srv.Endpoint())
	in := openVia(t, p.URL, "in", fastRetries)
	tg := openTarget(t, storetest.URL(p.URL, "state", "out"), false)
	if err := tg.Copy(ctx, in, "data-000", "data-000"); err != nil {
		t.Fatal(err)
	}
	// Create-only, so a one-part upload copied on the server and completed
	// with If-None-Match.
	if p.Ops("UploadPartCopy") != 1 || p.BodyBytes() != 0 {
		t.Fatalf("%d part copies, %d bytes through the client; want 1 and 0", p.Ops("UploadPartCopy"), p.BodyBytes())
	}
	local := t.TempDir()
	writeLocal(t, filepath.Join(local, "data-001"), src[:1000])
	if err := tg.Copy(ctx, storage.LocalDir(local), "data-001", "data-001"); err != nil {
		t.Fatal(err)
	}
	if p.BodyBytes() != 1000 {
		t.Fatalf("a copy from a local directory sent %d bytes, want 1000", p.BodyBytes())
	}
	if err := tg.Copy(ctx, in, "data-000", "data-001"); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("a copy over an existing file = %v, want ErrConflict", err)
	}
	out := openVia(t, srv.Endpoint(), "out", storage.RetryPolicy{})
	if !bytes.Equal(readAll(t, out, "data-000"), src) || !bytes.Equal(readAll(t, out, "data-001"), src[:1000]) {
		t.Fatal("copies hold different bytes")
	}
}

// writeSavepoint writes files (name → content) and _metadata into tg and
// publishes; content-named files are given with a name ending in "*".
func writeSavepoint(t *testing.T, tg storage.Target, meta string, files map[string][]byte) (map[string]string, error) {
	t.Helper()
	ctx := context.Background()
	names := map[string]string{}
	for _, name := range slices.Sorted(mapsKeys(files)) {
		b := files[name]
		if stem, ok := cutSuffix(name, "*"); ok {
			w, err := tg.CreateNamed(ctx, stem, "")
			if err != nil {
				return nil, err
			}
			w.Write(b)
			if err := w.Close(); err != nil {
				return nil, err
			}
			names[name] = w.Name()
			continue
		}
		w, err := tg.Create(ctx, name)
		if err != nil {
			return nil, err
		}
		w.Write(b)
		if err := w.Close(); err != nil {
			return nil, err
		}
		names[name] = name
	}
	w, _ := tg.Create(ctx, storage.MetadataName)
	w.Write([]byte(meta))
	w.Close()
	return names, tg.Publish(ctx)
}

// TestConcurrentWritersOneWins lets two writers race into one target, many
// times: exactly one publishes, the other is refused with ErrConflict, and
// what is visible is the winner's savepoint, whole.
func TestConcurrentWritersOneWins(t *testing.T) {
	srv := newBucket(t)
	for round := range 8 {
		force := round%2 == 1
		prefix := fmt.Sprintf("race-%d", round)
		loc := storetest.URL(srv.Endpoint(), "state", prefix)
		if force {
			if _, err := writeSavepoint(t, openTarget(t, loc, false), "old", map[string][]byte{"old-data": []byte("old")}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		// Both open before either writes, as two runs started together.
		targets := []storage.Target{openTarget(t, loc, force), openTarget(t, loc, force)}
		for w, tg := range targets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				data := map[string][]byte{
					fmt.Sprintf("w%d-data", w): randomBytes(uint64(100*round+w), 64<<10),
					"shared*":                  []byte("the same bytes from both writers"),
				}
				if round%4 < 2 {
					// Both also want the same exact name.
					data["data-000"] = []byte(fmt.Sprint("writer ", w))
				}
				_, errs[w] = writeSavepoint(t, tg, fmt.Sprint("meta of writer ", w), data)
				if errs[w] != nil {
					tg.Abort()
				}
			}()
		}
		wg.Wait()
		winner := -1
		for w, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: both writers published", round)
			case err == nil:
				winner = w
			case !errors.Is(err, storage.ErrConflict):
				t.Fatalf("round %d: writer %d failed with %v, want ErrConflict", round, w, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer published: %v", round, errs)
		}
		d := openVia(t, srv.Endpoint(), prefix, storage.RetryPolicy{})
		if got := string(readAll(t, d, storage.MetadataName)); got != fmt.Sprint("meta of writer ", winner) {
			t.Fatalf("round %d: _metadata %q, winner %d", round, got, winner)
		}
		if got := readAll(t, d, fmt.Sprintf("w%d-data", winner)); !bytes.Equal(got, randomBytes(uint64(100*round+winner), 64<<10)) {
			t.Fatalf("round %d: the winner's data file is not whole", round)
		}
		if round%4 < 2 {
			if got := string(readAll(t, d, "data-000")); got != fmt.Sprint("writer ", winner) {
				t.Fatalf("round %d: data-000 holds %q, the winner is %d", round, got, winner)
			}
		}
		if _, err := d.Open(context.Background(), fmt.Sprintf("w%d-data", 1-winner)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("round %d: the loser's own file is still there: %v", round, err)
		}
	}
}

// TestForceReplacesAndRemovesTheOldFiles replaces a savepoint: the new
// _metadata lands in one PUT, the old data files that the new one does not
// use are deleted, and a reader still holding the old ones gets ErrChanged,
// never bytes of the new savepoint. Objects under a deeper prefix (another
// savepoint's) are not the replaced savepoint's, and stay.
func TestForceReplacesAndRemovesTheOldFiles(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	loc := storetest.URL(srv.Endpoint(), "state", "sp")
	oldNames, err := writeSavepoint(t, openTarget(t, loc, false), "old meta", map[string][]byte{
		"only-old*": []byte("old bytes"), "kept*": []byte("bytes in both"), "old-exact": []byte("exact")})
	if err != nil {
		t.Fatal(err)
	}
	reader := openVia(t, srv.Endpoint(), "sp", fastRetries)
	oldMeta, err := reader.Open(ctx, storage.MetadataName)
	if err != nil {
		t.Fatal(err)
	}
	oldData, err := reader.Open(ctx, oldNames["only-old*"])
	if err != nil {
		t.Fatal(err)
	}
	putObject(t, srv, "sp/nested/sp-2/"+storage.MetadataName, []byte("another savepoint"))
	putObject(t, srv, "sp/nested/sp-2/data", []byte("its data"))
	newNames, err := writeSavepoint(t, openTarget(t, loc, true), "new meta", map[string][]byte{
		"kept*": []byte("bytes in both"), "only-new*": []byte("new bytes")})
	if err != nil {
		t.Fatal(err)
	}
	if newNames["kept*"] != oldNames["kept*"] {
		t.Fatalf("the same bytes got two names: %s, %s", oldNames["kept*"], newNames["kept*"])
	}
	names, _ := reader.List(ctx)
	names = slices.DeleteFunc(names, func(n string) bool { return strings.HasPrefix(n, "nested/") })
	want := []string{storage.MetadataName, newNames["kept*"], newNames["only-new*"]}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("after the forced publish: %v, want %v", names, want)
	}
	for _, f := range []storage.File{oldMeta, oldData} {
		if _, err := f.ReadAt(make([]byte, 3), 0); !errors.Is(err, storage.ErrChanged) {
			t.Fatalf("reading an old file after the replacement = %v, want ErrChanged", err)
		}
	}
	if got := string(readAll(t, reader, storage.MetadataName)); got != "new meta" {
		t.Fatalf("_metadata = %q", got)
	}
	if nested := srv.Objects(t, "state", "sp/nested/sp-2"); len(nested) != 2 {
		t.Fatalf("the savepoint under a deeper prefix lost objects to the replacement: %d left", len(nested))
	}
}

// TestOrphansOfADeadRun leaves data files without _metadata, as a run
// that died would, and finds and removes them.
func TestOrphansOfADeadRun(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	loc := storetest.URL(srv.Endpoint(), "state", "sp")
	tg := openTarget(t, loc, false)
	w, _ := tg.Create(ctx, "data-000")
	writeAll(t, w, []byte("left behind"))
	nw, _ := tg.CreateNamed(ctx, "data", "")
	writeAll(t, nw, []byte("left behind too"))
	// A temporary upload of a dead run, as CreateNamed makes them.
	putObject(t, srv, "sp/"+storage.TempPrefix+"0123456789abcdef", []byte("partial"))
	d := openVia(t, srv.Endpoint(), "sp", storage.RetryPolicy{})
	orphans, err := storage.Orphans(ctx, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range orphans {
		names = append(names, o.Name)
	}
	want := []string{storage.TempPrefix + "0123456789abcdef", "data-000", nw.Name()}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("Orphans = %v, want %v", names, want)
	}
	if removed, err := storage.RemoveOrphans(ctx, d, referencing(), time.Hour, time.Now()); err != nil || len(removed) != 0 {
		t.Fatalf("RemoveOrphans of fresh files = %v, %v; want none removed", removed, err)
	}
	removed, err := storage.RemoveOrphans(ctx, d, referencing("data-000"), time.Hour, time.Now().Add(2*time.Hour))
	if err != nil || len(removed) != 2 {
		t.Fatalf("RemoveOrphans = %v, %v; want the two unreferenced files", removed, err)
	}
	if names, _ := d.List(ctx); !slices.Equal(names, []string{"data-000"}) {
		t.Fatalf("left: %v", names)
	}
}

// TestNamedCopiesAndCompositions writes content-named files the caller has
// named: a whole object is one CopyObject, bound to the version read; a
// name that exists is replaced, not refused; and a forced publish keeps
// the named files while it removes the replaced savepoint's others.
func TestNamedCopiesAndCompositions(t *testing.T) {
	ctx := context.Background()
	srv := newBucket(t)
	src := randomBytes(12, 7<<20)
	putObject(t, srv, "in/data-000", src)
	p := storetest.NewProxy(t, srv.Endpoint())
	in := openVia(t, p.URL, "in", fastRetries)
	f, err := in.Open(ctx, "data-000")
	if err != nil {
		t.Fatal(err)
	}
	loc := storetest.URL(p.URL, "state", "out")
	first := openTarget(t, loc, false)
	if err := first.CopyNamed(ctx, f, "copied"); err != nil {
		t.Fatal(err)
	}
	k, err := first.ComposeNamed(ctx, "whole")
	if err != nil {
		t.Fatal(err)
	}
	// The whole of one object, and nothing else: one CopyObject.
	if err := k.CopyRange(ctx, f, 0, f.Size()); err != nil {
		t.Fatal(err)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if n, m := p.Ops("CopyObject"), p.Ops("UploadPartCopy"); n != 2 || m != 0 {
		t.Errorf("%d CopyObject and %d UploadPartCopy requests, want 2 and 0", n, m)
	}
	w, _ := first.Create(ctx, "old-only")
	w.Write([]byte("a file only the first savepoint has"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	meta, _ := first.Create(ctx, storage.MetadataName)
	meta.Write([]byte("first"))
	meta.Close()
	if err := first.Publish(ctx); err != nil {
		t.Fatal(err)
	}

	// A forced replacement writes the same names again: replaced, since
	// they hold the same bytes, and kept by the publish.
	second := openTarget(t, loc, true)
	if err := second.CopyNamed(ctx, f, "copied"); err != nil {
		t.Fatalf("a named copy over an existing name: %v", err)
	}
	k, _ = second.ComposeNamed(ctx, "whole")
	k.CopyRange(ctx, f, 0, 6<<20)
	k.CopyRange(ctx, f, 6<<20, f.Size()-6<<20)
	if err := k.Close(); err != nil {
		t.Fatalf("a named composition over an existing name: %v", err)
	}
	meta, _ = second.Create(ctx, storage.MetadataName)
	meta.Write([]byte("second"))
	meta.Close()
	if err := second.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	out := openVia(t, srv.Endpoint(), "out", storage.RetryPolicy{})
	names, err := out.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"_metadata", "copied", "whole"}; !slices.Equal(names, want) {
		t.Errorf("after the forced publish: %v, want %v", names, want)
	}
	for _, name := range []string{"copied", "whole"} {
		if !bytes.Equal(readAll(t, out, name), src) {
			t.Errorf("%s holds other bytes than its source", name)
		}
	}

	// A source replaced after it was read is not copied.
	putObject(t, srv, "in/data-000", randomBytes(13, 1<<20))
	third := openTarget(t, storetest.URL(p.URL, "state", "out3"), false)
	if err := third.CopyNamed(ctx, f, "copied"); !errors.Is(err, storage.ErrChanged) {
		t.Errorf("copying a replaced source = %v, want ErrChanged", err)
	}
}
