package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/internal/flinkgen"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

// A tiny scale writes a savepoint that Flink's layout reader reads whole,
// with the entries the command reports; the full size is for benchmark
// runs, never for tests.
func TestGenerateAtATinyScale(t *testing.T) {
	// -out need not exist.
	dir := filepath.Join(t.TempDir(), "new", "bench")
	var stderr bytes.Buffer
	if code := run([]string{"-out", dir, "-scale", "0.002", "-compressed"}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	target := filepath.Join(dir, "flink-sessions-large")
	ctx := context.Background()
	r, err := flinkfmt.Open(ctx, storage.LocalDir(target), flinkfmt.Options{})
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
	it := k.Entries(ctx, -1, keygroup.All(op.MaxParallelism))
	n := 0
	for it.Next() {
		n++
	}
	if it.Err() != nil || n < 30000 || !k.Compressed {
		t.Fatalf("%d entries, %v", n, it.Err())
	}
	if want := "2000 users, " + strconv.Itoa(n) + " entries"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q: %s", want, stderr.String())
	}
	if code := run([]string{"-out", dir, "-scale", "0.002"}, &stderr); code != 1 {
		t.Errorf("writing over an existing savepoint: exit %d, want 1", code)
	}
	if code := run([]string{"-out", dir, "-scale", "0"}, &stderr); code != 2 {
		t.Errorf("-scale 0: exit %d, want 2", code)
	}
}
