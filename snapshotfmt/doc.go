// Package snapshotfmt reads and writes stateproc's own savepoint layout: a
// directory holding a `_metadata` file and the data files it indexes. The
// byte layout is specified in FORMAT.md beside this file; that document is
// normative and format_doc_test.go keeps it and the code in agreement.
//
// The package maps the layout to and from the layout-independent model in
// package savepoint. Open reads and checks the metadata; Reader.Entries
// streams the entries of one (key group, state) segment, one block in memory
// at a time, verifying checksums and every ordering rule as it goes; Verify
// does that for a whole savepoint. NewWriter stages a new savepoint: entries
// are added segment by segment into data files, unchanged segments can be
// copied from another savepoint as opaque bytes, and Finish writes the
// metadata last and publishes the directory in one step. Reader.Source
// presents a savepoint as the layout-independent savepoint.Source.
//
// Every length read from a file is checked against the bytes that remain
// before anything is allocated for it, so corrupt or hostile input gets an
// *Error naming the file, key group and offset, never a panic.
package snapshotfmt
