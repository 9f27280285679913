package sst

import (
	"bytes"
	"encoding/binary"
)

// BytewiseComparator is the name of RocksDB's default comparator, the only
// one this reader orders keys by.
const BytewiseComparator = "leveldb.BytewiseComparator"

// indexBinarySearch is BlockBasedTableOptions::kBinarySearch.
const indexBinarySearch = 0

// Properties are the entries of a table's properties block that a reader
// needs or reports. Numbers are varints there; names are raw bytes.
type Properties struct {
	// ColumnFamilyID and ColumnFamilyName name the column family the table
	// belongs to; Flink gives each state its own.
	ColumnFamilyID   uint64
	ColumnFamilyName string
	Comparator       string
	// MergeOperator is the merge operator's name, "nullptr" when none.
	MergeOperator string
	// Compression names the table's configured compression; each block
	// says for itself whether it is compressed.
	Compression string

	NumEntries        uint64 // point entries and range deletions
	NumDeletions      uint64 // point and range deletions
	NumMergeOperands  uint64
	NumRangeDeletions uint64
	NumDataBlocks     uint64
	RawKeySize        uint64 // internal keys, before prefix compression
	RawValueSize      uint64
	DataSize          uint64
	IndexSize         uint64
	FilterSize        uint64
	CreationTime      uint64 // seconds since the Unix epoch
	FileCreationTime  uint64

	IndexType                uint32
	IndexPartitions          uint64
	IndexKeyIsUserKey        bool
	IndexValueIsDeltaEncoded bool
	// ExternalFileVersion is non-zero for a table written by SstFileWriter
	// and ingested; its sequence numbers are then assigned outside it.
	ExternalFileVersion uint64
}

func (p *Properties) decode(loc location, data []byte) error {
	var it blockIter
	if err := it.init(loc, data, false, bytes.Compare); err != nil {
		return err
	}
	for ok := it.first(); ok; ok = it.nextEntry() {
		name, v := string(it.key), it.val
		var num *uint64
		var flag *bool
		switch name {
		case "rocksdb.column.family.id":
			num = &p.ColumnFamilyID
		case "rocksdb.column.family.name":
			p.ColumnFamilyName = string(v)
		case "rocksdb.comparator":
			p.Comparator = string(v)
		case "rocksdb.merge.operator":
			p.MergeOperator = string(v)
		case "rocksdb.compression":
			p.Compression = string(v)
		case "rocksdb.num.entries":
			num = &p.NumEntries
		case "rocksdb.deleted.keys":
			num = &p.NumDeletions
		case "rocksdb.merge.operands":
			num = &p.NumMergeOperands
		case "rocksdb.num.range-deletions":
			num = &p.NumRangeDeletions
		case "rocksdb.num.data.blocks":
			num = &p.NumDataBlocks
		case "rocksdb.raw.key.size":
			num = &p.RawKeySize
		case "rocksdb.raw.value.size":
			num = &p.RawValueSize
		case "rocksdb.data.size":
			num = &p.DataSize
		case "rocksdb.index.size":
			num = &p.IndexSize
		case "rocksdb.filter.size":
			num = &p.FilterSize
		case "rocksdb.creation.time":
			num = &p.CreationTime
		case "rocksdb.file.creation.time":
			num = &p.FileCreationTime
		case "rocksdb.index.partitions":
			num = &p.IndexPartitions
		case "rocksdb.index.key.is.user.key":
			flag = &p.IndexKeyIsUserKey
		case "rocksdb.index.value.is.delta.encoded":
			flag = &p.IndexValueIsDeltaEncoded
		case "rocksdb.external_sst_file.version":
			num = &p.ExternalFileVersion
		case "rocksdb.block.based.table.index.type":
			// A fixed32, unlike the varints of the built-in properties.
			if len(v) != 4 {
				return loc.corrupt("entry at %d: %s of %d bytes", it.off, name, len(v))
			}
			p.IndexType = binary.LittleEndian.Uint32(v)
		}
		if num == nil && flag == nil {
			continue
		}
		x, n := binary.Uvarint(v)
		if n <= 0 || n != len(v) {
			return loc.corrupt("entry at %d: %s is not a varint", it.off, name)
		}
		if num != nil {
			*num = x
		} else {
			*flag = x != 0
		}
	}
	return it.err
}
