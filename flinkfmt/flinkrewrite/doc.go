// Package flinkrewrite rewrites Apache Flink savepoints without a JVM and
// without the job's code: Rescale (a new max parallelism, every key moved
// to the key group Flink's hash gives it), PruneTTL (entries of TTL states
// expired at a given time dropped), RemoveOperator, RenameOperator, and
// Convert (keyed state of the native RocksDB and heap layouts written in
// the canonical one, which every Flink backend restores). It
// sits between the format (package flinkfmt, which reads Flink's layouts
// and writes the canonical one) and the CLI, which wires these functions
// to the rules of package rewrite: the input is never modified, the output
// is staged beside its target and published in one step.
//
// Each function reads a flinkfmt.Reader and writes the output savepoint's
// files into a storage.Target, the _metadata last, in the metadata
// version of the input (2 to 5), so that the Flink that wrote a savepoint
// restores its rewrite; it neither publishes nor aborts the target. With
// a nil target it is a dry run: every check is made and the report
// computed (PruneTTL reads the TTL states to count what it would drop),
// nothing is written.
//
// Every request that cannot succeed is refused before anything is written,
// with an error wrapping rewrite.ErrRefused that names what is wrong: a key
// class whose Java hashCode is not defined by its value (a rescale would
// put its keys in key groups Flink does not look in, where they are lost
// on restore), a layout this package cannot rewrite (changelog; native
// RocksDB everywhere but in Convert, whose output the others take),
// handles its metadata writer does not keep whole.
//
// Keyed state is written in the canonical layout (FullSnapshotAsyncWriter):
// the keyed-stream header carried over as bytes, the key groups with
// Snappy when the input was compressed, streams of at most the inline
// threshold in the metadata as Flink keeps them, larger ones in files with
// UUID names that depend only on the input and the request, so that a
// rewrite is deterministic. What a rewrite does not change (other
// operators, operator and broadcast state, raw keyed state a prune keeps)
// is copied as bytes, handles and offsets as they were; the files of
// absolute file handles are copied into the output and referred to by
// relative handles, which Flink reads from 1.11 on. A file kept whole is
// copied by the store where the input lies in the target's (a bucket's
// server-side copy), unread, and through this process otherwise.
//
// Memory is bounded by one key group, plus, in a rescale that changes the
// max parallelism, the sort budget (RescaleOptions.Memory): entries are
// spilled into files by new key group and sorted in chunks (package
// internal/extsort), so a key group's entries come out in RocksDB's order,
// by composite key within each state.
package flinkrewrite
