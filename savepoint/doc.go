// Package savepoint is the toolkit's model of a savepoint: operators, their
// keyed states, timer services, operator and broadcast state, the serializer
// snapshots that describe every byte, and the entries of a state per key
// group.
//
// The model is independent of any byte layout. Package snapshotfmt reads and
// writes stateproc's own layout into this model; a reader for another layout
// (Apache Flink's savepoints) can feed the same tools by producing the same
// types.
package savepoint
