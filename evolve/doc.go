// Package evolve checks a savepoint against a new build of its job and
// migrates it to the build's serializers: the library behind stateproc check
// and stateproc migrate.
//
// A Target is what the savepoint is held against: the operators a job
// declares, read from the manifest a built job prints (JobTarget), or the
// savepoint's own operators with new Avro schemas for some states
// (SchemaTarget).
//
// Check decides every operator, state, timer service, operator state and
// broadcast state with package compat, the code the engine runs when it
// restores, so that its verdict is the engine's: a savepoint Check finds
// restorable, the engine restores, migrating values as it reads them; one it
// does not, the engine refuses with the same reason. Some decisions need the
// data: a state whose new Avro schema removed a union branch (or an enum
// symbol without a default) migrates only if no value uses it, and one whose
// new schema makes some values nest deeper or hold items that take no bytes
// only if no value goes past the bounds every reader keeps. Check reads those
// states, and only those, value by value, and reports the first value that
// has no reading.
//
// Migrate rewrites the savepoint for the target, so that the job restores it
// as it is: every value, list element and map value of a state compatible
// after migration is rewritten from the old serializer to the new one (Avro
// resolved from the writer schema to the reader schema, TTL timestamps added
// or stripped), and the metadata records the new serializer snapshots. It
// first runs Check and refuses, before writing anything, a savepoint that is
// not restorable. It writes as every rewrite does (package rewrite): the
// input untouched, the output staged beside the target and renamed into
// place, one entry at a time, the segments of unchanged states copied as
// opaque bytes, the lineage extended.
package evolve
