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
// savepoint as opaque bytes, and Finish writes the metadata last and
// publishes the directory in one step. Tally gives the index figures of
// entries that come from elsewhere. Only the seam's own layouts, package
// rewrite and the engine import this package; the tools read through
// savepoint.Source.
//
// Every length read from a file is checked against the bytes that remain
// before anything is allocated for it, so corrupt or hostile input gets a
// *savepoint.Error naming the file, key group and offset, wrapping this
// package's sentinels and the seam's, never a panic.
package snapshotfmt
