// Package heapbackend is the engine's in-memory keyed-state backend, the
// counterpart of Flink's HashMapStateBackend: state is kept as the Go values
// the handles pass in, organized per key group so that snapshots and restores
// work one key group at a time.
//
// Keys, namespaces and map keys are identified by their serialized bytes, and
// every ordering (map iteration, timers, snapshot records) is the byte order
// the Pebble backend and the snapshot format use, so a job behaves and
// snapshots identically on both backends. Serialization happens only at
// snapshot and restore.
//
// TTL is applied by the typed handles in package state; this package adds
// what only a heap can do cheaply: incremental cleanup, which examines a
// bounded number of entries on each state access (state.IncrementalCleaner).
package heapbackend
