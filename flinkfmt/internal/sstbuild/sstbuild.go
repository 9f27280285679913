// Package sstbuild writes small RocksDB block-based tables for the tests of
// flinkfmt and the packages under flinkfmt/rocksdb: deletions, merge
// operands, range tombstones, several blocks, both checksum types and
// Snappy, which the Flink fixtures do not all have. It follows RocksDB's layout independently
// of the reader (its checksums and block encoding are its own code), so
// that a reader bug is not mirrored here. Nothing outside tests imports it.
package sstbuild

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/golang/snappy"
	"github.com/zeebo/xxh3"
)

// Kind is an internal key's type byte.
type Kind = uint8

// The kinds RocksDB writes into tables of this subset.
const (
	Delete       Kind = 0x0
	Set          Kind = 0x1
	Merge        Kind = 0x2
	SingleDelete Kind = 0x7
	RangeDelete  Kind = 0xF
)

// The footer's checksum types.
const (
	CRC32c uint8 = 1
	XXH3   uint8 = 4
)

// Tombstone is a range deletion of [Start, End) below Seq.
type Tombstone struct {
	Start, End []byte
	Seq        uint64
}

// Entry is one point entry.
type Entry struct {
	UserKey []byte
	Seq     uint64
	Kind    Kind
	Value   []byte
}

// Options shape the table. The zero value writes format version 5 with
// CRC32c, no compression, 4 KiB blocks, restart interval 16, an index of
// internal keys with full handles, column family "default".
type Options struct {
	FormatVersion        uint32
	Checksum             uint8
	Snappy               bool
	BlockSize            int
	RestartInterval      int
	IndexRestartInterval int
	// UserKeyIndex and DeltaIndex select the index encodings of format
	// versions 3 and 4 that Flink's tables use.
	UserKeyIndex, DeltaIndex bool
	ColumnFamily             string
	ColumnFamilyID           uint64
	MergeOperator            string
	Comparator               string
	Tombstones               []Tombstone
	// Properties are written in addition to, or instead of, the built-in
	// ones.
	Properties map[string][]byte
}

// Build writes a table holding entries, which must be in internal-key
// order.
func Build(entries []Entry, o Options) ([]byte, error) {
	if o.FormatVersion == 0 {
		o.FormatVersion = 5
	}
	if o.Checksum == 0 {
		o.Checksum = CRC32c
	}
	if o.BlockSize == 0 {
		o.BlockSize = 4096
	}
	if o.RestartInterval == 0 {
		o.RestartInterval = 16
	}
	if o.IndexRestartInterval == 0 {
		o.IndexRestartInterval = 1
	}
	if o.ColumnFamily == "" {
		o.ColumnFamily = "default"
	}
	if o.MergeOperator == "" {
		o.MergeOperator = "nullptr"
	}
	if o.Comparator == "" {
		o.Comparator = "leveldb.BytewiseComparator"
	}
	w := &writer{o: o}
	for i := 1; i < len(entries); i++ {
		if compareEntries(entries[i-1], entries[i]) >= 0 {
			return nil, fmt.Errorf("sstbuild: entry %d is not after entry %d", i, i-1)
		}
	}
	w.writeData(entries)
	return w.finish(entries), nil
}

func compareEntries(a, b Entry) int {
	if c := bytes.Compare(a.UserKey, b.UserKey); c != 0 {
		return c
	}
	ta, tb := a.Seq<<8|uint64(a.Kind), b.Seq<<8|uint64(b.Kind)
	switch {
	case ta > tb:
		return -1
	case ta < tb:
		return 1
	}
	return 0
}

// InternalKey encodes a user key with its trailer.
func InternalKey(userKey []byte, seq uint64, kind Kind) []byte {
	return binary.LittleEndian.AppendUint64(bytes.Clone(userKey), seq<<8|uint64(kind))
}

type writer struct {
	o     Options
	out   []byte
	index blockWriter
	stats struct{ rawKey, rawValue, blocks uint64 }
}

type handle struct{ off, size uint64 }

