// Package sptest reads and writes savepoints in tests across the module:
// the decoded entries of one state or timer service, the contents of every
// state in a form comparable between savepoints of any layout, the files of
// a savepoint directory for byte-for-byte comparisons, and a savepoint
// written from entries. It depends on the format packages only, not on the
// engine, so that the engine's own tests and the backend conformance suite
// (engine/state/statetest) can use it.
package sptest
