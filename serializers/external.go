package serializers

import (
	"encoding/json"
	"fmt"
)

// KindExternal is a serializer of another project's layout (Apache
// Flink's), which that layout's reader restored from its own snapshot: the
// toolkit decodes and describes its values and never writes them.
// Snapshot.External holds it; such a snapshot is never written into a
// savepoint or a manifest.
const KindExternal Kind = "external"

// External is the serializer a KindExternal snapshot holds. Its values
// are its own Go forms; the layout's reader documents them.
type External interface {
	// String describes the type for people, as Snapshot.String does.
	String() string
	// DecodeAny decodes src, which holds exactly one value; its errors
	// wrap ErrDecode.
	DecodeAny(src []byte) (any, error)
	// MarshalJSON describes the serializer where the toolkit records the
	// snapshots it read from (export's file metadata).
	MarshalJSON() ([]byte, error)
}

// KeyGrouper is implemented by the external key serializers of layouts
// that assign key groups from key values rather than key bytes (Apache
// Flink hashes Java's hashCode). ParseKey reads a key given as text into
// the value DecodeAny gives; KeyGroup returns the key group of such a value
// under maxParallelism, or false when the layout's hash of it is not defined
// by its value, so that a lookup reads every key group.
type KeyGrouper interface {
	ParseKey(text string) (any, error)
	KeyGroup(key any, maxParallelism int) (int, bool)
}

// ExternalSnapshot wraps e as a snapshot.
func ExternalSnapshot(e External) Snapshot { return Snapshot{Kind: KindExternal, External: e} }

// external is the Serializer of a KindExternal snapshot.
type external struct{ snap Snapshot }

func (e external) Snapshot() Snapshot { return e.snap }

func (e external) AppendAny(dst []byte, _ any) ([]byte, error) {
	return dst, encodeErr("%s values are read, never written", e.snap.External)
}

func (e external) Decode(src []byte) (any, error) { return e.DecodeAny(src) }

func (e external) Append(dst []byte, v any) ([]byte, error) { return e.AppendAny(dst, v) }

func (e external) DecodeAny(src []byte) (any, error) { return e.snap.External.DecodeAny(src) }

func (e external) String() string { return fmt.Sprint(e.snap.External) }

var _ json.Marshaler = External(nil)

// NamespaceKind is KindVoid or KindWindow for a namespace serializer of
// either kind, and s.Kind otherwise. An external serializer is one of them
// when it implements NamespaceKind() Kind: void when its values are all
// the one void namespace (whatever its bytes), window when its values are
// time windows stored as KindWindow stores them, start and end as
// big-endian int64 milliseconds.
func (s Snapshot) NamespaceKind() Kind {
	if s.Kind != KindExternal {
		return s.Kind
	}
	if n, ok := s.External.(interface{ NamespaceKind() Kind }); ok {
		return n.NamespaceKind()
	}
	return s.Kind
}

// Opaquer is implemented by external serializers whose values may hold
// parts that only the job's classes decode, kept as bytes: Opaque returns
// the class of each such part of v, a value DecodeAny gave.
type Opaquer interface {
	Opaque(v any) []string
}
