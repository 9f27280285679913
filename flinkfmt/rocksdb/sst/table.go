package sst

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/golang/snappy"

	"github.com/stateproc/stateproc/storage"
)

// DefaultMaxBlockSize bounds a block after decompression unless Options
// says otherwise. RocksDB cuts data blocks at about 4 KiB, but a single
// large value (a long Flink list) makes one block of its own size.
const DefaultMaxBlockSize = 256 << 20

// Options tune Open.
type Options struct {
	// MaxBlockSize bounds the decompressed size of any block; 0 means
	// DefaultMaxBlockSize. A block that declares more is refused before
	// anything is allocated for it.
	MaxBlockSize int
}

// Table is an open block-based table. Its methods may be called from
// several goroutines; each Iter is for one goroutine.
type Table struct {
	f       storage.File
	name    string
	size    int64
	maxSize int
	footer  Footer
	props   Properties
	// index is the decompressed index block, kept for the table's life.
	index    []byte
	indexLoc location
	rangeDel BlockHandle
	hasRange bool
}

// Open reads and checks a table's footer, metaindex, properties and index
// block. name is used in errors only. The caller keeps f open while the
// table is in use and closes it afterwards.
func Open(f storage.File, name string, opts Options) (*Table, error) {
	t := &Table{f: f, name: name, size: f.Size(), maxSize: opts.MaxBlockSize}
	if t.maxSize <= 0 {
		t.maxSize = DefaultMaxBlockSize
	}
	if err := t.readFooter(); err != nil {
		return nil, err
	}
	if err := t.readMetaIndex(); err != nil {
		return nil, err
	}
	if err := t.checkProperties(); err != nil {
		return nil, err
	}
	t.indexLoc = location{file: name, off: int64(t.footer.Index.Offset), what: "index block"}
	index, err := t.readBlock(t.footer.Index, t.indexLoc, nil)
	if err != nil {
		return nil, err
	}
	var it blockIter
	if err := it.init(t.indexLoc, index, t.props.IndexValueIsDeltaEncoded, nil); err != nil {
		return nil, err
	}
	t.index = index
	return t, nil
}

// Name is the name given to Open.
func (t *Table) Name() string { return t.name }

// Footer is what the table's footer says.
func (t *Table) Footer() Footer { return t.footer }

// Properties are the table's properties block.
func (t *Table) Properties() *Properties { return &t.props }

func (t *Table) readFooter() error {
	if t.size < footerLen {
		if t.size >= legacyFooterLen && t.readMagic() == legacyMagicNumber {
			return At(t.name, -1, Unsupportedf("format version 0 (legacy footer)"))
		}
		return At(t.name, -1, Corruptf("%d bytes, too short for a block-based table", t.size))
	}
	var b [footerLen]byte
	off := t.size - footerLen
	if err := t.readAt(b[:], off); err != nil {
		return At(t.name, off, err)
	}
	switch magic := binary.LittleEndian.Uint64(b[footerLen-8:]); magic {
	case magicNumber:
	case legacyMagicNumber:
		return At(t.name, off, Unsupportedf("format version 0 (legacy footer)"))
	default:
		return At(t.name, off, Corruptf("magic %#016x is not a block-based table's", magic))
	}
	v := binary.LittleEndian.Uint32(b[footerLen-12:])
	if v < minFormatVersion || v > maxFormatVersion {
		return At(t.name, off, Unsupportedf("format version %d (this reader reads %d to %d)", v, minFormatVersion, maxFormatVersion))
	}
	ck, n := binary.Uvarint(b[:footerLen-12])
	if n <= 0 {
		return At(t.name, off, Corruptf("footer: bad checksum type"))
	}
	switch ChecksumType(ck) {
	case ChecksumCRC32c, ChecksumXXH3:
	default:
		if ck > 0xff {
			return At(t.name, off, Corruptf("footer: checksum type %d", ck))
		}
		return At(t.name, off, Unsupportedf("block checksum %v (this reader verifies CRC32c and XXH3)", ChecksumType(ck)))
	}
	rest := b[n : footerLen-12]
	meta, m := decodeHandle(rest)
	if m == 0 {
		return At(t.name, off, Corruptf("footer: bad metaindex handle"))
	}
	index, k := decodeHandle(rest[m:])
	if k == 0 {
		return At(t.name, off, Corruptf("footer: bad index handle"))
	}
	t.footer = Footer{FormatVersion: v, Checksum: ChecksumType(ck), MetaIndex: meta, Index: index}
	return nil
}

func (t *Table) readMagic() uint64 {
	var b [8]byte
	if t.readAt(b[:], t.size-8) != nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b[:])
}

func (t *Table) readAt(b []byte, off int64) error {
	n, err := t.f.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return Corruptf("truncated: %d of %d bytes at %d", n, len(b), off)
	}
	return err
}

