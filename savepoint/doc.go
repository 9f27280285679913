// Package savepoint is the toolkit's model of a savepoint: operators, their
// keyed states, timer services, operator and broadcast state, the serializer
// snapshots that describe every byte, and the entries of a state per key
// group.
//
// The model is independent of any byte layout. Package snapshotfmt reads and
// writes stateproc's own layout into this model; a reader for another layout
// (Apache Flink's savepoints) can feed the same tools by producing the same
// types. Source is that boundary: the metadata and the entries of a state
// per key-group range, from a canonical savepoint (snapshotfmt's
// Reader.Source) as from the engine's incremental checkpoints, and what a
// state backend restores from.
package savepoint