func (w *writer) writeData(entries []Entry) {
	w.index = blockWriter{interval: w.o.IndexRestartInterval, deltaHandles: w.o.DeltaIndex}
	var b blockWriter
	b.interval = w.o.RestartInterval
	var last []byte
	for i, e := range entries {
		k := InternalKey(e.UserKey, e.Seq, e.Kind)
		b.add(k, e.Value)
		w.stats.rawKey += uint64(len(k))
		w.stats.rawValue += uint64(len(e.Value))
		last = k
		end := i == len(entries)-1
		// A user-key index cannot separate two entries of one user key.
		cut := !end && len(b.buf) >= w.o.BlockSize &&
			(!w.o.UserKeyIndex || !bytes.Equal(e.UserKey, entries[i+1].UserKey))
		if cut || end {
			h := w.writeBlock(b.finish(), w.o.Snappy)
			w.stats.blocks++
			sep := last
			if w.o.UserKeyIndex {
				sep = last[:len(last)-8]
			}
			w.index.addHandle(sep, h)
			b = blockWriter{interval: w.o.RestartInterval}
		}
	}
}

func (w *writer) finish(entries []Entry) []byte {
	dataSize := uint64(len(w.out))
	indexH := w.writeBlock(w.index.finish(), w.o.Snappy)
	meta := map[string]handle{}
	if len(w.o.Tombstones) > 0 {
		rd := blockWriter{interval: 1}
		for _, t := range w.o.Tombstones {
			rd.add(InternalKey(t.Start, t.Seq, RangeDelete), t.End)
		}
		meta["rocksdb.range_del"] = w.writeBlock(rd.finish(), false)
	}
	var dels, merges uint64
	for _, e := range entries {
		switch e.Kind {
		case Delete, SingleDelete:
			dels++
		case Merge:
			merges++
		}
	}
	nt := uint64(len(w.o.Tombstones))
	u := func(v uint64) []byte { return binary.AppendUvarint(nil, v) }
	b2u := func(b bool) []byte {
		if b {
			return u(1)
		}
		return u(0)
	}
	compression := "NoCompression"
	if w.o.Snappy {
		compression = "Snappy"
	}
	props := map[string][]byte{
		"rocksdb.column.family.id":                      u(w.o.ColumnFamilyID),
		"rocksdb.column.family.name":                    []byte(w.o.ColumnFamily),
		"rocksdb.comparator":                            []byte(w.o.Comparator),
		"rocksdb.merge.operator":                        []byte(w.o.MergeOperator),
		"rocksdb.compression":                           []byte(compression),
		"rocksdb.num.entries":                           u(uint64(len(entries)) + nt),
		"rocksdb.deleted.keys":                          u(dels + nt),
		"rocksdb.merge.operands":                        u(merges),
		"rocksdb.num.range-deletions":                   u(nt),
		"rocksdb.num.data.blocks":                       u(w.stats.blocks),
		"rocksdb.raw.key.size":                          u(w.stats.rawKey),
		"rocksdb.raw.value.size":                        u(w.stats.rawValue),
		"rocksdb.data.size":                             u(dataSize),
		"rocksdb.index.size":                            u(indexH.size),
		"rocksdb.index.key.is.user.key":                 b2u(w.o.UserKeyIndex),
		"rocksdb.index.value.is.delta.encoded":          b2u(w.o.DeltaIndex),
		"rocksdb.block.based.table.index.type":          {0, 0, 0, 0},
		"rocksdb.block.based.table.prefix.filtering":    []byte("0"),
		"rocksdb.block.based.table.whole.key.filtering": []byte("1"),
	}
	for k, v := range w.o.Properties {
		props[k] = v
	}
	pb := blockWriter{interval: 1}
	for _, k := range sortedKeys(props) {
		pb.add([]byte(k), props[k])
	}
	meta["rocksdb.properties"] = w.writeBlock(pb.finish(), false)
	mb := blockWriter{interval: 1}
	for _, k := range sortedKeys(meta) {
		h := meta[k]
		mb.add([]byte(k), binary.AppendUvarint(binary.AppendUvarint(nil, h.off), h.size))
	}
	metaH := w.writeBlock(mb.finish(), false)

	footer := []byte{byte(w.o.Checksum)}
	footer = binary.AppendUvarint(binary.AppendUvarint(footer, metaH.off), metaH.size)
	footer = binary.AppendUvarint(binary.AppendUvarint(footer, indexH.off), indexH.size)
	footer = append(footer, make([]byte, 41-len(footer))...)
	footer = binary.LittleEndian.AppendUint32(footer, w.o.FormatVersion)
	footer = binary.LittleEndian.AppendUint64(footer, 0x88e241b785f4cff7)
	return append(w.out, footer...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// writeBlock appends a block with its trailer, Snappy-compressed when asked
// and worth it, as RocksDB keeps a block raw when compression saves little.
func (w *writer) writeBlock(raw []byte, compress bool) handle {
	data, typ := raw, byte(0)
	if compress {
		if c := snappy.Encode(nil, raw); len(c) < len(raw)-len(raw)/8 {
			data, typ = c, 1
		}
	}
	h := handle{off: uint64(len(w.out)), size: uint64(len(data))}
	w.out = append(w.out, data...)
	w.out = append(w.out, typ)
	w.out = binary.LittleEndian.AppendUint32(w.out, Checksum(w.o.Checksum, data, typ))
	return h
}

// Checksum is a block trailer's checksum: RocksDB's masked CRC-32C of the
// block and its type byte, or XXH3's low 32 bits mixed with the type byte.
func Checksum(t uint8, data []byte, typ byte) uint32 {
	switch t {
	case CRC32c:
		tab := crc32.MakeTable(crc32.Castagnoli)
		c := crc32.Checksum(append(bytes.Clone(data), typ), tab)
		return ((c >> 15) | (c << 17)) + 0xa282ead8
	case XXH3:
		return uint32(xxh3.Hash(data)) ^ uint32(typ)*0x6b9083d9
	}
	return 0
}

// blockWriter builds one block: prefix-compressed keys with a restart
// point every interval entries.
type blockWriter struct {
	buf          []byte
	restarts     []uint32
	last         []byte
	counter      int
	interval     int
	deltaHandles bool
	prev         handle
}

func (b *blockWriter) shared(key []byte) int {
	if b.counter%b.interval == 0 {
		b.restarts = append(b.restarts, uint32(len(b.buf)))
		return 0
	}
	n := 0
	for n < len(key) && n < len(b.last) && key[n] == b.last[n] {
		n++
	}
	return n
}

func (b *blockWriter) add(key, value []byte) {
	s := b.shared(key)
	b.buf = binary.AppendUvarint(b.buf, uint64(s))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(key)-s))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(value)))
	b.buf = append(append(b.buf, key[s:]...), value...)
	b.last = append(b.last[:0], key...)
	b.counter++
}

// addHandle adds an index entry. With delta handles the value length is
// left out, and an entry that shares key bytes stores only the difference
// of its block's size from the previous block's.
func (b *blockWriter) addHandle(key []byte, h handle) {
	if !b.deltaHandles {
		b.add(key, binary.AppendUvarint(binary.AppendUvarint(nil, h.off), h.size))
		return
	}
	s := b.shared(key)
	b.buf = binary.AppendUvarint(b.buf, uint64(s))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(key)-s))
	b.buf = append(b.buf, key[s:]...)
	if s > 0 {
		b.buf = binary.AppendVarint(b.buf, int64(h.size)-int64(b.prev.size))
	} else {
		b.buf = binary.AppendUvarint(binary.AppendUvarint(b.buf, h.off), h.size)
	}
	b.prev = h
	b.last = append(b.last[:0], key...)
	b.counter++
}

func (b *blockWriter) finish() []byte {
	out := b.buf
	if len(b.restarts) == 0 {
		b.restarts = []uint32{0} // RocksDB's empty block still has one
	}
	for _, r := range b.restarts {
		out = binary.LittleEndian.AppendUint32(out, r)
	}
	return binary.LittleEndian.AppendUint32(out, uint32(len(b.restarts)))
}
