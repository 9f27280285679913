// Package flinkfmt reads Apache Flink's savepoints and checkpoints without a
// JVM: the _metadata file (versions 2 to 7), its state handles, the keyed
// state of the canonical and heap layouts (with or without Snappy) and of
// RocksDB's native savepoints and incremental checkpoints (SST files,
// through package flinkfmt/rocksdb), timers (also the raw keyed timers of
// Flink before 1.10), and operator list, union and broadcast state.
// OpenCheckpoint reads a retained checkpoint in the directory layout of
// Flink's checkpoint storage, shared files included. It sits in the format
// layer beside snapshotfmt, which is stateproc's own layout; the toolkit's
// read seam adapts it to savepoint.Source.
//
// It also writes what a rewrite of a Flink savepoint needs (write_*.go):
// _metadata of versions 2 to 5 byte for byte as Flink writes it, keyed
// streams in the canonical layout that every backend restores, the
// input's headers carried over as bytes, and serializer snapshots and
// headers built from scratch, and a native handle's pairs as the database
// holds them (Keyed.OpenNative), for the conversion to the canonical
// layout. The rewrites themselves are in flinkfmt/flinkrewrite.
//
// Reading follows the serializer snapshots the savepoint carries: package
// flinkfmt/typeser restores them into decoders, so no job classes are
// needed. Entries come key group by key group in the model of
// savepoint.Entry; memory is bounded by one key group, and for native
// RocksDB handles, whose key groups are streamed, by the number of tables.
//
// Everything read is untrusted: lengths are checked before allocation,
// Java object streams are parsed with bounds, and paths recorded in the
// metadata never leave the savepoint directory unless Options.PathMap says
// so. Structural errors wrap ErrCorrupt (which also matches
// snapshotfmt.ErrCorrupt); parts this reader cannot read yet (the
// changelog layout, serializer snapshot classes it does not know) wrap
// ErrUnsupported and name what they are. FORMAT-NOTES.md lists
// what is supported.
package flinkfmt
