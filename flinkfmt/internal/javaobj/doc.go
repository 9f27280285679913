// Package javaobj parses Java object serialization streams (the grammar of
// the Java Object Serialization Specification, chapter 6) into a tree of
// plain values, without the classes.
//
// Flink writes Java-serialized objects into savepoints in a few places: the
// values of JavaSerializer states, the LogicalTypes inside the Table API's
// RowData serializer snapshots, the serializers of Flink 1.3 to 1.6 legacy
// snapshots and the CheckpointProperties at the end of a _metadata file.
// flinkfmt and flinkfmt/typeser use this package to find where such an
// object ends and to read the fields they need.
//
// The input is untrusted. The parser is strictly bounded: by nesting depth,
// by the number of handles, by string and array sizes (checked against the
// bytes that remain before anything is allocated) and by the total number of
// values it builds. It handles the whole grammar except externalizable
// objects written with the old protocol version 1 (no block data), which
// cannot be walked without their class; those, and anything malformed, are
// refused with an error that names the offset.
package javaobj
