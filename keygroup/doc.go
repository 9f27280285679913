// Package keygroup holds the arithmetic that partitions keyed state: which key
// group a key belongs to, which subtask owns a key group, and which key-group
// range a subtask owns.
//
// The hash is murmur3_32 (seed 0) over the key serializer's output, read as an
// unsigned 32-bit integer. Flink hashes Java's hashCode() instead; hashing the
// serialized key is what lets the toolkit re-bucket keys without the job's code.
// The range formulas are Flink's.
package keygroup
