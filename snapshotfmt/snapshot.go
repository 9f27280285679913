package snapshotfmt

import (
	"fmt"
	"unicode/utf8"

	"github.com/stateproc/stateproc/internal/avrobin"
	"github.com/stateproc/stateproc/serializers"
)

// snapshotKinds maps the code of a serializer snapshot in the metadata to its
// kind; index 0 is no kind.
var snapshotKinds = [...]serializers.Kind{
	1:  serializers.KindBool,
	2:  serializers.KindInt32,
	3:  serializers.KindInt64,
	4:  serializers.KindFloat32,
	5:  serializers.KindFloat64,
	6:  serializers.KindString,
	7:  serializers.KindBytes,
	8:  serializers.KindTimestamp,
	9:  serializers.KindAvro,
	10: serializers.KindList,
	11: serializers.KindMap,
	12: serializers.KindNullable,
	13: serializers.KindTTL,
	14: serializers.KindTimer,
	15: serializers.KindVoid,
	16: serializers.KindWindow,
}

// maxSnapshotDepth bounds the nesting of snapshots, and with it the
// recursion of the decoder on hostile input. A top-level snapshot is at
// depth 1.
const maxSnapshotDepth = 32

func snapshotCode(k serializers.Kind) (uint8, bool) {
	for code, kind := range snapshotKinds {
		if code > 0 && kind == k {
			return uint8(code), true
		}
	}
	return 0, false
}

// snapshotArity is the number of nested snapshots a kind has.
func snapshotArity(k serializers.Kind) int {
	switch k {
	case serializers.KindList, serializers.KindNullable, serializers.KindTTL:
		return 1
	case serializers.KindMap, serializers.KindTimer:
		return 2
	}
	return 0
}

// checkSnapshot checks a snapshot that is about to be written against the
// rules the reader enforces.
func checkSnapshot(s serializers.Snapshot, depth int) error {
	if depth > maxSnapshotDepth {
		return fmt.Errorf("serializer snapshots nest deeper than %d", maxSnapshotDepth)
	}
	if _, ok := snapshotCode(s.Kind); !ok {
		return fmt.Errorf("unknown serializer kind %q", s.Kind)
	}
	if s.Kind == serializers.KindAvro {
		if err := checkAvroSchema(s.Schema); err != nil {
			return err
		}
	} else if s.Schema != "" {
		return fmt.Errorf("%s serializer has a schema; only avro has one", s.Kind)
	}
	if len(s.Args) != snapshotArity(s.Kind) {
		return fmt.Errorf("%s serializer has %d nested serializers, want %d", s.Kind, len(s.Args), snapshotArity(s.Kind))
	}
	for _, a := range s.Args {
		if err := checkSnapshot(a, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// checkAvroSchema parses the schema with the bounds that every reader of
// it applies, so that a schema too deep or with too large a fixed makes the
// savepoint corrupt for every command.
func checkAvroSchema(schema string) error {
	if !utf8.ValidString(schema) {
		return fmt.Errorf("avro schema is not valid UTF-8")
	}
	if _, _, err := avrobin.ParseSchema(schema); err != nil {
		return fmt.Errorf("avro %v", err)
	}
	return nil
}

func appendSnapshot(dst []byte, s serializers.Snapshot) []byte {
	code, _ := snapshotCode(s.Kind)
	dst = append(dst, code)
	if s.Kind == serializers.KindAvro {
		dst = appendString(dst, s.Schema)
	}
	for _, a := range s.Args {
		dst = appendSnapshot(dst, a)
	}
	return dst
}

func (d *decoder) snapshot(what string, depth int) serializers.Snapshot {
	start := d.off
	code := d.u8(what)
	if d.err != nil {
		return serializers.Snapshot{}
	}
	if depth > maxSnapshotDepth {
		d.failf(start, "%s: serializer snapshots nest deeper than %d", what, maxSnapshotDepth)
		return serializers.Snapshot{}
	}
	if code == 0 || int(code) >= len(snapshotKinds) {
		d.failf(start, "%s: unknown serializer kind code %d", what, code)
		return serializers.Snapshot{}
	}
	s := serializers.Snapshot{Kind: snapshotKinds[code]}
	if s.Kind == serializers.KindAvro {
		schemaAt := d.off
		s.Schema = d.str(what + " avro schema")
		if d.err == nil {
			if err := checkAvroSchema(s.Schema); err != nil {
				d.failf(schemaAt, "%s: %v", what, err)
			}
		}
	}
	if n := snapshotArity(s.Kind); n > 0 {
		s.Args = make([]serializers.Snapshot, n)
		for i := range s.Args {
			s.Args[i] = d.snapshot(what, depth+1)
		}
	}
	return s
}
