// Package snapshotfmt reads and writes stateproc's own savepoint layout: a
// directory holding a `_metadata` file and the data files it indexes. The
// byte layout is specified in FORMAT.md beside this file; that document is
// normative and format_doc_test.go keeps it and the code in agreement.
//
// The package maps the layout to and from the layout-independent model in
// package savepoint; it is one of the layouts behind the read seam. Open
// reads and checks the metadata and returns a Reader, a savepoint.Source:
// Segments lists the index's segments of a state, and Entries streams their
// entries, one block in memory at a time, verifying checksums and every
// ordering rule as it goes, and each segment against its index entry at its
// end. NewWriter stages a new savepoint: entries are added segment by
// segment into data files, unchanged segments can be copied from another
// savepoint as opaque bytes (checked on the way as a reader checks them,
// so that a copy never writes what a reader refuses), and Finish writes the
// metadata last and publishes the savepoint in one step. Data files are
// named after their bytes (see FORMAT.md), so that the same state gives the
// same names and an object store, which cannot rename, gets every file
// under its final name: into a bucket, the writer hashes what it writes
// and copies, spools its own bytes on local disk until the name is known
// (in a file of the temporary directory unlinked at once, so that a killed
// run leaves no spool), and leaves long runs of unchanged bytes to the
// store to copy. Tally gives the index figures of entries that come from
// elsewhere. Only the seam's own layouts, package
// rewrite and the engine import this package; the tools read through
// savepoint.Source.
//
// Every length read from a file is checked against the bytes that remain
// before anything is allocated for it, so corrupt or hostile input gets a
// *savepoint.Error naming the file, key group and offset, wrapping this
// package's sentinels and the seam's, never a panic. What a block costs is
// bounded by its largest item, not by the raw length it claims (large
// compressed blocks are streamed), and the buffers of large blocks of every
// reader of the process count against one budget, BlockMemory.
package snapshotfmt
