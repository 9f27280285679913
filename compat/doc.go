// Package compat decides whether a job can restore a savepoint, and how:
// operator by operator, matched by uid, and within each operator its keyed
// states, timer services, operator states and broadcast states, each with a
// verdict and a reason.
//
// A reason names every incompatibility of a state, not only the first, and
// what a restore accepts as it is (a TTL of another length, another
// parallelism), so that a verdict of compatible as is still says what
// changed. Every refusal wraps ErrIncompatible.
//
// The engine applies these decisions when it restores (engine.Run and each
// backend's Restore) and stops at the first that refuses; stateproc check
// reports all of them and stateproc migrate acts on them. All three call
// this package, so a check never disagrees with a restore.
//
// The rules:
//
//   - Operators are matched by uid. A savepoint operator that no operator of
//     the job claims, and any state, timer service, operator state or
//     broadcast state of a matched operator that the job no longer
//     declares, is incompatible unless non-restored state is allowed; then
//     it is dropped. What the job declares and the savepoint lacks is new
//     and starts empty.
//   - A keyed operator keeps its key serializer as is and its key hash: a
//     key's bytes decide its key group, so a key that changed bytes would be
//     in the wrong key group and two keys could become one. Its max
//     parallelism stays that of the savepoint unless the job fixed another,
//     which is refused (stateproc rescale changes it); its parallelism must
//     not exceed it.
//   - A keyed state keeps its kind, its namespace serializer and its map-key
//     serializer as is, for the same reason as keys. Its stored value (with
//     the TTL timestamp when the state has TTL) follows serializers.Check:
//     compatible as is, after migration (which the engine does as it
//     restores, and Converter does for stateproc migrate), or incompatible.
//     Turning TTL on or off is a migration.
//   - Timer services keep their namespace serializer; operator states their
//     element serializer; broadcast states their key and value serializers:
//     the engine restores those as they are.
package compat
