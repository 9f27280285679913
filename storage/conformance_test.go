package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"slices"

	"sync"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/storage"
)

// conformance runs the behaviour every bucket store must show through the
// storage package against one store; loc gives the location of a prefix.
// (The S3 tests elsewhere go further: faults, conditions on the client,
// server-side copies.)
func conformance(t *testing.T, loc func(prefix string) string) {
	ctx := context.Background()
	open := func(t *testing.T, prefix string) storage.DirCloser {
		d, err := storage.OpenDir(ctx, loc(prefix), storage.Options{Retry: fastRetries})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	t.Run("write, publish, read", func(t *testing.T) {
		tg := openTarget(t, loc("a"), false)
		big := randomBytes(20, 3<<20+5)
		names, err := writeSavepoint(t, tg, "meta", map[string][]byte{"data-000": big, "named*": []byte("named")})
		if err != nil {
			t.Fatal(err)
		}
		d := open(t, "a")
		list, _ := d.List(ctx)
		want := []string{storage.MetadataName, "data-000", names["named*"]}
		slices.Sort(want)
		if !slices.Equal(list, want) {
			t.Fatalf("List = %v, want %v", list, want)
		}
		f, err := d.Open(ctx, "data-000")
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 1000)
		if _, err := f.ReadAt(got, 2<<20); err != nil || !bytes.Equal(got, big[2<<20:2<<20+1000]) {
			t.Fatalf("ranged read: %v", err)
		}
		if string(readAll(t, d, names["named*"])) != "named" {
			t.Fatal("content-named file differs")
		}
		if _, err := d.Open(ctx, "missing"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Open of a missing file = %v", err)
		}
		if _, err := storage.OpenTarget(ctx, loc("a"), storage.TargetOptions{}); !errors.Is(err, storage.ErrExists) {
			t.Fatalf("OpenTarget over a savepoint = %v, want ErrExists", err)
		}
	})
	t.Run("first bytes with the open, in one request", func(t *testing.T) {
		big := randomBytes(21, 3<<20+7)
		if _, err := writeSavepoint(t, openTarget(t, loc("k"), false), "meta", map[string][]byte{"big": big, "small": []byte("hello"), "empty": nil}); err != nil {
			t.Fatal(err)
		}
		var c storage.Counters
		d, err := storage.OpenDir(ctx, loc("k"), storage.Options{Retry: fastRetries, Counters: &c})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		for _, tc := range []struct {
			name string
			want []byte
			size int
		}{{"big", big[:12], len(big)}, {"small", []byte("hello"), 5}, {"empty", nil, 0}} {
			reqs := c.Requests.Load()
			p := make([]byte, 12)
			f, n, err := storage.OpenFirst(ctx, d, tc.name, p)
			if err != nil {
				t.Fatalf("OpenFirst(%s): %v", tc.name, err)
			}
			if !bytes.Equal(p[:n], tc.want) || f.Size() != int64(tc.size) {
				t.Errorf("OpenFirst(%s) read %q of a file of %d bytes, want %q of %d", tc.name, p[:n], f.Size(), tc.want, tc.size)
			}
			// An empty object has no first byte to ask for: it is opened
			// as Open does.
			if r := c.Requests.Load() - reqs; r != 1 && tc.size > 0 {
				t.Errorf("OpenFirst(%s) made %d requests, want 1", tc.name, r)
			}
			if tc.size > 12 {
				tail := make([]byte, 100)
				if _, err := f.ReadAt(tail, int64(tc.size-100)); err != nil || !bytes.Equal(tail, big[len(big)-100:]) {
					t.Errorf("reading the end of a file OpenFirst opened: %v", err)
				}
			}
			f.Close()
		}
		if _, _, err := storage.OpenFirst(ctx, d, "missing", make([]byte, 12)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("OpenFirst of a missing file = %v", err)
		}
		// A file opened under a context that has ended reads under another
		// once rebound to it, and not before.
		opening, cancel := context.WithCancel(ctx)
		f, _, err := storage.OpenFirst(opening, d, "big", make([]byte, 1))
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		if _, err := f.ReadAt(make([]byte, 10), 100); !errors.Is(err, context.Canceled) {
			t.Errorf("reading a file whose context ended = %v, want context.Canceled", err)
		}
		got := make([]byte, 10)
		if _, err := storage.WithContext(ctx, f).ReadAt(got, 100); err != nil || !bytes.Equal(got, big[100:110]) {
			t.Errorf("reading it rebound to a live context: %v", err)
		}
		// Preloading the first bytes of a larger file serves them from
		// memory, and the rest with one more request: every byte is read
		// once.
		reqs, read := c.Requests.Load(), c.BytesRead.Load()
		if err := storage.Preload(ctx, d, "big", 1000); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, d, "big"); !bytes.Equal(got, big) {
			t.Fatal("a preloaded file reads other bytes than were written")
		}
		if r, n := c.Requests.Load()-reqs, c.BytesRead.Load()-read; r != 2 || n != int64(len(big)) {
			t.Errorf("preloading and reading %d bytes made %d requests for %d bytes, want 2 for each byte once", len(big), r, n)
		}
		// The open is bound to the version the GET served, not to its size
		// and time alone: a replacement of the same size, at once, fails
		// the reads that follow.
		held, _, err := storage.OpenFirst(ctx, d, storage.MetadataName, make([]byte, 2))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := writeSavepoint(t, openTarget(t, loc("k"), true), "META", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := held.ReadAt(make([]byte, 4), 0); !errors.Is(err, storage.ErrChanged) {
			t.Errorf("reading a file replaced by one of its size after OpenFirst = %v, want ErrChanged", err)
		}
	})
	t.Run("nothing visible before publish, create-only names", func(t *testing.T) {
		tg := openTarget(t, loc("b"), false)
		w, _ := tg.Create(ctx, "data-000")
		writeAll(t, w, []byte("first"))
		if _, err := open(t, "b").Open(ctx, storage.MetadataName); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("_metadata before Publish: %v", err)
		}
		other := openTarget(t, loc("b"), false)
		w2, err := other.Create(ctx, "data-000")
		if err == nil {
			_, err = w2.Write([]byte("second"))
			if err == nil {
				err = w2.Close()
			}
		}
		if !errors.Is(err, storage.ErrConflict) {
			t.Fatalf("a second create of data-000 = %v, want ErrConflict", err)
		}
		if got := string(readAll(t, open(t, "b"), "data-000")); got != "first" {
			t.Fatalf("data-000 = %q after the refused create", got)
		}
		tg.Abort()
		if names, _ := open(t, "b").List(ctx); len(names) != 0 {
			t.Fatalf("after Abort: %v", names)
		}
	})
	t.Run("racing publishes", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		targets := []storage.Target{openTarget(t, loc("c"), false), openTarget(t, loc("c"), false)}
		for i, tg := range targets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = writeSavepoint(t, tg, fmt.Sprint("writer ", i), map[string][]byte{fmt.Sprint("w", i): []byte("x")})
			}()
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("publishes: %v, %v; want exactly one to win", errs[0], errs[1])
		}
		for _, err := range errs {
			if err != nil && !errors.Is(err, storage.ErrConflict) {
				t.Fatalf("the loser's error %v is not ErrConflict", err)
			}
		}
	})
	t.Run("forced replacement", func(t *testing.T) {
		old, err := writeSavepoint(t, openTarget(t, loc("d"), false), "old", map[string][]byte{"gone*": []byte("old only"), "kept*": []byte("both")})
		if err != nil {
			t.Fatal(err)
		}
		reader := open(t, "d")
		held, err := reader.Open(ctx, old["gone*"])
		if err != nil {
			t.Fatal(err)
		}
		heldMeta, _ := reader.Open(ctx, storage.MetadataName)
		heldFirst, _, err := storage.OpenFirst(ctx, reader, storage.MetadataName, make([]byte, 3))
		if err != nil {
			t.Fatal(err)
		}
		// Object times may be kept to the second: the new _metadata must
		// not share the old one's.
		time.Sleep(1100 * time.Millisecond)
		cur, err := writeSavepoint(t, openTarget(t, loc("d"), true), "a longer new metadata", map[string][]byte{"kept*": []byte("both")})
		if err != nil {
			t.Fatal(err)
		}
		list, _ := reader.List(ctx)
		want := []string{storage.MetadataName, cur["kept*"]}
		slices.Sort(want)
		if !slices.Equal(list, want) {
			t.Fatalf("after the forced publish: %v, want %v", list, want)
		}
		for _, f := range []storage.File{held, heldMeta, heldFirst} {
			if _, err := f.ReadAt(make([]byte, 2), 0); !errors.Is(err, storage.ErrChanged) {
				t.Fatalf("reading a replaced or removed file = %v, want ErrChanged", err)
			}
		}
	})
	t.Run("racing forced publishes", func(t *testing.T) {
		if _, err := writeSavepoint(t, openTarget(t, loc("g"), false), "old", map[string][]byte{"old": []byte("o")}); err != nil {
			t.Fatal(err)
		}
		a, b := openTarget(t, loc("g"), true), openTarget(t, loc("g"), true)
		if _, err := writeSavepoint(t, a, "a", map[string][]byte{"a": []byte("a")}); err != nil {
			t.Fatal(err)
		}
		if _, err := writeSavepoint(t, b, "b", map[string][]byte{"b": []byte("b")}); !errors.Is(err, storage.ErrConflict) {
			t.Fatalf("a forced publish over a _metadata replaced meanwhile = %v, want ErrConflict", err)
		}
		if got := string(readAll(t, open(t, "g"), storage.MetadataName)); got != "a" {
			t.Fatalf("_metadata = %q, want the first replacement's", got)
		}
	})
	t.Run("whole file copied on the server", func(t *testing.T) {
		// What a rewrite does with a data file it keeps whole and does not
		// read: the store copies it, and the copy stays with the savepoint
		// that names it.
		src, err := open(t, "a").Open(ctx, "data-000")
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, src.Size())
		if _, err := src.ReadAt(want, 0); err != nil {
			t.Fatal(err)
		}
		const name = "data-000-0123456789abcdef"
		tg := openTarget(t, loc("h"), false)
		if !storage.SameStore(tg, src) {
			t.Fatal("a target in the bucket of its source is not in the same store")
		}
		if err := tg.CopyNamed(ctx, src, name); err != nil {
			t.Fatal(err)
		}
		w, err := tg.Create(ctx, storage.MetadataName)
		if err != nil {
			t.Fatal(err)
		}
		writeAll(t, w, []byte("names "+name))
		if err := tg.Publish(ctx); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, open(t, "h"), name); !bytes.Equal(got, want) {
			t.Fatalf("the copy holds %d bytes other than its source's %d", len(got), len(want))
		}
		// A source replaced since it was opened is not copied: the copy is
		// bound to the version opened. (A forced publish replaces
		// _metadata in place, on every store.)
		if _, err := writeSavepoint(t, openTarget(t, loc("i"), false), "first", nil); err != nil {
			t.Fatal(err)
		}
		old, err := open(t, "i").Open(ctx, storage.MetadataName)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := writeSavepoint(t, openTarget(t, loc("i"), true), "second, longer", nil); err != nil {
			t.Fatal(err)
		}
		if err := openTarget(t, loc("j"), false).CopyNamed(ctx, old, name); !errors.Is(err, storage.ErrChanged) {
			t.Fatalf("a copy of a source replaced since it was opened = %v, want ErrChanged", err)
		}
	})
	t.Run("orphans", func(t *testing.T) {
		tg := openTarget(t, loc("e"), false)
		w, _ := tg.Create(ctx, "left")
		writeAll(t, w, []byte("x"))
		d := open(t, "e")
		orphans, err := storage.Orphans(ctx, d, nil)
		if err != nil || len(orphans) != 1 || orphans[0].Name != "left" {
			t.Fatalf("Orphans = %v, %v", orphans, err)
		}
		if _, err := storage.RemoveOrphans(ctx, d, referencing(), 0, time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if names, _ := d.List(ctx); len(names) != 0 {
			t.Fatalf("left after RemoveOrphans: %v", names)
		}
	})
	t.Run("savepoint", func(t *testing.T) {
		local := sptest.Open(t, makeSavepoint(t, 200))
		if err := copySavepoint(ctx, local, openTarget(t, loc("f"), false), ""); err != nil {
			t.Fatal(err)
		}
		r, err := openBucketSavepoint(t, loc("f"))
		if err != nil {
			t.Fatal(err)
		}
		if n := sameEntries(t, local, r); n < 200 {
			t.Fatalf("%d entries", n)
		}
	})
}

func TestConformanceS3(t *testing.T) {
	srv := newBucket(t)
	conformance(t, func(prefix string) string { return storetest.URL(srv.Endpoint(), "state", "conf/"+prefix) })
}

// TestConformanceGCS runs against fake-gcs-server, in this process, reached
// over HTTP on loopback the way the GCS client reaches an emulator.
func TestConformanceGCS(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	host := fmt.Sprintf("127.0.0.1:%d", port)
	// Reads come as path-style downloads, which the server routes only for
	// its public host.
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Port: uint16(port), PublicHost: host})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "state"})
	t.Setenv("STORAGE_EMULATOR_HOST", host)
	conformance(t, func(prefix string) string { return "gs://state/conf/" + prefix })
}

// TestConformanceAzure runs against Azurite, the Azure Storage emulator.
func TestConformanceAzure(t *testing.T) {
	q := storetest.StartAzurite(t, "state")
	conformance(t, func(prefix string) string { return "azblob://state/conf/" + prefix + "?" + q })
}
