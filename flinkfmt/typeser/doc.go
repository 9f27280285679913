// Package typeser restores Apache Flink type serializers from the
// serializer snapshots that a Flink savepoint carries, without the job's
// classes, as decoders of plain Go values and as descriptions of their types.
//
// It sits under flinkfmt, the reader of Flink's savepoint layouts: flinkfmt
// parses the keyed-stream and operator-state headers, hands each serializer
// snapshot to ReadProxied or ReadVersioned (ReadLegacySerializers for the
// Java-serialized serializers of Flink 1.3 to 1.6), and decodes keys,
// namespaces and values with the Serializer it gets back.
//
// # Go values
//
//	Flink serializer                 Go value
//	Boolean, Byte, Short, Int, Long  bool, int8, int16, int32, int64
//	Float, Double                    float32, float64
//	Char                             string of the one UTF-16 unit
//	String (StringValue encoding)    string, or nil for null
//	byte[]                           []byte; other primitive arrays as []any of their elements
//	BigInteger, BigDecimal           *big.Int, string (the decimal's plain form)
//	Date, Timestamp, Instant         time.Time, or nil for null
//	Enum, Scala Enumeration          the symbol as a string
//	Tuple, case class, POJO          RecordValue: the class and its fields in order
//	Row, RowData                     RecordValue with the RowKind in Kind
//	List, ArrayList, Traversable     []any
//	Map                              []MapEntry in stored order
//	Nullable, Scala Option           nil, or the element's value
//	Either, Scala Either             EitherValue
//	Try                              EitherValue (Left is the failure)
//	TTL                              TTLValue
//	Timer                            TimerValue
//	VoidNamespace                    VoidNamespace
//	TimeWindow, GlobalWindow         TimeWindow, GlobalWindow
//	Avro                             hamba's generic values, decoded by package serializers
//	Java serialization               strings and boxed primitives as above, others OpaqueValue
//	Kryo                             Kryo's default registrations (boxed primitives,
//	                                 String) as above; other classes OpaqueValue: the
//	                                 class name and the bytes
//
// # Framing
//
// Flink's serializers write no length of their own: a value's end is known
// only by decoding it. Decode takes bytes that hold exactly one value (the
// canonical layout frames every key and value); Read takes one value from
// the front of a stream (the heap layout writes values back to back).
// Kryo-serialized values of classes other than Kryo's default
// registrations cannot be decoded without their classes, so they can be
// taken as Opaque only where the frame ends with them; in a stream Read
// fails with ErrUnframed. Java-serialized values are walked with a
// bounded object-stream parser, so they are Opaque but framed. Skip finds
// a value's end as Read does, with its checks, without building it where
// the codec allows (keys, namespaces, list elements); Shape and Cursor
// describe and read the plain codecs (primitives, strings, constants,
// nullables, TTL values, tuples) for a caller that decodes values into
// columns of its own without a Go value for each.
//
// # Untrusted bytes
//
// Snapshots and values come from files an attacker may have written. No
// length or count read from them sizes an allocation before it is checked
// against the bytes that remain; nesting is bounded by MaxDepth; every error
// wraps ErrSnapshot or ErrValue and names the offset.
package typeser
