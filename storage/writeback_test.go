package storage

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/zeebo/xxh3"
)

// A data file of several writeback intervals, written in pieces that
// straddle them, holds exactly its bytes under the name of their XXH3-64.
func TestNamedFileAcrossWriteback(t *testing.T) {
	ctx := context.Background()
	target := filepath.Join(t.TempDir(), "sp")
	tg, err := OpenTarget(ctx, target, TargetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 2*writebackEvery+12345)
	r := rand.NewChaCha8([32]byte{7})
	r.Read(data)
	w, err := tg.CreateNamed(ctx, "op001-00000", ".data")
	if err != nil {
		t.Fatal(err)
	}
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 1<<20+333)
		if _, err := w.Write(rest[:n]); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("op001-00000-%016x.data", xxh3.Hash(data)); w.Name() != want {
		t.Fatalf("named %s, want %s", w.Name(), want)
	}
	m, _ := tg.Create(ctx, MetadataName)
	m.Close()
	if err := tg.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(target, w.Name()))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("the file holds %d bytes that differ from the %d written", len(got), len(data))
	}
}
