package engine

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/engine/internal/chkstore"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// openBucketSavepoint opens a savepoint at a bucket URL for the test.
func openBucketSavepoint(t *testing.T, location string) *snapshotfmt.Reader {
	t.Helper()
	r, closeAll, err := openCanonical(context.Background(), location)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAll() })
	return r
}

// bucketKeys lists the keys under prefix in bucket.
func bucketKeys(t *testing.T, c *s3.Client, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			keys = append(keys, *o.Key)
		}
	}
	return keys
}

// checkBucketRoot checks what retention promises of a checkpoint root in a
// bucket: every complete checkpoint's files are there, every shared object
// is referenced by one, and no object lies outside a complete checkpoint
// but the root's job name and those of the one in flight when a run died
// (none after a clean end).
func checkBucketRoot(t *testing.T, c *s3.Client, bucket, prefix string, retain int) {
	t.Helper()
	keys := bucketKeys(t, c, bucket, prefix+"/")
	have := map[string]bool{}
	complete := map[string]bool{}
	for _, k := range keys {
		rel := strings.TrimPrefix(k, prefix+"/")
		have[rel] = true
		if dir, rest, _ := strings.Cut(rel, "/"); rest == storage.MetadataName {
			complete[dir] = true
		}
	}
	if len(complete) == 0 || len(complete) > retain {
		t.Fatalf("%d complete checkpoints under %s, want 1 to %d", len(complete), prefix, retain)
	}
	referenced := map[string]bool{}
	b, err := chkdir.OpenBucket(context.Background(), storetestURL(t, bucket, prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for dir := range complete {
		id, _ := chkdir.ParseName(dir)
		m, ok, err := b.ReadManifest(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue
		}
		for _, db := range m.Databases {
			for _, f := range db.Files {
				referenced[f.Path] = true
				if !have[f.Path] {
					t.Errorf("%s lists %s, which is not in the bucket", dir, f.Path)
				}
			}
		}
	}
	for rel := range have {
		dir, _, _ := strings.Cut(rel, "/")
		switch {
		case rel == CheckpointRootJobName:
		case dir == chkdir.SharedDir && !referenced[rel]:
			t.Errorf("shared object %s is referenced by no checkpoint", rel)
		case dir != chkdir.SharedDir && !complete[dir]:
			t.Errorf("%s lies in %s, which is no complete checkpoint", rel, dir)
		}
	}
}

var bucketEndpoint string

func storetestURL(t *testing.T, bucket, prefix string) string {
	t.Helper()
	return storetest.URL(bucketEndpoint, bucket, prefix)
}

// A job checkpoints into a bucket, fails, restarts from its last
// checkpoint there, and later dies for good; a new run restores from the
// bucket's latest checkpoint, past what the dead run left of a checkpoint
// in flight. The output is exactly that of an unbroken run, and so is the
// final savepoint, written to the bucket too; on Pebble the checkpoints
// share their immutable files under shared/ in the bucket.
func TestCheckpointsInBucket(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	bucketEndpoint = srv.Endpoint()
	client := srv.Client(srv.Endpoint())
	src := testSource{splits: 4, n: 20000, keys: 53}
	stop := int64(src.splits * src.n)
	for _, backend := range []BackendKind{Heap, Pebble} {
		t.Run(string(backend), func(t *testing.T) {
			dir := t.TempDir()
			ctx := context.Background()
			var seen atomic.Int64
			cleanOut := filepath.Join(dir, "clean")
			cleanSP := storetestURL(t, "state", string(backend)+"/clean-sp")
			if _, err := Run(ctx, failingJob(src, 2, NewFileSink(cleanOut, formatResult), &seen, -1), RunOptions{
				Backend: backend, StopAfter: stop, SavepointDir: cleanSP,
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := Run(ctx, failingJob(src, 2, NewFileSink(filepath.Join(dir, "again"), formatResult), &seen, -1), RunOptions{
				Backend: backend, StopAfter: stop, SavepointDir: cleanSP,
			}); err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Fatalf("a second run onto the same bucket savepoint: %v, want it refused", err)
			}

			rootPrefix := string(backend) + "/chk"
			root := storetestURL(t, "state", rootPrefix)
			out := filepath.Join(dir, "out")
			// The first run fails twice: once it restarts from its last
			// checkpoint, the second time it has no restarts left and dies.
			seen.Store(0)
			var failures atomic.Int64
			res, err := Run(ctx, failingJob(src, 2, NewFileSink(out, formatResult), &seen, 30000), RunOptions{
				Backend: backend, CheckpointDir: root, CheckpointInterval: 5 * time.Millisecond, MaxRestarts: 1,
				StopAfter: stop, SavepointDir: storetestURL(t, "state", string(backend)+"/never"),
				inject: func(p faultPoint, t *task, cp *checkpoint) error {
					// After the restart, a checkpoint breaks before it
					// publishes, and then the run dies at the next record
					// count's failure.
					if p == faultComplete && seen.Load() > 45000 && failures.Add(1) == 1 {
						seen.Store(29999)
						return errInjected
					}
					return nil
				},
			})
			if err == nil {
				t.Fatal("the run that was to die finished")
			}
			if res.Restarts != 1 || res.LastCheckpoint == "" || !strings.HasPrefix(res.LastCheckpoint, "s3://") {
				t.Fatalf("restarts %d, last checkpoint %q: want one restart from a checkpoint in the bucket", res.Restarts, res.LastCheckpoint)
			}
			latest, err := LatestCheckpoint(root)
			if err != nil {
				t.Fatal(err)
			}
			// A checkpoint may have been published as the run died, before
			// the run recorded it.
			if mustID(t, latest) < mustID(t, res.LastCheckpoint) {
				t.Fatalf("LatestCheckpoint = %s, older than the run's last, %s", latest, res.LastCheckpoint)
			}
			// What a run killed while writing its next checkpoint leaves:
			// data files of that checkpoint, no _metadata.
			next := mustID(t, latest) + 1
			for _, name := range []string{chkdir.Name(next) + "/op001-00000-0123456789abcdef.data", chkdir.Name(next) + "/op001-00001/MANIFEST-000001"} {
				if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String(rootPrefix + "/" + name), Body: bytes.NewReader([]byte("left by a dead run"))}); err != nil {
					t.Fatal(err)
				}
			}
			if again, err := LatestCheckpoint(root); err != nil || again != latest {
				t.Fatalf("LatestCheckpoint with a dead run's leftovers = %s, %v; want %s", again, err, latest)
			}

			finalSP := storetestURL(t, "state", string(backend)+"/final-sp")
			seen.Store(0)
			res2, err := Run(ctx, failingJob(src, 2, NewFileSink(out, formatResult), &seen, -1), RunOptions{
				Backend: backend, RestoreFrom: latest, CheckpointDir: root, CheckpointInterval: 5 * time.Millisecond,
				StopAfter: stop, SavepointDir: finalSP,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res2.Savepoint != finalSP {
				t.Fatalf("savepoint %q, want %q", res2.Savepoint, finalSP)
			}
			clean, got := readParts(t, cleanOut), readParts(t, out)
			if len(clean) == 0 || !slices.Equal(clean, got) {
				t.Fatalf("outputs differ: %d lines without failure, %d across the failures", len(clean), len(got))
			}
			a, b := openBucketSavepoint(t, cleanSP), openBucketSavepoint(t, finalSP)
			if len(sptest.Entries(t, a, "count", countDesc.Spec().Name)) == 0 || len(sptest.Timers(t, a, "count", EventTimeTimers)) == 0 {
				t.Fatal("the savepoint holds no open window: comparing the states would check nothing")
			}
			sptest.EqualKeyedState(t, a, b)
			if backend == Pebble {
				var reused int64
				for _, st := range append(res.CheckpointStats, res2.CheckpointStats...) {
					reused += st.Reused
				}
				if reused == 0 {
					t.Error("no checkpoint referenced a shared file an earlier one uploaded")
				}
			}
			if res2.Checkpoints > 0 {
				checkBucketRoot(t, client, "state", rootPrefix, 2)
			}
			if keys := bucketKeys(t, client, "state", string(backend)+"/never/"); len(keys) != 0 {
				t.Errorf("the dead run left %v at its savepoint target", keys)
			}
		})
	}
}

func mustID(t *testing.T, location string) uint64 {
	t.Helper()
	loc, err := storage.ParseLocation(location)
	if err != nil {
		t.Fatal(err)
	}
	name := path.Base(loc.Prefix)
	if !loc.IsBucket() {
		name = filepath.Base(loc.Path)
	}
	id, ok := chkdir.ParseName(name)
	if !ok {
		t.Fatalf("%s is no checkpoint", location)
	}
	return id
}

// A restore from a checkpoint in a bucket whose shared object (or another
// file its manifest lists) is missing, cut short or damaged fails with
// ErrCorruptCheckpoint naming the object.
func TestRestoreFromDamagedCheckpointInBucket(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	client := srv.Client(srv.Endpoint())
	ctx := context.Background()
	src := testSource{splits: 2, n: 5000, keys: 31}
	damage := map[string]func(key string, b []byte) error{
		"Missing": func(key string, _ []byte) error {
			_, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("state"), Key: aws.String(key)})
			return err
		},
		"Truncated": func(key string, b []byte) error {
			_, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String(key), Body: bytes.NewReader(b[:len(b)-1])})
			return err
		},
		"Corrupt": func(key string, b []byte) error {
			b = bytes.Clone(b)
			b[len(b)/2] ^= 0x40
			_, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String(key), Body: bytes.NewReader(b)})
			return err
		},
	}
	for name, hurt := range damage {
		t.Run(name, func(t *testing.T) {
			prefix := "damaged-" + strings.ToLower(name)
			root := storetest.URL(srv.Endpoint(), "state", prefix)
			var seen atomic.Int64
			if _, err := Run(ctx, failingJob(src, 2, NewCollectSink[windowResult](), &seen, -1), RunOptions{
				Backend: Pebble, CheckpointDir: root, CheckpointInterval: 2 * time.Millisecond,
			}); err != nil {
				t.Fatal(err)
			}
			latest, err := LatestCheckpoint(root)
			if err != nil {
				t.Fatal(err)
			}
			b, err := chkdir.OpenBucket(ctx, root)
			if err != nil {
				t.Fatal(err)
			}
			m, _, err := b.ReadManifest(ctx, mustID(t, latest))
			b.Close()
			if err != nil {
				t.Fatal(err)
			}
			// A shared file where the databases have flushed one, else
			// another file the manifest lists.
			var victim, other chkdir.File
			for _, db := range m.Databases {
				for _, f := range db.Files {
					switch {
					case f.Size == 0:
					case victim.Path == "" && strings.HasPrefix(f.Path, chkdir.SharedDir+"/"):
						victim = f
					case other.Path == "":
						other = f
					}
				}
			}
			if victim.Path == "" {
				victim = other
			}
			if victim.Path == "" {
				t.Fatalf("checkpoint %s lists no file with bytes", latest)
			}
			key := prefix + "/" + victim.Path
			out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("state"), Key: aws.String(key)})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			_, err = buf.ReadFrom(out.Body)
			out.Body.Close()
			if err != nil || int64(buf.Len()) != victim.Size {
				t.Fatalf("reading %s: %d bytes, %v; the checkpoint lists %d", key, buf.Len(), err, victim.Size)
			}
			if err := hurt(key, buf.Bytes()); err != nil {
				t.Fatal(err)
			}
			seen.Store(0)
			_, err = Run(ctx, failingJob(src, 2, NewCollectSink[windowResult](), &seen, -1), RunOptions{Backend: Heap, RestoreFrom: latest})
			if !errors.Is(err, ErrCorruptCheckpoint) || !strings.Contains(err.Error(), "state/"+key) || strings.Contains(err.Error(), "endpoint=") {
				t.Fatalf("restore = %v, want ErrCorruptCheckpoint naming s3://state/%s without the URL's parameters", err, key)
			}
			t.Log(err)
		})
	}
}

