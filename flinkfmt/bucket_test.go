package flinkfmt_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/internal/flinkgen"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

// TestBucketWalkReadsEachByteOnce walks every key group of a savepoint in
// a bucket whose files are larger than a bucket read: the reads that take
// the next key groups along end where a key group starts, so that no key
// group is read in part and then again, and every byte of the files is
// read once, in a few requests; the entries are those on disk.
func TestBucketWalkReadsEachByteOnce(t *testing.T) {
	ctx := context.Background()
	c := flinkgen.SessionsLarge()
	c.Users = 12_000
	dir := filepath.Join(t.TempDir(), "sp")
	if _, err := flinkgen.WriteDir(ctx, dir, false, c); err != nil {
		t.Fatal(err)
	}
	srv := storetest.Start(t)
	srv.Env(t)
	srv.Bucket(t, "state")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var data int64
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() != flinkfmt.MetadataFile {
			data += int64(len(b))
			if len(b) <= 4<<20 {
				t.Fatalf("%s is %d bytes, not larger than a bucket read", e.Name(), len(b))
			}
		}
		if _, err := srv.Client(srv.Endpoint()).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"),
			Key: aws.String("sp/" + e.Name()), Body: bytes.NewReader(b)}); err != nil {
			t.Fatal(err)
		}
	}
	var counters storage.Counters
	d, err := storage.OpenDir(ctx, storetest.URL(srv.Endpoint(), "state", "sp"), storage.Options{Counters: &counters})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	count := func(d storage.Dir) (n int, read int64) {
		r, err := flinkfmt.Open(ctx, d, flinkfmt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		op, err := r.Operator(flinkgen.OperatorUID)
		if err != nil {
			t.Fatal(err)
		}
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
	if limit := int64(2 * len(entries) * int(data/(4<<20)+2)); requests > limit {
		t.Errorf("opening and walking made %d requests, more than %d", requests, limit)
	}
	t.Logf("%d entries, files of %d bytes: %d read by the walk, %d requests in all", got, data, read, requests)
}
