// Package sst reads RocksDB's block-based table files (.sst), the files
// that hold a Flink job's keyed state in native RocksDB savepoints and
// incremental checkpoints. It sits below package rocksdb, which merges the
// tables of one column family into the state's current entries; it knows
// nothing of Flink.
//
// Open reads a table through a storage.File (ranged reads only, so tables
// may live in a bucket): the footer, the metaindex block, the properties
// block (column family name and id, comparator, merge operator,
// compression, entry counts, raw sizes) and the index block, which it keeps
// in memory. Iter walks the point entries in internal-key order, one data
// block in memory at a time, with SeekGE through the index; RangeTombstones
// reads the range-deletion block.
//
// Supported, because Flink's RocksDB builds write it (FRocksDB 6.20.3 for
// Flink 1.16 to 1.20, RocksDB 8.10 for Flink 2.0):
//   - format versions 1 to 5, the footer with a checksum type;
//   - CRC32c (masked, as RocksDB stores it) and XXH3 block checksums,
//     verified on every block read;
//   - uncompressed and Snappy-compressed blocks;
//   - data blocks with restart points and shared-prefix keys;
//   - binary-search index blocks of internal keys or of user keys, with
//     full or delta-encoded block handles (format version 4 and later);
//   - entries SET, MERGE, DELETE and SINGLEDEL, and the range-deletion
//     block.
//
// Refused with ErrUnsupported, naming what the table uses: format version
// 0 (legacy footer) and 6 or later; tables without checksums or with xxHash
// or xxHash64; compressions other than Snappy (zlib, bzip2, LZ4, Xpress,
// ZSTD); comparators other than leveldb.BytewiseComparator; hash, partitioned
// and first-key indexes; data blocks with a hash index; blob indexes,
// wide-column entities and entries with user timestamps; blocks larger
// than Options.MaxBlockSize. Filter blocks and compression dictionaries are
// skipped: a scan does not need them.
//
// Bad input is refused with ErrCorrupt, in an *Error that names the file
// and the offset of the block: checksum mismatches, truncation, block
// handles outside the file, varints and lengths that run past their block,
// restart arrays that do not fit or are out of order, Snappy blocks whose
// declared size exceeds what their length can encode, keys that do not
// increase or that leave the bounds their index entry gives. Nothing is
// allocated from a length before it is checked against what remains, and
// no input makes the reader panic (FuzzTable).
package sst
