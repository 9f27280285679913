package chkstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// testTerm is the term of the tests' leases: renewed every 200 ms.
const testTerm = 1200 * time.Millisecond

// A run (A) whose lease on the root passed to another run (B) must delete
// nothing under the root any more. Here A has written a file of its
// checkpoint 1 (a native database's small file, create-only, as
// SnapshotNative does) and then loses its lease; B takes the root over,
// numbers its checkpoint 1 too (A's was never complete), removes A's
// leftovers and writes its own file of the same name. A's Publish is then
// refused for want of the hold, and its discard must delete nothing: the
// keys A created are B's now, and B's checkpoint must keep its file.
func TestRunThatLostItsHoldDeletesNothing(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	c := srv.Client(srv.Endpoint())
	root := storetest.URL(srv.Endpoint(), "state", "chk")
	ctx := context.Background()

	const name = "db-0-0/OPTIONS-000001"
	key := path.Join(chkdir.Name(1), name)

	// Run A holds the root and writes a file of its checkpoint 1.
	holdA, err := HoldRoot(ctx, root, testTerm)
	if err != nil {
		t.Fatal(err)
	}
	sA, cpA := beginCheckpoint(t, ctx, root, holdA)
	idA := cpA.id
	addNative(t, ctx, cpA, "A's", name)

	// A's lease is taken from it (a pause or partition longer than the
	// term; here the lease object is written over, as in
	// TestRunThatLosesItsRoot): A learns it at its next renewal.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String("chk/" + HoldName),
		Body: bytes.NewReader([]byte(`{"holder":"gone:1","token":"0123456789abcdef","term_ms":1200}`))}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		_, cancel, err := holdA.under(ctx)
		if err != nil {
			break
		}
		cancel()
		if time.Now().After(deadline) {
			t.Fatal("A still holds the root")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Run B takes the root over once that lease lapses, and begins its
	// checkpoint 1, writing the file of the same name.
	holdB, err := HoldRoot(ctx, root, testTerm)
	if err != nil {
		t.Fatalf("B's hold: %v", err)
	}
	defer holdB.Release(ctx)
	sB, cpB := beginCheckpoint(t, ctx, root, holdB)
	idB := cpB.id
	if idB != idA {
		t.Fatalf("B numbers its checkpoint %d, A's was %d: the scenario needs them equal", idB, idA)
	}
	addNative(t, ctx, cpB, "B's", name)

	// A comes back and tries to publish: refused, as it should be ...
	if err := sA.Publish(ctx, cpA); !errors.Is(err, ErrRootHeld) {
		t.Fatalf("A's Publish without its hold: %v, want ErrRootHeld", err)
	}
	// ... but it must not have deleted anything under B's root.
	if _, ok := srv.Objects(t, "state", "chk")[key]; !ok {
		t.Errorf("A, which no longer holds the root, deleted %s, which B wrote under its hold: objects now %v", key, keysOf(srv.Objects(t, "state", "chk")))
	}
	if err := sB.Publish(ctx, cpB); err != nil {
		t.Fatalf("B's Publish: %v", err)
	}
	// B's checkpoint 1 is complete, and its manifest names the file.
	b, err := chkdir.OpenBucket(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	m, ok, err := b.ReadManifest(ctx, idB)
	if err != nil || !ok {
		t.Fatalf("B's manifest: %v %v", ok, err)
	}
	for _, db := range m.Databases {
		for _, f := range db.Files {
			if _, ok := srv.Objects(t, "state", "chk")[f.Path]; !ok {
				t.Errorf("B's complete checkpoint %d references %s, which is gone", idB, f.Path)
			}
		}
	}
}

// beginCheckpoint begins the next checkpoint under root, held by hold, in
// a store of its own.
func beginCheckpoint(t *testing.T, ctx context.Context, root string, hold *RootHold) (*Store, *Pending) {
	t.Helper()
	s := NewStore(root, hold, t.TempDir(), snapshotfmt.CodecNone)
	t.Cleanup(func() { s.Close() })
	id, err := s.NextID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := s.Begin(ctx, id, chkdir.Path(root, id), &savepoint.Metadata{ID: id}, false, true)
	if err != nil {
		t.Fatal(err)
	}
	return s, cp
}

// addNative writes content as the small file name of a native database of cp,
// and lists the database in cp, as SnapshotNative does.
func addNative(t *testing.T, ctx context.Context, cp *Pending, content, name string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), path.Base(name))
	if err := os.WriteFile(src, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	size, sum, err := copyToStaging(ctx, cp.staging, src, name)
	if err != nil {
		t.Fatal(err)
	}
	cp.native = append(cp.native, chkdir.DB{Operator: "op", Subtask: 0, DB: "db",
		Files: []chkdir.File{{Name: path.Base(name), Path: path.Join(chkdir.Name(cp.id), name), Size: size, CRC32C: sum}}})
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Retention under a healthy hold: its lease is renewed every term/6 all
// along, and nobody else wants the root. Each delete of Retain takes a
// deadline of its own, so that a retention longer than half a term (here
// 12 deletes of 100 ms against a 600 ms budget) succeeds; under one
// deadline taken at its start it failed, although the hold was never in
// doubt.
func TestLongRetentionUnderAHealthyHold(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	c := srv.Client(srv.Endpoint())
	ctx := context.Background()

	// A checkpoint 1 of 12 files and a checkpoint 2, laid out by hand.
	put := func(key string) {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String(key), Body: bytes.NewReader([]byte("x"))}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 11 {
		put(fmt.Sprintf("chk/chk-1/f%02d", i))
	}
	put("chk/chk-1/_metadata")
	put("chk/chk-2/f00")
	put("chk/chk-2/_metadata")

	// Every DELETE takes 100 ms to be answered.
	target, _ := url.Parse(srv.Endpoint())
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			time.Sleep(100 * time.Millisecond)
		}
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	root := storetest.URL(proxy.URL, "state", "chk")

	hold, err := HoldRoot(ctx, root, testTerm)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Release(ctx)
	s := NewStore(root, hold, t.TempDir(), snapshotfmt.CodecNone)
	defer s.Close()
	if _, err := s.NextID(ctx); err != nil { // opens the bucket root
		t.Fatal(err)
	}
	start := time.Now()
	err = s.Retain(ctx, 1)
	t.Logf("Retain after %v: %v", time.Since(start).Round(time.Millisecond), err)
	_, cancel, herr := hold.under(ctx)
	if herr != nil {
		t.Fatalf("the hold itself was lost: %v", herr)
	}
	cancel()
	if err != nil {
		t.Errorf("Retain under a hold that was renewed all along: %v", err)
	}
}

