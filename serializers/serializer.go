package serializers

import "errors"

// Kind names a serializer. Kinds are stable: they are written into savepoints
// and manifests.
type Kind string

const (
	KindBool      Kind = "bool"
	KindInt32     Kind = "int32"
	KindInt64     Kind = "int64"
	KindFloat32   Kind = "float32"
	KindFloat64   Kind = "float64"
	KindString    Kind = "string"
	KindBytes     Kind = "bytes"
	KindTimestamp Kind = "timestamp"
	KindAvro      Kind = "avro"
	KindList      Kind = "list"
	KindMap       Kind = "map"
	KindNullable  Kind = "nullable"
	KindTTL       Kind = "ttl"
	KindTimer     Kind = "timer"
	KindVoid      Kind = "void"
	KindWindow    Kind = "window"
)

// Snapshot is everything needed to restore a serializer without the job's
// code: its kind, its Avro writer schema, and the snapshots of the serializers
// it is built from.
type Snapshot struct {
	Kind Kind
	// Schema is the Avro writer schema as JSON (KindAvro only).
	Schema string
	// Args are the nested serializers: [element] for list, nullable and ttl;
	// [key, value] for map; [key, namespace] for timer.
	Args []Snapshot
	// External is the serializer of a KindExternal snapshot; nil
	// otherwise.
	External External
}

// Serializer is the untyped view the toolkit uses: Go values in, bytes out,
// and back. See the package documentation for the Go value of each kind.
type Serializer interface {
	Snapshot() Snapshot
	// AppendAny appends the encoding of v to dst.
	AppendAny(dst []byte, v any) ([]byte, error)
	// DecodeAny decodes src, which must hold exactly one encoded value.
	DecodeAny(src []byte) (any, error)
}

// Of is the typed view job code uses.
type Of[T any] interface {
	Serializer
	// Append appends the encoding of v to dst.
	Append(dst []byte, v T) ([]byte, error)
	// Decode decodes src, which must hold exactly one encoded value.
	Decode(src []byte) (T, error)
}

// ErrDecode is wrapped by every error about bytes that do not decode.
var ErrDecode = errors.New("serializers: malformed value")
