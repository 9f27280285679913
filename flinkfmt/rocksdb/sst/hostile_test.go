package sst_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/internal/sstbuild"
	"github.com/stateproc/stateproc/flinkfmt/rocksdb/sst"
)

// oneBlock builds a table with a single data block, which starts at offset
// 0 and whose length the properties give.
func oneBlock(t *testing.T, es []sstbuild.Entry, o sstbuild.Options) ([]byte, sst.BlockHandle) {
	t.Helper()
	b, err := sstbuild.Build(es, o)
	if err != nil {
		t.Fatal(err)
	}
	p := open(t, b).Properties()
	if p.NumDataBlocks != 1 {
		t.Fatalf("%d data blocks", p.NumDataBlocks)
	}
	return b, sst.BlockHandle{Offset: 0, Length: p.DataSize - 5}
}

// rewriteBlock replaces a block's bytes, type and checksum in place.
func rewriteBlock(b []byte, h sst.BlockHandle, data []byte, typ byte, ck uint8) []byte {
	b = bytes.Clone(b)
	if uint64(len(data)) != h.Length {
		panic("rewriteBlock: length changes")
	}
	copy(b[h.Offset:], data)
	b[h.Offset+h.Length] = typ
	binary.LittleEndian.PutUint32(b[h.Offset+h.Length+1:], sstbuild.Checksum(ck, data, typ))
	return b
}

func footerOf(t *testing.T, b []byte) sst.Footer {
	t.Helper()
	return open(t, b).Footer()
}