// Run A's checkpoint 1 fails while A still holds the root (a subtask
// failed, say), and the coordinator Discards it, deleting the objects A
// created one after another. A's store is slow now (every request waits
// 800 ms) and its renewals fail: the hold's deadline (last renewal +
// term/2) passes after A's first delete, and a term and a second after A's
// last renewal, run B takes the root over, numbers its checkpoint 1 too
// and writes its files, of the same names. No delete of A's may be sent
// after its hold's deadline: sent on a context of their own (a minute),
// they removed B's files, and B's checkpoint 1, once published, did not
// restore.
func TestDiscardDeletesNothingPastTheHold(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	p := storetest.NewProxy(t, srv.Endpoint())
	rootA := storetest.URL(p.URL, "state", "chk")
	rootB := storetest.URL(srv.Endpoint(), "state", "chk")
	ctx := context.Background()

	const files = 10
	name := func(i int) string { return fmt.Sprintf("db-0-0/%06d.sst", i) }

	holdA, err := HoldRoot(ctx, rootA, testTerm)
	if err != nil {
		t.Fatal(err)
	}
	defer holdA.Release(ctx)
	sA, cpA := beginCheckpoint(t, ctx, rootA, holdA)
	idA := cpA.id
	for i := range files {
		addNative(t, ctx, cpA, "A's", name(i))
	}

	// A's store turns slow and its renewals fail; the checkpoint fails
	// just after a renewal, while A holds the root, and is discarded.
	p.InjectOn(storetest.Status, "PutObject", "/chk/"+HoldName, 1<<20, 503, "SlowDown")
	p.SetLatency(800 * time.Millisecond)
	if err := holdA.Check(ctx); err != nil {
		t.Fatalf("A's hold before the discard: %v", err)
	}
	discarded := make(chan struct{})
	go func() {
		sA.Discard(cpA)
		close(discarded)
	}()

	// B takes the root once A's lease looks dead and writes its checkpoint
	// 1, files of the same names.
	holdB, err := HoldRoot(ctx, rootB, testTerm)
	if err != nil {
		t.Fatalf("B's hold: %v", err)
	}
	defer holdB.Release(ctx)
	if err := holdA.Check(ctx); err == nil {
		t.Fatal("A still holds the root after B took it: the scenario needs A's hold gone")
	}
	sB, cpB := beginCheckpoint(t, ctx, rootB, holdB)
	idB := cpB.id
	if idB != idA {
		t.Fatalf("B numbers its checkpoint %d, A's was %d: the scenario needs them equal", idB, idA)
	}
	for i := range files {
		addNative(t, ctx, cpB, "B's", name(i))
	}
	wroteB := time.Now()

	select {
	case <-discarded:
	case <-time.After(time.Minute):
		t.Fatal("A's Discard does not return")
	}
	t.Logf("A's Discard returned %v after B wrote its files", time.Since(wroteB).Round(time.Millisecond))
	objs := srv.Objects(t, "state", "chk")
	var gone []string
	for i := range files {
		if _, ok := objs[path.Join(chkdir.Name(idB), name(i))]; !ok {
			gone = append(gone, name(i))
		}
	}
	if len(gone) > 0 {
		t.Errorf("A's Abort, sent after its hold's deadline, deleted %d of the files B wrote under its hold: %v", len(gone), gone)
	}
	if err := sB.Publish(ctx, cpB); err != nil {
		t.Fatalf("B's Publish: %v", err)
	}
}
