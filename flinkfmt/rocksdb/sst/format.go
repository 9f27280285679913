package sst

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"

	"github.com/zeebo/xxh3"
)

// The block-based table's fixed numbers, from RocksDB's table/format.h.
const (
	magicNumber       = 0x88e241b785f4cff7
	legacyMagicNumber = 0xdb4775248b80fb57
	// footerLen is the footer of format versions 1 to 5: checksum type,
	// two block handles padded to 40 bytes, format version, magic.
	footerLen = 1 + 2*maxHandleLen + 4 + 8
	// legacyFooterLen is format version 0's footer, without checksum type
	// and version.
	legacyFooterLen = 2*maxHandleLen + 8
	maxHandleLen    = 20
	// blockTrailerLen follows every block: compression type and checksum.
	blockTrailerLen = 5

	minFormatVersion = 1
	maxFormatVersion = 5
)

// ChecksumType is the footer's block checksum algorithm.
type ChecksumType uint8

// The checksum types RocksDB defines; this reader verifies CRC32c and XXH3.
const (
	ChecksumNone     ChecksumType = 0
	ChecksumCRC32c   ChecksumType = 1
	ChecksumXXHash   ChecksumType = 2
	ChecksumXXHash64 ChecksumType = 3
	ChecksumXXH3     ChecksumType = 4
)

func (c ChecksumType) String() string {
	switch c {
	case ChecksumNone:
		return "none"
	case ChecksumCRC32c:
		return "CRC32c"
	case ChecksumXXHash:
		return "xxHash"
	case ChecksumXXHash64:
		return "xxHash64"
	case ChecksumXXH3:
		return "XXH3"
	}
	return "checksum type " + strconv.Itoa(int(c))
}

// Compression is a block's compression type, the first byte of its trailer.
type Compression uint8

// The compression types RocksDB defines; this reader decompresses Snappy.
const (
	NoCompression     Compression = 0
	SnappyCompression Compression = 1
	ZlibCompression   Compression = 2
	BZip2Compression  Compression = 3
	LZ4Compression    Compression = 4
	LZ4HCCompression  Compression = 5
	XpressCompression Compression = 6
	ZSTDCompression   Compression = 7
)

func (c Compression) String() string {
	names := [...]string{"none", "Snappy", "Zlib", "BZip2", "LZ4", "LZ4HC", "Xpress", "ZSTD"}
	if int(c) < len(names) {
		return names[c]
	}
	return "compression type " + strconv.Itoa(int(c))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// blockChecksum is RocksDB's ComputeBuiltinChecksumWithLastByte over a
// block followed by its compression type byte, as they lie in the file: the
// masked CRC-32C of both, or the low 32 bits of XXH3-64 of the block mixed
// with the type byte.
func blockChecksum(t ChecksumType, blockAndType []byte) uint32 {
	n := len(blockAndType) - 1
	switch t {
	case ChecksumCRC32c:
		return maskCRC(crc32.Checksum(blockAndType, castagnoli))
	case ChecksumXXH3:
		return uint32(xxh3.Hash(blockAndType[:n])) ^ uint32(blockAndType[n])*0x6b9083d9
	}
	return 0
}

// maskCRC is RocksDB's crc32c::Mask: a CRC stored next to the data it covers
// is rotated and offset so that CRCs of CRCs do not degenerate.
func maskCRC(c uint32) uint32 { return (c>>15 | c<<17) + 0xa282ead8 }

// BlockHandle locates a block: its offset and its length without the
// trailer.
type BlockHandle struct {
	Offset, Length uint64
}

// decodeHandle reads a handle at the start of b and returns the bytes it
// took, or 0 when b does not start with two varints.
func decodeHandle(b []byte) (BlockHandle, int) {
	off, n := binary.Uvarint(b)
	if n <= 0 {
		return BlockHandle{}, 0
	}
	length, m := binary.Uvarint(b[n:])
	if m <= 0 {
		return BlockHandle{}, 0
	}
	return BlockHandle{Offset: off, Length: length}, n + m
}

// Footer is what the last bytes of a table say.
type Footer struct {
	FormatVersion uint32
	Checksum      ChecksumType
	MetaIndex     BlockHandle
	Index         BlockHandle
}

// Kind is the type byte of an internal key.
type Kind uint8

// The kinds a table of this subset holds. The data blocks hold point
// entries; range deletions live in their own block.
const (
	KindDelete       Kind = 0x0
	KindSet          Kind = 0x1
	KindMerge        Kind = 0x2
	KindSingleDelete Kind = 0x7
	KindRangeDelete  Kind = 0xF
)

func (k Kind) String() string {
	switch k {
	case KindDelete:
		return "DELETE"
	case KindSet:
		return "SET"
	case KindMerge:
		return "MERGE"
	case KindSingleDelete:
		return "SINGLEDEL"
	case KindRangeDelete:
		return "RANGEDEL"
	}
	return fmt.Sprintf("kind %#x", uint8(k))
}

// kindName names the RocksDB value types this reader refuses, so that the
// error says what the table holds.
func kindName(k Kind) string {
	switch k {
	case 0x11:
		return "blob index"
	case 0x14:
		return "deletion with timestamp"
	case 0x16:
		return "wide-column entity"
	case 0x18:
		return "value with preferred sequence number"
	}
	return ""
}

// InternalKey is a user key with the sequence number and kind RocksDB
// appends to it.
type InternalKey struct {
	UserKey []byte
	Seq     uint64
	Kind    Kind
}

// compareInternal orders encoded internal keys as RocksDB's bytewise
// internal comparator does: user keys ascending, then the trailer (sequence
// number and kind) descending, so that the newest entry of a user key comes
// first. Keys shorter than a trailer compare as bare user keys; the table
// iterator refuses them before they escape.
func compareInternal(a, b []byte) int {
	ua, ta := splitInternal(a)
	ub, tb := splitInternal(b)
	if c := bytes.Compare(ua, ub); c != 0 {
		return c
	}
	switch {
	case ta > tb:
		return -1
	case ta < tb:
		return 1
	}
	return 0
}

func splitInternal(k []byte) ([]byte, uint64) {
	if len(k) < 8 {
		return k, 0
	}
	n := len(k) - 8
	return k[:n], binary.LittleEndian.Uint64(k[n:])
}

// seekKey is the smallest internal key of userKey: the largest trailer.
func seekKey(dst, userKey []byte) []byte {
	dst = append(dst[:0], userKey...)
	return append(dst, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
}
