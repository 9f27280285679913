package sst

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/internal/sstbuild"
)

type memFile struct{ *bytes.Reader }

func (memFile) Close() error { return nil }

// fuzzSeeds are a few small tables: Flink's (CRC32c, XXH3, a Snappy data
// block) when the fixtures are there, and built ones with several blocks,
// every entry kind and a range-deletion block.
func fuzzSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	r := rand.New(rand.NewPCG(3, 4))
	var es []sstbuild.Entry
	for i := 0; i < 40; i++ {
		k := []byte{byte(i / 10), 0, byte(i)}
		es = append(es, sstbuild.Entry{UserKey: k, Seq: uint64(100 - i), Kind: []uint8{sstbuild.Set, sstbuild.Merge, sstbuild.Delete, sstbuild.SingleDelete}[i%4], Value: bytes.Repeat([]byte{'v'}, r.IntN(30))})
	}
	for _, o := range []sstbuild.Options{
		{BlockSize: 64, Snappy: true, UserKeyIndex: true, DeltaIndex: true, IndexRestartInterval: 4,
			Tombstones: []sstbuild.Tombstone{{Start: []byte{1}, End: []byte{2}, Seq: 50}}},
		{Checksum: sstbuild.XXH3, BlockSize: 100, RestartInterval: 3, FormatVersion: 3},
	} {
		b, err := sstbuild.Build(es, o)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	if _, err := os.Stat(filepath.Join(fixtureRootForFuzz(), "inventory.tsv")); err != nil {
		f.Logf("Flink fixtures absent, fuzzing from built tables only: %v", err)
		return seeds
	}
	want := map[string]bool{"crc": false, "xxh3": false, "snappy": false}
	dirs, err := filepath.Glob(filepath.Join(fixtureRootForFuzz(), "flink-tests", "src", "test", "resources", "*rocksdb*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, dir := range dirs {
		files, err := os.ReadDir(dir)
		if err != nil {
			f.Fatal(err)
		}
		for _, e := range files {
			path := filepath.Join(dir, e.Name())
			if !hasTableMagic(path) {
				continue
			}
			b, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			kind := "crc"
			switch {
			case b[len(b)-53] == byte(ChecksumXXH3):
				kind = "xxh3"
			case len(b) > 1200:
				kind = "snappy"
			}
			if !want[kind] {
				want[kind] = true
				seeds = append(seeds, b)
			}
		}
	}
	return seeds
}

// hasTableMagic tells a table file by its last eight bytes.
func hasTableMagic(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() < 8 {
		return false
	}
	var b [8]byte
	if _, err := f.ReadAt(b[:], st.Size()-8); err != nil {
		return false
	}
	return binary.LittleEndian.Uint64(b[:]) == magicNumber
}

func fixtureRootForFuzz() string {
	return filepath.Join("..", "..", "..", "..", "shared", "flink-savepoints")
}

// FuzzTable opens arbitrary bytes as a table and reads all of it. With fix,
// it first recomputes the checksum of every block it can locate, so that
// mutations reach the decoders behind the checksums. Errors must be
// located sentinels; an accepted table must iterate in strictly increasing
// order and seek to what a scan finds.
func FuzzTable(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, fix bool) {
		if fix {
			data = fixChecksums(bytes.Clone(data))
		}
		err := checkTable(data)
		if err == nil {
			return
		}
		var e *Error
		if !errors.As(err, &e) || e.File != "fuzz.sst" || !(errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupported)) {
			t.Fatalf("error %v is not a located ErrCorrupt or ErrUnsupported", err)
		}
	})
}

func checkTable(data []byte) error {
	tab, err := Open(memFile{bytes.NewReader(data)}, "fuzz.sst", Options{MaxBlockSize: 1 << 20})
	if err != nil {
		return err
	}
	if _, err := tab.RangeTombstones(); err != nil {
		return err
	}
	var keys [][]byte
	it := tab.NewIter()
	for ok := it.First(); ok && len(keys) < 10000; ok = it.Next() {
		k := binary.LittleEndian.AppendUint64(bytes.Clone(it.Key().UserKey), it.Key().Seq<<8|uint64(it.Key().Kind))
		if len(keys) > 0 && compareInternal(keys[len(keys)-1], k) >= 0 {
			panic("iterator returned keys out of order")
		}
		keys = append(keys, k)
	}
	if err := it.Err(); err != nil {
		return err
	}
	// Seek to each key's user key and just past it.
	for i, k := range keys {
		if i%7 != 0 {
			continue
		}
		uk := k[:len(k)-8]
		for _, target := range [][]byte{uk, append(bytes.Clone(uk), 0)} {
			want := -1
			for j, k2 := range keys {
				if bytes.Compare(k2[:len(k2)-8], target) >= 0 {
					want = j
					break
				}
			}
			ok := it.SeekGE(target)
			if err := it.Err(); err != nil {
				return err
			}
			if (want < 0) != !ok || (ok && !bytes.Equal(it.Key().UserKey, keys[want][:len(keys[want])-8])) {
				panic("SeekGE disagrees with a scan")
			}
		}
	}
	return nil
}

// fixChecksums rewrites the trailer of every block reachable from the
// footer: metaindex, properties, range deletions, index and data blocks.
func fixChecksums(data []byte) []byte {
	if len(data) < footerLen || binary.LittleEndian.Uint64(data[len(data)-8:]) != magicNumber {
		return data
	}
	t := &Table{f: memFile{bytes.NewReader(data)}, name: "fix", size: int64(len(data)), maxSize: 1 << 20}
	if t.readFooter() != nil {
		return data
	}
	fix := func(h BlockHandle) []byte {
		end := uint64(len(data) - footerLen)
		if h.Offset > end || h.Length > end-h.Offset || end-h.Offset-h.Length < blockTrailerLen {
			return nil
		}
		n := h.Offset + h.Length
		binary.LittleEndian.PutUint32(data[n+1:], blockChecksum(t.footer.Checksum, data[h.Offset:n+1]))
		b, err := t.readBlock(h, location{file: "fix"}, nil)
		if err != nil {
			return nil
		}
		return b
	}
	handles := func(b []byte, delta bool, each func(key []byte, h BlockHandle)) {
		var it blockIter
		if b == nil || it.init(location{}, b, delta, nil) != nil {
			return
		}
		for ok := it.first(); ok; ok = it.nextEntry() {
			h := it.handle
			if !delta {
				var n int
				if h, n = decodeHandle(it.val); n == 0 {
					continue
				}
			}
			each(it.key, h)
		}
	}
	delta := false
	handles(fix(t.footer.MetaIndex), false, func(key []byte, h BlockHandle) {
		b := fix(h)
		if string(key) == "rocksdb.properties" && b != nil {
			var p Properties
			if p.decode(location{}, b) == nil {
				delta = p.IndexValueIsDeltaEncoded
			}
		}
	})
	handles(fix(t.footer.Index), delta, func(_ []byte, h BlockHandle) { fix(h) })
	return data
}
