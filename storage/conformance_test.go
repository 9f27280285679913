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
		for _, f := range []storage.File{held, heldMeta} {
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
		if _, err := storage.RemoveOrphans(ctx, d, nil, 0, time.Now().Add(time.Minute)); err != nil {
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
