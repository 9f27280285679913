// Package rocksdb reads the keyed state of Apache Flink's RocksDB state
// backend from the files of a native savepoint or incremental checkpoint,
// without RocksDB: it merges the tables (package sst) of one column family,
// one Flink state, into that state's current entries, and parses the
// OPTIONS file for what that needs. It sits between package sst, which
// reads single tables, and the Flink layout reader, which maps handles,
// states and serializers; it knows Flink only through the key-group prefix.
//
// One keyed-state handle lists the files of one RocksDB instance: its .sst
// tables, MANIFEST, CURRENT and OPTIONS. Open the tables, Group them by
// column family (each table's properties name its own), and read each with
// an Iter:
//
//   - For each user key the entry with the highest sequence number over all
//     tables wins. DELETE and SINGLEDEL hide older entries; so does a range
//     tombstone of any table for the keys it covers below its sequence
//     number. Two entries of one user key with the same sequence number are
//     corruption.
//   - MERGE operands, Flink's ListState appends, are folded as RocksDB's
//     StringAppendTESTOperator does: the newest value below them (if any),
//     then each operand oldest first, joined with the delimiter the OPTIONS
//     file names or ','. A list's elements may sit in several tables;
//     keeping only the newest entry would drop them. Operands of any other
//     merge operator are refused.
//   - Keys are ordered bytewise; a table with another comparator is refused
//     when opened.
//   - An ingested (external) table can be read alone; among other tables it
//     is refused, as its sequence number is only in the MANIFEST, which this
//     package does not read.
//
// Flink's keys start with the key group: one byte when max parallelism is
// at most 128, else two, big-endian (KeyGroupPrefix). SeekPrefix yields
// one key group, so a reader streams key group by key group over the
// handle's range and never sees the entries of other key groups that a
// rescaled instance may still hold, as Flink skips them on restore. Timers
// live in column families of their own (_timer_state/event_NAME and
// _timer_state/processing_NAME).
//
// An Iter holds one data block per table, the versions of the current user
// key and the column family's range tombstones, so memory is bounded by the
// number of tables, not their size. Errors about file contents match
// sst.ErrCorrupt or sst.ErrUnsupported and name the file.
package rocksdb
