// Package statetest is the conformance suite that every keyed-state backend
// passes, in the manner of restic's backend test suite: the semantics of each
// primitive, TTL under every update type and visibility, timers, snapshots in
// the canonical format, restore at other parallelisms, and, with RunCross,
// that two backends are interchangeable down to the bytes of a savepoint.
//
// A backend's tests call it with a factory:
//
//	func TestConformance(t *testing.T) { statetest.Run(t, newBackend) }
//	func TestCross(t *testing.T)       { statetest.RunCross(t, newHeap, newBackend) }
//
// RunCheckpoint checks a backend's own checkpoint layout against the
// canonical savepoint: the same entries, restorable into any backend.
//
// Tests of an optional capability (state.IncrementalCleaner, state.Sweeper)
// skip when the backend lacks it. The exported helpers write savepoints of
// backends, and count and dump their entries, for other tests of the engine;
// the generic savepoint readers (a state's entries, a directory's files) are
// internal/sptest's.
package statetest
