// Package keyhash assigns keys to key groups as Apache Flink does, for the
// Flink layout reader (flinkfmt): Java's hashCode of the key, mixed by
// MathUtils.murmurHash, modulo the max parallelism.
//
// stateproc's own savepoints hash the serialized key instead (package
// keygroup); a Flink savepoint needs Flink's function to find the key group
// of a key without reading them all. HashCode computes Java's hashCode for
// the decoded key values where Java defines it by value: strings (over
// their UTF-16 units), boxed primitives, and Flink tuples of those. Enums
// hash by identity, a POJO may override hashCode, a Row's hash involves an
// enum, and Scala case classes hash through Scala's own murmur: for them
// HashCode reports false, and a lookup must scan every key group.
//
// Hashable and KeyGroupOf serve rewrites that move keys to new key groups
// (a rescale): they decide from the key serializer, before anything is
// written, whether keys can be moved at all, and hash a key from its bytes,
// strings over the UTF-16 units as stored.
package keyhash
