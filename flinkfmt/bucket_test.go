package flinkfmt_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/internal/flinkgen"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

// bucketSavepoint writes the savepoint c generates to a local directory,
// starts a server and uploads it under sp/ of the bucket state, and
// returns the directory, the server and the files' bytes by name.
func bucketSavepoint(t *testing.T, c flinkgen.Config) (string, *storetest.Server, map[string][]byte) {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "sp")
	if _, err := flinkgen.WriteDir(ctx, dir, false, c); err != nil {
		t.Fatal(err)
	}
	srv := storetest.StartWithBucket(t, "state")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Client(srv.Endpoint()).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"),
			Key: aws.String("sp/" + e.Name()), Body: bytes.NewReader(b)}); err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return dir, srv, files
}

// sessionOperator opens the savepoint in d and its SessionFeatures
// operator.
func sessionOperator(t *testing.T, d storage.Dir) (*flinkfmt.Reader, *flinkfmt.Operator) {
	t.Helper()
	r, err := flinkfmt.Open(context.Background(), d, flinkfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	op, err := r.Operator(flinkgen.OperatorUID)
	if err != nil {
		t.Fatal(err)
	}
	return r, op
}

// TestBucketWalkReadsEachByteOnce walks every key group of a savepoint in
// a bucket whose files are larger than a bucket read: the reads that take
// the next key groups along end where a key group starts, so that no key
// group is read in part and then again, and every byte of the files is
// read once, in a few requests; the entries are those on disk.
func TestBucketWalkReadsEachByteOnce(t *testing.T) {
	ctx := context.Background()
	c := flinkgen.SessionsLarge()
	c.Users = 12_000
	dir, srv, files := bucketSavepoint(t, c)
	var data int64
	for name, b := range files {
		if name != flinkfmt.MetadataFile {
			data += int64(len(b))
			if len(b) <= 4<<20 {
				t.Fatalf("%s is %d bytes, not larger than a bucket read", name, len(b))
			}
		}
	}
	var counters storage.Counters
	d, err := storage.OpenDir(ctx, storetest.URL(srv.Endpoint(), "state", "sp"), storage.Options{Counters: &counters})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	count := func(d storage.Dir) (n int, read int64) {
		r, op := sessionOperator(t, d)
		k, err := r.Keyed(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		before := counters.BytesRead.Load()
		it := k.Entries(ctx, -1, keygroup.All(op.MaxParallelism))
		defer it.Close()
		for it.Next() {
			n++
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		return n, counters.BytesRead.Load() - before
	}
	want, _ := count(storage.LocalDir(dir))
	requests := counters.Requests.Load()
	got, read := count(d)
	requests = counters.Requests.Load() - requests
	if got != want || got == 0 {
		t.Errorf("%d entries from the bucket, %d from disk", got, want)
	}
	// Opening read the keyed headers; the walk reads the rest, once.
	if read > data {
		t.Errorf("the walk read %d bytes of files of %d", read, data)
	}
	if limit := int64(2 * len(files) * int(data/(4<<20)+2)); requests > limit {
		t.Errorf("opening and walking made %d requests, more than %d", requests, limit)
	}
	t.Logf("%d entries, files of %d bytes: %d read by the walk, %d requests in all", got, data, read, requests)
}

// TestBucketKeyedHeadersTogether reads the keyed state headers of an
// operator of eight subtasks in a bucket: each subtask's file is opened
// with the read of its header, one GET and no HEAD, and the eight GETs are
// in flight together rather than one after another (the proxy holds them
// until all are in, and gives up after a while when they come one at a
// time). The states are those on disk.
func TestBucketKeyedHeadersTogether(t *testing.T) {
	ctx := context.Background()
	c := flinkgen.SessionsLarge()
	c.Users, c.Parallelism = 400, 8
	dir, srv, _ := bucketSavepoint(t, c)
	p := storetest.NewProxy(t, srv.Endpoint())
	d, err := storage.OpenDir(ctx, storetest.URL(p.URL, "state", "sp"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	states := func(d storage.Dir, inBucket bool) []string {
		r, op := sessionOperator(t, d)
		if inBucket {
			heads, gets := p.Ops("HeadObject"), p.Ops("GetObject")
			together := p.Gather("GetObject", c.Parallelism, 3*time.Second)
			defer func() {
				if !together() {
					t.Errorf("the %d subtasks' headers were not read together", c.Parallelism)
				}
				if h, g := p.Ops("HeadObject")-heads, p.Ops("GetObject")-gets; h != 0 || g != c.Parallelism {
					t.Errorf("reading %d headers made %d HEADs and %d GETs, want none and %d", c.Parallelism, h, g, c.Parallelism)
				}
			}()
		}
		k, err := r.Keyed(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, m := range k.States {
			names = append(names, m.Name)
		}
		return names
	}
	want := states(storage.LocalDir(dir), false)
	if got := states(d, true); !slices.Equal(got, want) || len(got) == 0 {
		t.Errorf("the bucket's operator has states %v, the disk's %v", got, want)
	}
}