// buffers are an iterator's read and decompression buffers, reused from
// block to block.
type buffers struct{ raw, out []byte }

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// readBlock reads the block at h, verifies its checksum and decompresses
// it. With bufs, the result aliases one of its buffers and is valid until
// the next read with them; without, it is the caller's.
func (t *Table) readBlock(h BlockHandle, loc location, bufs *buffers) ([]byte, error) {
	if bufs == nil {
		bufs = new(buffers)
	}
	end := uint64(t.size - footerLen)
	if h.Offset > end || h.Length > end-h.Offset || blockTrailerLen > end-h.Offset-h.Length {
		return nil, loc.corrupt("block handle %d+%d runs past the blocks (%d bytes)", h.Offset, h.Length, end)
	}
	n := int(h.Length)
	if n > t.maxSize {
		return nil, loc.unsupported("%d bytes, more than the %d-byte block limit", n, t.maxSize)
	}
	bufs.raw = grow(bufs.raw, n+blockTrailerLen)
	raw := bufs.raw
	if err := t.readAt(raw, int64(h.Offset)); err != nil {
		return nil, At(loc.file, loc.off, err)
	}
	typ := raw[n]
	want := binary.LittleEndian.Uint32(raw[n+1:])
	if got := blockChecksum(t.footer.Checksum, raw[:n+1]); got != want {
		return nil, loc.corrupt("%v checksum %#08x, block says %#08x", t.footer.Checksum, got, want)
	}
	switch Compression(typ) {
	case NoCompression:
		return raw[:n], nil
	case SnappyCompression:
		size, err := snappy.DecodedLen(raw[:n])
		if err != nil {
			return nil, loc.corrupt("snappy: %v", err)
		}
		// A snappy copy of at most 64 bytes takes at least 3 input bytes.
		if uint64(size) > 22*uint64(n)+64 {
			return nil, loc.corrupt("snappy block of %d bytes declares %d decompressed", n, size)
		}
		if size > t.maxSize {
			return nil, loc.unsupported("%d bytes decompressed, more than the %d-byte block limit", size, t.maxSize)
		}
		bufs.out = grow(bufs.out, size)
		d, err := snappy.Decode(bufs.out, raw[:n])
		if err != nil {
			return nil, loc.corrupt("snappy: %v", err)
		}
		return d, nil
	}
	return nil, loc.unsupported("%v compression", Compression(typ))
}

func (t *Table) readMetaIndex() error {
	loc := location{file: t.name, off: int64(t.footer.MetaIndex.Offset), what: "metaindex block"}
	data, err := t.readBlock(t.footer.MetaIndex, loc, nil)
	if err != nil {
		return err
	}
	var it blockIter
	if err := it.init(loc, data, false, bytes.Compare); err != nil {
		return err
	}
	var props BlockHandle
	hasProps := false
	for ok := it.first(); ok; ok = it.nextEntry() {
		var dst *BlockHandle
		switch string(it.key) {
		case "rocksdb.properties":
			dst, hasProps = &props, true
		case "rocksdb.range_del":
			dst, t.hasRange = &t.rangeDel, true
		default:
			// Filters, compression dictionaries and hash-index prefixes
			// only speed up lookups; a scan does without them.
			continue
		}
		h, n := decodeHandle(it.val)
		if n == 0 || n != len(it.val) {
			return loc.corrupt("entry at %d: bad block handle for %q", it.off, it.key)
		}
		*dst = h
	}
	if it.err != nil {
		return it.err
	}
	if !hasProps {
		return loc.corrupt("no properties block")
	}
	ploc := location{file: t.name, off: int64(props.Offset), what: "properties block"}
	pdata, err := t.readBlock(props, ploc, nil)
	if err != nil {
		return err
	}
	return t.props.decode(ploc, pdata)
}

// checkProperties refuses the table variants this reader does not order
// or index correctly.
func (t *Table) checkProperties() error {
	p := &t.props
	loc := location{file: t.name, off: -1, what: "properties"}
	if p.Comparator != "" && p.Comparator != BytewiseComparator {
		return loc.unsupported("comparator %q (this reader orders keys bytewise)", p.Comparator)
	}
	if p.IndexType != indexBinarySearch {
		return loc.unsupported("index type %d (this reader reads binary-search indexes)", p.IndexType)
	}
	if p.IndexPartitions != 0 {
		return loc.unsupported("partitioned index")
	}
	if (p.IndexKeyIsUserKey || p.IndexValueIsDeltaEncoded) && t.footer.FormatVersion < 3 {
		return loc.corrupt("format version %d with index options of version 3 or later", t.footer.FormatVersion)
	}
	return nil
}

// Tombstone is a range deletion: it deletes the user keys in [Start, End)
// of every entry older than Seq.
type Tombstone struct {
	Start, End []byte
	Seq        uint64
}

// RangeTombstones reads the table's range-deletion block; a table without
// one has none. The slices are the caller's.
func (t *Table) RangeTombstones() ([]Tombstone, error) {
	if !t.hasRange {
		return nil, nil
	}
	loc := location{file: t.name, off: int64(t.rangeDel.Offset), what: "range deletion block"}
	data, err := t.readBlock(t.rangeDel, loc, nil)
	if err != nil {
		return nil, err
	}
	var it blockIter
	// Older RocksDB releases wrote this block unsorted: no order check.
	if err := it.init(loc, data, false, nil); err != nil {
		return nil, err
	}
	var out []Tombstone
	for ok := it.first(); ok; ok = it.nextEntry() {
		k, err := parseKey(it.key)
		if err != nil {
			return nil, loc.corrupt("entry at %d: %v", it.off, err)
		}
		if k.Kind != KindRangeDelete {
			return nil, loc.corrupt("entry at %d: %v entry in the range deletion block", it.off, k.Kind)
		}
		out = append(out, Tombstone{
			Start: bytes.Clone(k.UserKey),
			End:   bytes.Clone(it.val),
			Seq:   k.Seq,
		})
	}
	return out, it.err
}

// parseKey splits an encoded internal key of a data or range-deletion
// block.
func parseKey(k []byte) (InternalKey, error) {
	if len(k) < 8 {
		return InternalKey{}, fmt.Errorf("internal key of %d bytes, shorter than its trailer", len(k))
	}
	n := len(k) - 8
	trailer := binary.LittleEndian.Uint64(k[n:])
	return InternalKey{UserKey: k[:n:n], Seq: trailer >> 8, Kind: Kind(trailer)}, nil
}
