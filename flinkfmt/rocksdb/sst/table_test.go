package sst_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/internal/sstbuild"
	"github.com/stateproc/stateproc/flinkfmt/rocksdb/sst"
)

// memFile is a storage.File over bytes.
type memFile struct{ *bytes.Reader }

func (memFile) Close() error { return nil }

func newFile(b []byte) memFile { return memFile{bytes.NewReader(b)} }

func open(t testing.TB, b []byte) *sst.Table {
	t.Helper()
	tab, err := sst.Open(newFile(b), "test.sst", sst.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// randomEntries makes n entries over a small key space, with several
// versions and kinds per user key, sorted in internal-key order.
func randomEntries(r *rand.Rand, n int) []sstbuild.Entry {
	kinds := []uint8{sstbuild.Set, sstbuild.Set, sstbuild.Merge, sstbuild.Delete, sstbuild.SingleDelete}
	seen := map[string]bool{}
	var es []sstbuild.Entry
	for len(es) < n {
		// Keys share prefixes like Flink's: key group, then key bytes.
		k := []byte{byte(r.IntN(4)), 0, 0, byte(r.IntN(64))}
		if r.IntN(3) == 0 {
			k = append(k, bytes.Repeat([]byte{'x'}, r.IntN(20))...)
		}
		e := sstbuild.Entry{UserKey: k, Seq: uint64(r.IntN(1 << 20)), Kind: kinds[r.IntN(len(kinds))]}
		id := fmt.Sprintf("%x/%d", k, e.Seq)
		if seen[id] {
			continue
		}
		seen[id] = true
		if e.Kind == sstbuild.Set || e.Kind == sstbuild.Merge {
			e.Value = bytes.Repeat([]byte{byte(r.IntN(256))}, r.IntN(40))
		}
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b sstbuild.Entry) int {
		if c := bytes.Compare(a.UserKey, b.UserKey); c != 0 {
			return c
		}
		return -cmpU64(a.Seq, b.Seq)
	})
	return es
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// layouts are the table variants the reader must agree on: both checksum
// types, Snappy or not, many small blocks, and the index encodings of format
// versions 3 to 5.
var layouts = []sstbuild.Options{
	{},
	{FormatVersion: 5, Checksum: sstbuild.XXH3, Snappy: true, UserKeyIndex: true, DeltaIndex: true},
	{FormatVersion: 4, Snappy: true, BlockSize: 64, RestartInterval: 1, DeltaIndex: true, IndexRestartInterval: 3},
	{FormatVersion: 3, Checksum: sstbuild.XXH3, BlockSize: 200, RestartInterval: 4, UserKeyIndex: true, IndexRestartInterval: 2},
	{FormatVersion: 5, BlockSize: 1, Snappy: true, UserKeyIndex: true, DeltaIndex: true, IndexRestartInterval: 16},
	{FormatVersion: 2, BlockSize: 100, RestartInterval: 2},
}

// TestRoundTrip builds tables of random entries in every layout and reads
// them back: the same entries in order, every SeekGE where a sorted search
// of the input says, and the properties the builder wrote.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for li, o := range layouts {
		for _, n := range []int{0, 1, 7, 300} {
			es := randomEntries(r, n)
			o.ColumnFamily, o.ColumnFamilyID, o.MergeOperator = "state-name", 3, "StringAppendTESTOperator"
			b, err := sstbuild.Build(es, o)
			if err != nil {
				t.Fatal(err)
			}
			tab := open(t, b)
			name := fmt.Sprintf("layout %d, %d entries", li, n)
			if got := readAll(t, tab); !sameEntries(got, es) {
				t.Fatalf("%s: read %d entries, wrote %d:\n got %v\nwant %v", name, len(got), len(es), got, es)
			}
			p := tab.Properties()
			if p.ColumnFamilyName != "state-name" || p.ColumnFamilyID != 3 || p.MergeOperator != "StringAppendTESTOperator" ||
				p.NumEntries != uint64(n) || p.IndexKeyIsUserKey != o.UserKeyIndex || p.IndexValueIsDeltaEncoded != o.DeltaIndex {
				t.Fatalf("%s: properties %+v", name, p)
			}
			wantVersion := o.FormatVersion
			if wantVersion == 0 {
				wantVersion = 5
			}
			if f := tab.Footer(); f.FormatVersion != wantVersion || uint8(f.Checksum) != max(o.Checksum, sstbuild.CRC32c) {
				t.Fatalf("%s: footer %+v", name, f)
			}
			if n > 100 && p.NumDataBlocks < 2 && o.BlockSize != 0 {
				t.Fatalf("%s: %d data blocks", name, p.NumDataBlocks)
			}
			for i := 0; i < 50; i++ {
				target := []byte{byte(r.IntN(5)), 0, 0, byte(r.IntN(70))}
				if i%5 == 0 && len(es) > 0 {
					target = es[r.IntN(len(es))].UserKey
				}
				checkSeek(t, name, tab, es, target)
			}
		}
	}
}

