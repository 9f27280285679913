// Package savepoint is the toolkit's model of a savepoint, and the read
// seam through which the engine and every tool read one: operators, their
// keyed states, timer services, operator and broadcast state, the
// serializer snapshots that describe every byte, and the entries of a
// state per key group.
//
// The model is independent of any byte layout. Source is the seam: the
// metadata, the segments of a state (or timer service, named by a StateRef)
// per key-group range with the figures the layout keeps about them, and a
// streaming iterator over their entries with a sticky error. stateproc's own
// layout (package snapshotfmt) implements it, and so do the engine's
// incremental checkpoints; package layouts opens either, and a reader for
// another layout (Apache Flink's) is added there. Every layout's errors wrap
// this package's sentinels (ErrNotSavepoint, ErrCorrupt, ErrUnsupported) and
// locate themselves with an *Error, so that a tool maps them to exit codes
// without knowing the layout.
//
// A tool that reads many segments one after another, on workers that take
// them in order, reads them through a Walk (WalkSegments): a source in a
// bucket reads the next segments ahead of the workers, stateproc's by the
// byte ranges its index gives, Apache Flink's by starting their iterators
// ahead (StartAhead: an iterator that is a Primer makes its first read
// there, before its first entry), and one on disk iterates each as it
// comes.
//
// The package sits at the bottom, beside serializers, keygroup and ttl: it
// imports nothing of the engine or the tools.
package savepoint
