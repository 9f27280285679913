// Package avrobin reads the Avro binary encoding and parses Avro schemas
// with the bounds that make untrusted bytes and schemas safe to read. It is
// the one place that knows them: the serializers' validator and transcoder,
// export's Avro to Arrow decoder and the sizing model's walk all read
// through its Cursor, and every schema, whether it comes from a savepoint's
// metadata, a serializer snapshot or a job, is parsed by ParseSchema.
//
// # Bounds on data
//
// A Cursor checks every length and count against the bytes that remain
// before a caller sizes anything from it. Items that take no bytes (nulls,
// records of nulls) cannot be checked so: a datum holds at most
// MaxZeroWidthItems of them. Callers bound nesting with CheckDepth at
// MaxDepth levels. Ints and longs must not overflow, though they need not
// be in their shortest form; strings and map keys must be UTF-8.
//
// # Bounds on schemas
//
// ParseSchema refuses, before hamba/avro parses it, JSON nested deeper than
// a schema within the bounds needs; after parsing, a schema whose values
// would nest deeper than MaxDepth without recursion (recursive schemas are
// bounded by their data, with CheckDepth) and a fixed type larger than
// MaxFixedSize. Both would make readers allocate from the schema alone: a
// fixed's size is the width of every value, and each level of nesting is a
// builder in export.
package avrobin
