package pebblebackend

import (
	"bytes"
	"testing"

	"github.com/stateproc/stateproc/keygroup"
)

// newTestBackend opens a small backend in a temporary directory that is
// closed when the test ends.
func newTestBackend(t testing.TB, maxP int, kgs keygroup.Range) *Backend {
	t.Helper()
	b, err := New(Options{Dir: t.TempDir(), MaxParallelism: maxP, KeyGroups: kgs, CacheSize: 8 << 20, MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// dbKeys returns every key that starts with prefix, in order, as the
// database holds them once the caches are spilled.
func dbKeys(t testing.TB, b *Backend, prefix []byte) [][]byte {
	t.Helper()
	if err := b.spillAll(); err != nil {
		t.Fatal(err)
	}
	if err := b.spillTimers(); err != nil {
		t.Fatal(err)
	}
	it, err := b.wb.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var keys [][]byte
	for ok := it.SeekGE(prefix); ok && bytes.HasPrefix(it.Key(), prefix); ok = it.Next() {
		keys = append(keys, bytes.Clone(it.Key()))
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return keys
}

func setKey(t testing.TB, b *Backend, key string) {
	t.Helper()
	if err := b.SetCurrentKey([]byte(key)); err != nil {
		t.Fatal(err)
	}
}