// A checkpoint whose _metadata the bucket stored, though its publication
// was reported failed (a lost answer), and whose settling look then meets
// an error, is looked at again before the restart: the restart starts from
// it, not from the one before (which would drop what it holds pending and
// leave it unrestorable), and numbers the next checkpoints after it. The
// output is exactly that of an unbroken run.
func TestRestartAfterAnUndecidedPublication(t *testing.T) {
	// The next request, the look that settles checkpoint 3, is refused.
	res, _ := runRefusedAfterCheckpoint3(t, "")
	if len(res.Restored) < 2 || mustID(t, res.Restored[1]) != 3 {
		t.Errorf("restored %v, want the second attempt from chk-3", res.Restored)
	}
}

// runRefusedAfterCheckpoint3 runs a heap job that checkpoints into a
// bucket through a proxy and fails once checkpoint 3 is published, as if
// its publication failed, with the proxy set to refuse the next request of
// op (of any operation when ""). The run must end well, with the output of
// an unbroken run.
func runRefusedAfterCheckpoint3(t *testing.T, op string) (*Result, *storetest.Proxy) {
	t.Helper()
	srv := storetest.StartWithBucket(t, "state")
	proxy := storetest.NewProxy(t, srv.Endpoint())
	src := testSource{splits: 2, n: 20000, keys: 31}
	stop := int64(src.splits * src.n)
	dir := t.TempDir()
	ctx := context.Background()
	var seen atomic.Int64
	clean := filepath.Join(dir, "clean")
	if _, err := Run(ctx, failingJob(src, 2, NewFileSink(clean, formatResult), &seen, -1), RunOptions{Backend: Heap, StopAfter: stop}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	seen.Store(0)
	var fired atomic.Bool
	res, err := Run(ctx, failingJob(src, 2, NewFileSink(out, formatResult), &seen, -1), RunOptions{
		Backend: Heap, CheckpointDir: storetest.URL(proxy.URL, "state", "chk"), CheckpointInterval: 5 * time.Millisecond,
		MaxRestarts: 3, StopAfter: stop,
		inject: func(p faultPoint, _ *task, cp *checkpoint) error {
			if p == faultPublished && cp.ID == 3 && fired.CompareAndSwap(false, true) {
				proxy.Inject(storetest.Status, op, 1, 403, "AccessDenied", 0)
				return errInjected
			}
			return nil
		},
	})
	if err != nil {
		t.Fatalf("run: %v (restored %v)", err, res.Restored)
	}
	if !fired.Load() {
		t.Fatalf("the run never published checkpoint 3")
	}
	if got, want := readParts(t, out), readParts(t, clean); !slices.Equal(got, want) {
		t.Errorf("output: %d lines, an unbroken run's %d", len(got), len(want))
	}
	return res, proxy
}

// A second run of a job into the checkpoint root of a first, not restored
// from it, numbers its checkpoints after the first run's: retention, which
// keeps the highest numbers, keeps the second run's own, and its restart
// finds the checkpoint it recorded; in a bucket and on disk.
func TestSecondRunIntoTheSameRoot(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	src := testSource{splits: 2, n: 20000, keys: 31}
	stop := int64(src.splits * src.n)
	ctx := context.Background()
	for _, root := range []string{storetest.URL(srv.Endpoint(), "state", "chk"), filepath.Join(t.TempDir(), "chk")} {
		dir := t.TempDir()
		var seen atomic.Int64
		first, err := Run(ctx, failingJob(src, 2, NewFileSink(filepath.Join(dir, "a"), formatResult), &seen, -1), RunOptions{
			Backend: Pebble, CheckpointDir: root, CheckpointInterval: 5 * time.Millisecond, StopAfter: stop})
		if err != nil {
			t.Fatal(err)
		}
		firstID := mustID(t, first.LastCheckpoint)
		seen.Store(0)
		second, err := Run(ctx, failingJob(src, 2, NewFileSink(filepath.Join(dir, "b"), formatResult), &seen, 20000), RunOptions{
			Backend: Pebble, CheckpointDir: root, CheckpointInterval: 5 * time.Millisecond, StopAfter: stop, MaxRestarts: 1})
		if err != nil {
			t.Fatalf("%s: the second run: %v (restored %v)", root, err, second.Restored)
		}
		secondID := mustID(t, second.LastCheckpoint)
		if secondID <= firstID || second.Restarts != 1 {
			t.Errorf("%s: the second run's last checkpoint is %d, the first's %d, after %d restarts; want it higher, after one", root, secondID, firstID, second.Restarts)
		}
		if latest, err := LatestCheckpoint(root); err != nil || mustID(t, latest) != secondID {
			t.Errorf("%s: latest checkpoint %s (%v), want the second run's %d", root, latest, err, secondID)
		}
	}
	bucketEndpoint = srv.Endpoint()
	checkBucketRoot(t, srv.Client(srv.Endpoint()), "state", "chk", 2)
}

// An incremental checkpoint that lost its _incremental.json (a lifecycle
// rule, a cleanup by hand) is not restored as the canonical checkpoint it
// then looks like, whose keyed state is empty: the restore fails with
// ErrCorruptCheckpoint naming the missing file, in a bucket and on disk.
func TestRestoreWithoutTheManifest(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	client := srv.Client(srv.Endpoint())
	src := testSource{splits: 2, n: 5000, keys: 31}
	ctx := context.Background()
	for _, root := range []string{storetest.URL(srv.Endpoint(), "state", "chk"), filepath.Join(t.TempDir(), "chk")} {
		var seen atomic.Int64
		if _, err := Run(ctx, failingJob(src, 2, NewCollectSink[windowResult](), &seen, -1), RunOptions{
			Backend: Pebble, CheckpointDir: root, CheckpointInterval: 2 * time.Millisecond, StopAfter: int64(src.splits * src.n)}); err != nil {
			t.Fatal(err)
		}
		latest, err := LatestCheckpoint(root)
		if err != nil {
			t.Fatal(err)
		}
		if chkstore.InBucket(root) {
			key := "chk/" + chkdir.Name(mustID(t, latest)) + "/" + chkdir.ManifestName
			if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("state"), Key: aws.String(key)}); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Remove(filepath.Join(latest, chkdir.ManifestName)); err != nil {
			t.Fatal(err)
		}
		seen.Store(0)
		_, err = Run(ctx, failingJob(src, 2, NewCollectSink[windowResult](), &seen, -1), RunOptions{Backend: Pebble, RestoreFrom: latest, StopAfter: int64(src.splits * src.n)})
		if !errors.Is(err, ErrCorruptCheckpoint) || !strings.Contains(err.Error(), chkdir.ManifestName) || strings.Contains(err.Error(), "endpoint=") {
			t.Errorf("%s: restore without the manifest: %v, want ErrCorruptCheckpoint naming %s", root, err, chkdir.ManifestName)
		}
	}
}

// A restart whose store refuses to answer the opening of its checkpoint
// (a request refused, as by an outage longer than the client's retries)
// is one failed attempt, not the end of the job: the next restart opens
// the checkpoint, and the output is that of an unbroken run.
func TestRestartOutlivesAStoreThatDidNotAnswer(t *testing.T) {
	// The restart's first read of the checkpoint is refused.
	res, proxy := runRefusedAfterCheckpoint3(t, "GetObject")
	if res.Restarts != 2 || proxy.Pending() != 0 {
		t.Errorf("%d restarts and %d faults left, want 2 (the refused open, then the one that opened) and none", res.Restarts, proxy.Pending())
	}
}
