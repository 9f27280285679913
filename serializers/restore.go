package serializers

import (
	"fmt"

	"github.com/stateproc/stateproc/internal/avrobin"
)

// maxSnapshotDepth bounds how deep snapshots nest, as the savepoint format
// does.
const maxSnapshotDepth = 32

// argCounts is the number of nested serializers of each kind.
var argCounts = map[Kind]int{
	KindBool: 0, KindInt32: 0, KindInt64: 0, KindFloat32: 0, KindFloat64: 0,
	KindString: 0, KindBytes: 0, KindTimestamp: 0, KindAvro: 0,
	KindList: 1, KindMap: 2, KindNullable: 1, KindTTL: 1, KindTimer: 2,
	KindVoid: 0, KindWindow: 0, KindExternal: 0,
}

// Restore builds the serializer a snapshot describes, without the job's
// code. Its values are the untyped forms listed in the package
// documentation. It refuses unknown kinds, wrong numbers of arguments, Avro
// schemas that do not parse and nesting deeper than 32.
func Restore(s Snapshot) (Serializer, error) {
	return restore(s, 1)
}

func restore(s Snapshot, depth int) (Of[any], error) {
	if err := checkShape(s, depth); err != nil {
		return nil, err
	}
	switch s.Kind {
	case KindBool:
		return asAny(Bool()), nil
	case KindInt32:
		return asAny(Int32()), nil
	case KindInt64:
		return asAny(Int64()), nil
	case KindFloat32:
		return asAny(Float32()), nil
	case KindFloat64:
		return asAny(Float64()), nil
	case KindString:
		return asAny(String()), nil
	case KindBytes:
		return asAny(Bytes()), nil
	case KindTimestamp:
		return asAny(Timestamp()), nil
	case KindVoid:
		return asAny(Void()), nil
	case KindWindow:
		return asAny(Window()), nil
	case KindExternal:
		return external{s}, nil
	case KindAvro:
		a, err := newAvro[any](s.Schema)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSnapshot, err)
		}
		return a, nil
	}
	args := make([]Of[any], len(s.Args))
	for i, a := range s.Args {
		var err error
		if args[i], err = restore(a, depth+1); err != nil {
			return nil, err
		}
	}
	switch s.Kind {
	case KindList:
		return asAny(List(args[0])), nil
	case KindMap:
		return asAny(entriesSer{key: args[0], val: args[1], keyCheck: validatorOf(args[0]), valCheck: validatorOf(args[1])}), nil
	case KindNullable:
		return optionalSer{elem: args[0], elemCheck: validatorOf(args[0])}, nil
	case KindTTL:
		return asAny(TTL(args[0])), nil
	default: // KindTimer: checkShape knows no other kinds.
		return asAny(Timer(args[0], args[1])), nil
	}
}

// CheckDeclared checks a snapshot that a job declares, as Restore does one
// read from a savepoint and more strictly: the int and long defaults in its
// Avro schemas must be JSON integers in range (avrobin.FieldDefaults), since
// a migration writes them.
func CheckDeclared(s Snapshot) error {
	if _, err := Restore(s); err != nil {
		return err
	}
	return checkDefaults(s)
}

func checkDefaults(s Snapshot) error {
	if s.Kind == KindAvro {
		_, compact, err := avrobin.ParseSchema(s.Schema)
		if err == nil {
			_, err = avrobin.FieldDefaults(compact)
		}
		if err != nil {
			return fmt.Errorf("%w: avro: %w", ErrSnapshot, err)
		}
	}
	for _, a := range s.Args {
		if err := checkDefaults(a); err != nil {
			return err
		}
	}
	return nil
}

// checkShape checks what can be checked of a snapshot without its children.
func checkShape(s Snapshot, depth int) error {
	if depth > maxSnapshotDepth {
		return snapshotErr("nests deeper than %d", maxSnapshotDepth)
	}
	want, ok := argCounts[s.Kind]
	if !ok {
		return snapshotErr("unknown kind %q", s.Kind)
	}
	if len(s.Args) != want {
		return snapshotErr("%s takes %d nested serializers, has %d", s.Kind, want, len(s.Args))
	}
	if s.Kind != KindAvro && s.Schema != "" {
		return snapshotErr("%s has a schema; only avro does", s.Kind)
	}
	if (s.Kind == KindExternal) != (s.External != nil) {
		return snapshotErr("%s: only an external snapshot holds an external serializer, and it must", s.Kind)
	}
	return nil
}
