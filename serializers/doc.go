// Package serializers turns state keys, namespaces and values into bytes and
// back, for the engine and for the offline toolkit alike.
//
// Job code uses the typed constructors (Int64, String, Avro, Map, TTL, ...),
// each an Of[T]. Every serializer describes itself with a Snapshot, which the
// engine writes into savepoints. The toolkit, which does not have the job's
// code, rebuilds an untyped Serializer from the snapshot alone (Restore),
// asks whether a new serializer can read old data (Check), rewrites
// values for it (Migrator), and checks stored values without building them
// (Validator).
//
// # Encodings
//
// These bytes are a contract: savepoints store them and key groups hash the
// key's bytes, so they never change. Fixed-width integers are big-endian
// two's complement; uvarint is encoding/binary's unsigned varint in its
// shortest form.
//
//	kind       bytes
//	bool       1 byte: 00 false, 01 true
//	int32      4 bytes
//	int64      8 bytes
//	float32    4 bytes: the IEEE-754 bits, NaN payloads kept
//	float64    8 bytes: the IEEE-754 bits, NaN payloads kept
//	string     the UTF-8 bytes, no length prefix; invalid UTF-8 is refused
//	bytes      the bytes, no length prefix; nil and empty are the same
//	timestamp  int64 milliseconds since the Unix epoch
//	avro       the Avro binary encoding of one datum, no header, in canonical
//	           form: each array and map one block with a plain count, map
//	           entries sorted by the bytes of their keys
//	list       uvarint n, then n times: uvarint length, element
//	map        uvarint n, then n times: uvarint key length, key, uvarint
//	           value length, value; sorted by key bytes, strictly increasing
//	nullable   00 for null; 01 followed by the element
//	ttl        int64 last-modified milliseconds, then the element
//	timer      uint64(timestamp) XOR 1<<63 in 8 bytes (so that encodings sort
//	           as the timestamps do), uvarint key length, key, then the
//	           namespace to the end
//	void       nothing
//	window     int64 start, int64 end
//
// Examples, each checked against the code by a test:
//
//	bool true → 01
//	int32 -2 → ff ff ff fe
//	int64 42 → 00 00 00 00 00 00 00 2a
//	float32 1.5 → 3f c0 00 00
//	float64 -2.25 → c0 02 00 00 00 00 00 00
//	string "héllo" → 68 c3 a9 6c 6c 6f
//	bytes {00 ff} → 00 ff
//	timestamp 2023-11-14T22:13:20Z → 00 00 01 8b cf e5 68 00
//	avro map<long> {"b": 1, "a": 2} → 04 02 61 04 02 62 02 00
//	list<int64> [1, 2] → 02 08 00 00 00 00 00 00 00 01 08 00 00 00 00 00 00 00 02
//	map<string,int32> {"b": 1, "a": 2} → 02 01 61 04 00 00 00 02 01 62 04 00 00 00 01
//	nullable<int32> null → 00
//	nullable<int32> 7 → 01 00 00 00 07
//	ttl<string> (1000, "x") → 00 00 00 00 00 00 03 e8 78
//	timer<string,void> (-1, "k") → 7f ff ff ff ff ff ff ff 01 6b
//	timer<string,window> (5, "k", [1, 2)) → 80 00 00 00 00 00 00 05 01 6b 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 02
//	void → (nothing)
//	window [1, 2) → 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 02
//
// # Go values
//
// A typed serializer's AppendAny takes its T and its DecodeAny returns a T.
// A restored serializer uses the untyped forms:
//
//	kind       typed                            untyped
//	bool ...   Bool() Of[bool] ...              bool, int32, int64, float32, float64, string, []byte, time.Time
//	avro       Avro[T], AvroGeneric             hamba's generic values: map[string]any for records,
//	                                            string for enums, [N]byte for fixed; a union is
//	                                            nil, a primitive branch's value, or
//	                                            map[string]any{"name": value} for other branches
//	list       List(e) Of[[]T]                  []any
//	map        Map(k, v) Of[map[K]V]            []MapEntry, sorted by encoded key
//	nullable   Nullable(e) Of[*T]               nil, or the element's value; Present{v} when
//	                                            that value is itself nil or a Present
//	ttl        TTL(e) Of[TTLValue[T]]           TTLValue[any]
//	timer      Timer(k, n)                      TimerValue[any, any]
//	void       Void() Of[VoidNamespace]         VoidNamespace{}
//	window     Window() Of[TimeWindow]          TimeWindow
//
// A restored serializer writes the same bytes as the typed one it was
// snapshotted from, for the same value.
//
// # Untrusted bytes
//
// Decode never panics and never sizes an allocation from the input without
// checking it against the bytes that remain. It consumes all of src: a
// shorter or longer value is an error. Every decode error wraps ErrDecode
// and says what is wrong; every encode error wraps ErrEncode and leaves dst
// as it was. Since the encodings other than Avro admit one form per value,
// decoding and re-encoding gives back the input.
//
// Avro input is first checked against the schema by this package, because
// hamba trusts lengths and counts and reads a truncated datum as zeros. The
// check accepts every block form the specification allows (several blocks,
// negative counts with a byte size that must match) and non-shortest
// varints; re-encoding writes the canonical form. It refuses ints and longs
// that overflow, out-of-range enum and union indexes, repeated map keys,
// data nesting deeper than 1000 levels and more than 65536 array items that
// take no bytes (nulls, empty records), decimals with more digits than
// their precision, and strings and map keys that are not UTF-8 (which
// hamba does not check; Append refuses them too, so that what the engine
// writes it reads back). The walk is internal/avrobin's cursor, which
// export's decoder uses too: the two accept the same bytes. Schemas are
// parsed with its bounds (see avrobin.ParseSchema). Since non-canonical
// Avro decodes, two different byte strings can be the same value; a typed
// map reports such keys as a duplicate.
//
// # Compatibility
//
// Check classifies a new serializer against the snapshot of an old one as
// Flink does: compatible as is, compatible after migration, or incompatible,
// with a reason. Avro follows the specification's schema resolution, except
// that any change of logical type, or of a decimal's precision or scale, is
// incompatible. Migrator rewrites values for pairs that are compatible after
// migration. As in the specification, a writer union branch that the reader
// has no match for, and a writer enum symbol that the reader lacks and has
// no default for, fail only the values that use them, as do bytes that are
// not UTF-8 read as a string: such a pair is compatible after migration
// with DataDependent set, and the migration of such a value fails with
// ErrUnreadable; whether a savepoint can migrate is then known only by
// reading its values. The empty union [] has no values: any schema reads
// it as is. A reason names every incompatibility, and every change.
//
// The untyped value of an Avro null is nil, which a serializer of T = any
// (AvroGeneric, a restored one) encodes; As converts such values.
package serializers