func checkSeek(t *testing.T, name string, tab *sst.Table, es []sstbuild.Entry, target []byte) {
	t.Helper()
	want := sort(es, target)
	it := tab.NewIter()
	defer it.Close()
	ok := it.SeekGE(target)
	if err := it.Err(); err != nil {
		t.Fatalf("%s: seek %x: %v", name, target, err)
	}
	if want == len(es) {
		if ok {
			t.Fatalf("%s: seek %x found %x, want the end", name, target, it.Key().UserKey)
		}
		return
	}
	if !ok || !sameEntry(entryOf(it), es[want]) {
		t.Fatalf("%s: seek %x: got %v (%v), want %v", name, target, entryOf(it), ok, es[want])
	}
	// The iterator goes on from there to the end.
	n := 1
	for it.Next() {
		n++
	}
	if n != len(es)-want || it.Err() != nil {
		t.Fatalf("%s: after seek %x, %d entries (err %v), want %d", name, target, n, it.Err(), len(es)-want)
	}
}

// sort is the index of the first entry whose user key is at least target.
func sort(es []sstbuild.Entry, target []byte) int {
	i, _ := slices.BinarySearchFunc(es, target, func(e sstbuild.Entry, t []byte) int {
		if bytes.Compare(e.UserKey, t) < 0 {
			return -1
		}
		return 1
	})
	return i
}

func entryOf(it *sst.Iter) sstbuild.Entry {
	k := it.Key()
	return sstbuild.Entry{UserKey: bytes.Clone(k.UserKey), Seq: k.Seq, Kind: uint8(k.Kind), Value: bytes.Clone(it.Value())}
}

func readAll(t *testing.T, tab *sst.Table) []sstbuild.Entry {
	t.Helper()
	it := tab.NewIter()
	defer it.Close()
	var out []sstbuild.Entry
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, entryOf(it))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameEntry(a, b sstbuild.Entry) bool {
	return bytes.Equal(a.UserKey, b.UserKey) && a.Seq == b.Seq && a.Kind == b.Kind && bytes.Equal(a.Value, b.Value)
}

func sameEntries(a, b []sstbuild.Entry) bool {
	return slices.EqualFunc(a, b, sameEntry)
}

// TestRangeTombstones reads back the range-deletion block.
func TestRangeTombstones(t *testing.T) {
	ts := []sstbuild.Tombstone{
		{Start: []byte("a"), End: []byte("c"), Seq: 9},
		{Start: []byte("b"), End: []byte("z"), Seq: 4},
	}
	b, err := sstbuild.Build([]sstbuild.Entry{{UserKey: []byte("k"), Seq: 1, Kind: sstbuild.Set, Value: []byte("v")}},
		sstbuild.Options{Tombstones: ts})
	if err != nil {
		t.Fatal(err)
	}
	tab := open(t, b)
	got, err := tab.RangeTombstones()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, ts, func(a sst.Tombstone, b sstbuild.Tombstone) bool {
		return bytes.Equal(a.Start, b.Start) && bytes.Equal(a.End, b.End) && a.Seq == b.Seq
	}) {
		t.Fatalf("tombstones %v, want %v", got, ts)
	}
	if p := tab.Properties(); p.NumRangeDeletions != 2 || p.NumEntries != 3 {
		t.Fatalf("properties count %d range deletions of %d entries", p.NumRangeDeletions, p.NumEntries)
	}
}