// TestHostile feeds tables that are well formed where it matters but use
// something this reader refuses, or lie about sizes: each must fail with
// the right sentinel and a message naming the problem.
func TestHostile(t *testing.T) {
	entries := []sstbuild.Entry{
		{UserKey: []byte("a"), Seq: 3, Kind: sstbuild.Set, Value: []byte("x")},
		{UserKey: []byte("b"), Seq: 2, Kind: sstbuild.Set, Value: []byte("y")},
	}
	good, data := oneBlock(t, entries, sstbuild.Options{})
	n := len(good)
	cases := []struct {
		name string
		b    func() []byte
		opts sst.Options
		want error
		msg  string
	}{
		{"legacy footer", func() []byte {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint64(b[n-8:], 0xdb4775248b80fb57)
			return b
		}, sst.Options{}, sst.ErrUnsupported, "format version 0"},
		{"not a table", func() []byte { return bytes.Repeat([]byte{7}, 100) }, sst.Options{}, sst.ErrCorrupt, "magic"},
		{"format version 6", func() []byte {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint32(b[n-12:], 6)
			return b
		}, sst.Options{}, sst.ErrUnsupported, "format version 6"},
		{"no checksums", func() []byte {
			b := bytes.Clone(good)
			b[n-53] = 0
			return b
		}, sst.Options{}, sst.ErrUnsupported, "block checksum none"},
		{"xxHash64 checksums", func() []byte {
			b := bytes.Clone(good)
			b[n-53] = 3
			return b
		}, sst.Options{}, sst.ErrUnsupported, "xxHash64"},
		{"index handle past the end", func() []byte {
			b, err := sstbuild.Build(entries, sstbuild.Options{})
			if err != nil {
				t.Fatal(err)
			}
			f := footerOf(t, b)
			foot := []byte{1}
			foot = binary.AppendUvarint(binary.AppendUvarint(foot, f.MetaIndex.Offset), f.MetaIndex.Length)
			foot = binary.AppendUvarint(binary.AppendUvarint(foot, 1<<40), 10)
			copy(b[n-53:], append(foot, make([]byte, 41-len(foot))...))
			return b
		}, sst.Options{}, sst.ErrCorrupt, "runs past the blocks"},
		{"other comparator", func() []byte {
			b, err := sstbuild.Build(entries, sstbuild.Options{Comparator: "rocksdb.ReverseBytewiseComparator"})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}, sst.Options{}, sst.ErrUnsupported, "ReverseBytewiseComparator"},
		{"partitioned index", func() []byte {
			b, err := sstbuild.Build(entries, sstbuild.Options{Properties: map[string][]byte{
				"rocksdb.block.based.table.index.type": {2, 0, 0, 0},
			}})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}, sst.Options{}, sst.ErrUnsupported, "index type 2"},
		{"data block hash index", func() []byte {
			d := bytes.Clone(good[:data.Length])
			binary.LittleEndian.PutUint32(d[len(d)-4:], binary.LittleEndian.Uint32(d[len(d)-4:])|1<<31)
			return rewriteBlock(good, data, d, 0, sstbuild.CRC32c)
		}, sst.Options{}, sst.ErrUnsupported, "hash index"},
		{"zstd block", func() []byte {
			return rewriteBlock(good, data, good[:data.Length], 7, sstbuild.CRC32c)
		}, sst.Options{}, sst.ErrUnsupported, "ZSTD compression"},
		{"snappy size out of proportion", func() []byte {
			d := make([]byte, data.Length)
			copy(d, binary.AppendUvarint(nil, 1<<30))
			return rewriteBlock(good, data, d, 1, sstbuild.CRC32c)
		}, sst.Options{}, sst.ErrCorrupt, "declares"},
		{"block over the limit", func() []byte { return good }, sst.Options{MaxBlockSize: 8}, sst.ErrUnsupported, "block limit"},
		{"restart array too long", func() []byte {
			d := bytes.Clone(good[:data.Length])
			binary.LittleEndian.PutUint32(d[len(d)-4:], 1000)
			return rewriteBlock(good, data, d, 0, sstbuild.CRC32c)
		}, sst.Options{}, sst.ErrCorrupt, "restart points do not fit"},
		{"key length past the block", func() []byte {
			d := bytes.Clone(good[:data.Length])
			d[1] = 0x7f // non_shared of the first entry
			return rewriteBlock(good, data, d, 0, sstbuild.CRC32c)
		}, sst.Options{}, sst.ErrCorrupt, "runs past the entries"},
		{"blob index entry", func() []byte {
			b, err := sstbuild.Build([]sstbuild.Entry{{UserKey: []byte("a"), Seq: 1, Kind: 0x11, Value: []byte("v")}}, sstbuild.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}, sst.Options{}, sst.ErrUnsupported, "blob index"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.b()
			err := readWith(b, c.opts)
			var e *sst.Error
			if !errors.Is(err, c.want) || !errors.As(err, &e) || e.File != "damaged.sst" || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v, want %v mentioning %q", err, c.want, c.msg)
			}
		})
	}
}

func readWith(b []byte, o sst.Options) error {
	tab, err := sst.Open(newFile(b), "damaged.sst", o)
	if err != nil {
		return err
	}
	it := tab.NewIter()
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
	}
	return it.Err()
}

// TestOutOfOrder rewrites a block so that its second key sorts before its
// first, with a valid checksum: the iterator refuses it.
func TestOutOfOrder(t *testing.T) {
	b, h := oneBlock(t, []sstbuild.Entry{
		{UserKey: []byte("a"), Seq: 3, Kind: sstbuild.Set, Value: []byte("1")},
		{UserKey: []byte("c"), Seq: 2, Kind: sstbuild.Set, Value: []byte("2")},
	}, sstbuild.Options{RestartInterval: 1})
	d := bytes.Clone(b[:h.Length])
	i := bytes.IndexByte(d, 'c')
	d[i] = '0'
	err := readWith(rewriteBlock(b, h, d, 0, sstbuild.CRC32c), sst.Options{})
	if !errors.Is(err, sst.ErrCorrupt) || !strings.Contains(err.Error(), "not greater") {
		t.Fatalf("error %v, want keys out of order", err)
	}
}
