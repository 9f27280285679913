package sst_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/rocksdb/internal/fixture"
	. "github.com/stateproc/stateproc/flinkfmt/rocksdb/sst"
	"github.com/stateproc/stateproc/storage"
)

func openPath(tb testing.TB, path string) *Table {
	tb.Helper()
	f, err := storage.LocalDir(filepath.Dir(path)).Open(context.Background(), filepath.Base(path))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	t, err := Open(f, path, Options{})
	if err != nil {
		tb.Fatalf("open %s: %v", path, err)
	}
	return t
}

// tableMagic ends every block-based table (RocksDB's
// kBlockBasedTableMagicNumber).
const tableMagic = 0x88e241b785f4cff7

// isTable tells a table file by its last eight bytes.
func isTable(t *testing.T, path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return len(b) >= 8 && binary.LittleEndian.Uint64(b[len(b)-8:]) == tableMagic
}

// TestFixtureTables opens every table of Flink's native savepoints and
// incremental checkpoints and checks that iterating yields exactly the
// number of entries the properties count, in strictly increasing order.
func TestFixtureTables(t *testing.T) {
	dirs := fixture.Dirs(t)
	var tables, entries int
	checksums := map[ChecksumType]int{}
	for _, dir := range dirs {
		hs := fixture.Handles(t, dir)
		listed := map[string]bool{}
		for _, h := range hs {
			for _, name := range h.Tables() {
				path := h.Files[name]
				listed[path] = true
				tab := openPath(t, path)
				p := tab.Properties()
				n := countEntries(t, tab)
				if want := p.NumEntries - p.NumRangeDeletions; uint64(n) != want {
					t.Errorf("%s: %d entries, properties say %d", path, n, want)
				}
				if p.ColumnFamilyName == "" || p.Comparator != BytewiseComparator {
					t.Errorf("%s: column family %q, comparator %q", path, p.ColumnFamilyName, p.Comparator)
				}
				if tab.Footer().FormatVersion != 5 {
					t.Errorf("%s: format version %d", path, tab.Footer().FormatVersion)
				}
				checksums[tab.Footer().Checksum]++
				t.Logf("%s %s: column family %q (id %d), %d entries", filepath.Base(dir), name, p.ColumnFamilyName, p.ColumnFamilyID, n)
				tables++
				entries += n
			}
		}
		// Every table in the directory belongs to some handle.
		files, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range files {
			path := filepath.Join(dir, e.Name())
			if isTable(t, path) && !listed[path] {
				t.Errorf("%s: table not listed by any handle", path)
			}
		}
	}
	t.Logf("%d directories, %d tables, %d entries, checksums %v", len(dirs), tables, entries, checksums)
	if tables < 900 || checksums[ChecksumCRC32c] == 0 || checksums[ChecksumXXH3] == 0 {
		t.Errorf("read %d tables with checksums %v; the fixtures hold 909, both CRC32c and XXH3", tables, checksums)
	}
}

// countEntries iterates a table, checking the order with a comparator of
// its own, and returns the number of entries.
func countEntries(t *testing.T, tab *Table) int {
	it := tab.NewIter()
	defer it.Close()
	var prev []byte
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		enc := binary.LittleEndian.AppendUint64(bytes.Clone(k.UserKey), k.Seq<<8|uint64(k.Kind))
		if prev != nil && !internalLess(prev, enc) {
			t.Fatalf("%s: key %x after %x", tab.Name(), enc, prev)
		}
		prev = enc
		n++
	}
	if err := it.Err(); err != nil {
		t.Fatalf("%s: %v", tab.Name(), err)
	}
	return n
}

// internalLess orders encoded internal keys: user key ascending, sequence
// number and kind descending.
func internalLess(a, b []byte) bool {
	ua, ub := a[:len(a)-8], b[:len(b)-8]
	if c := bytes.Compare(ua, ub); c != 0 {
		return c < 0
	}
	return binary.LittleEndian.Uint64(a[len(a)-8:]) > binary.LittleEndian.Uint64(b[len(b)-8:])
}