// smallTable is a table with several blocks, a range-deletion block and
// XXH3 checksums, for the damage tests.
func smallTable(t testing.TB, o sstbuild.Options) []byte {
	r := rand.New(rand.NewPCG(7, 7))
	o.Tombstones = []sstbuild.Tombstone{{Start: []byte{1}, End: []byte{2}, Seq: 5}}
	b, err := sstbuild.Build(randomEntries(r, 60), o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readEverything opens a table and reads all of it, returning the first
// error.
func readEverything(b []byte) error {
	tab, err := sst.Open(newFile(b), "damaged.sst", sst.Options{})
	if err != nil {
		return err
	}
	if _, err := tab.RangeTombstones(); err != nil {
		return err
	}
	it := tab.NewIter()
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
	}
	if err := it.Err(); err != nil {
		return err
	}
	it.SeekGE([]byte{2, 0, 0, 9})
	return it.Err()
}

// checkLocated fails unless err is a located ErrCorrupt or ErrUnsupported.
func checkLocated(t *testing.T, what string, err error) {
	t.Helper()
	var e *sst.Error
	if !errors.As(err, &e) || e.File != "damaged.sst" ||
		!(errors.Is(err, sst.ErrCorrupt) || errors.Is(err, sst.ErrUnsupported)) {
		t.Fatalf("%s: error %v is not a located ErrCorrupt or ErrUnsupported", what, err)
	}
}

// TestDamage flips every byte of a table and truncates it at every length:
// each damaged block must be caught (a checksum covers every byte but the
// footer's padding), each truncation too, and neither may panic.
func TestDamage(t *testing.T) {
	for _, o := range []sstbuild.Options{
		{Checksum: sstbuild.XXH3, Snappy: true, BlockSize: 128, UserKeyIndex: true, DeltaIndex: true, IndexRestartInterval: 2},
		{BlockSize: 300},
	} {
		b := smallTable(t, o)
		if err := readEverything(b); err != nil {
			t.Fatal(err)
		}
		padding := func(i int) bool {
			// The footer's handles end before byte 41; the rest up to the
			// version is padding that RocksDB ignores too.
			f := len(b) - 53
			return i > f && i < f+41 && b[i] == 0 && !touchesHandles(b[f:], i-f)
		}
		for i := range b {
			d := bytes.Clone(b)
			d[i] ^= 0x5a
			err := readEverything(d)
			if err == nil {
				if padding(i) {
					continue
				}
				t.Fatalf("flipped byte %d of %d: no error", i, len(b))
			}
			checkLocated(t, fmt.Sprintf("flipped byte %d", i), err)
		}
		for n := 0; n < len(b); n++ {
			err := readEverything(b[:n])
			if err == nil {
				t.Fatalf("truncated to %d of %d bytes: no error", n, len(b))
			}
			checkLocated(t, fmt.Sprintf("truncated to %d", n), err)
		}
	}
}

// touchesHandles tells whether footer byte i lies in the checksum type or
// the two handles.
func touchesHandles(footer []byte, i int) bool {
	n := 1
	for h := 0; h < 4; h++ {
		_, m := binary.Uvarint(footer[n:])
		n += m
	}
	return i < n
}

// countingFile counts reads.
type countingFile struct {
	memFile
	reads *int
}

func (f countingFile) ReadAt(b []byte, off int64) (int, error) {
	*f.reads++
	return f.memFile.ReadAt(b, off)
}

// A seek into the data block the iterator already holds, as the next key
// group's seek after a scan of the previous one lands, reads nothing; one
// into another block reads it.
func TestSeekReusesBlock(t *testing.T) {
	var es []sstbuild.Entry
	for i := 0; i < 200; i++ {
		es = append(es, sstbuild.Entry{UserKey: []byte{byte(i / 50), byte(i)}, Seq: uint64(i + 1), Kind: sstbuild.Set, Value: bytes.Repeat([]byte{'v'}, 20)})
	}
	b, err := sstbuild.Build(es, sstbuild.Options{BlockSize: 256, Snappy: true})
	if err != nil {
		t.Fatal(err)
	}
	reads := 0
	tab, err := sst.Open(countingFile{newFile(b), &reads}, "test.sst", sst.Options{})
	if err != nil {
		t.Fatal(err)
	}
	it := tab.NewIter()
	seek := func(key []byte, wantReads int) {
		t.Helper()
		before := reads
		if !it.SeekGE(key) || !bytes.Equal(it.Key().UserKey, key) {
			t.Fatalf("seek %x: at %x, %v", key, it.Key().UserKey, it.Err())
		}
		if got := reads - before; got != wantReads {
			t.Errorf("seek %x: %d reads, want %d", key, got, wantReads)
		}
	}
	seek([]byte{1, 60}, 1)
	seek([]byte{1, 60}, 0)
	seek([]byte{1, 61}, 0)
	seek([]byte{3, 199}, 1)
	// Scanning on from a reused block still checks the order of keys.
	n := 0
	for ok := it.SeekGE([]byte{0, 0}); ok; ok = it.Next() {
		n++
	}
	if n != 200 || it.Err() != nil {
		t.Errorf("scan of %d entries, %v", n, it.Err())
	}
}
