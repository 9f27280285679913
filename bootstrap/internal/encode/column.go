package encode

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/stateproc/stateproc/internal/avrobin"
	"github.com/stateproc/stateproc/serializers"
)

// Error is a value that does not fit its column's serializer, or an Arrow
// type that cannot hold the serializer's values.
type Error struct {
	// Path is the place within the column: empty for the column's value
	// itself, then ".field" for a record field or union branch, "[i]" for
	// an element, "[i].key" and "[i].value" for a map entry.
	Path string
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return strings.TrimPrefix(e.Path, ".") + ": " + e.Msg
}

func errorf(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// within puts err, from a part of a value, under that part's name.
func within(err error, part string) error {
	if e, ok := err.(*Error); ok {
		return &Error{Path: part + e.Path, Msg: e.Msg}
	}
	return err
}

// maxNesting bounds how deep serializer snapshots nest (the savepoint
// format allows 32 levels); Avro schemas are bounded by avrobin.
const maxNesting = 64

// A node encodes the values of one serializer, or of one Avro type within
// one.
type node interface {
	// forArrow returns an encoder of the values of Arrow type dt, or an
	// error saying why dt cannot hold them.
	forArrow(dt arrow.DataType) (arrowEnc, error)
	// appendJSON appends the encoding of v, a value as encoding/json
	// decodes it with UseNumber.
	appendJSON(dst []byte, v any) ([]byte, error)
	// what names the serializer or type, for messages.
	what() string
}

// An arrowEnc encodes the values of one Arrow array: bind gives it the
// array of a batch, append encodes row i of it.
type arrowEnc interface {
	bind(arr arrow.Array)
	append(dst []byte, i int) ([]byte, error)
}

// isNull says whether row i of arr is null: every row of an array of the
// null type is, though it may have no validity bitmap.
func isNull(arr arrow.Array, i int) bool { return arr.DataType().ID() == arrow.NULL || arr.IsNull(i) }

// IsNull says whether row i of arr is null, for the columns whose nulls
// their reader treats itself.
func IsNull(arr arrow.Array, i int) bool { return isNull(arr, i) }

// Column encodes the values of one serializer.
type Column struct {
	root node
}

// Compile compiles the encoder of the serializer s. A serializer with no
// dataset form (a timer serializer, a recursive Avro record, which export
// does not map either) is an error.
func Compile(s serializers.Snapshot) (*Column, error) {
	n, err := compileKind(s, 0)
	if err != nil {
		return nil, err
	}
	return &Column{root: n}, nil
}

// Arrow returns the column's encoder of the values of Arrow type dt, or an
// *Error saying why dt cannot hold them.
func (c *Column) Arrow(dt arrow.DataType) (*Bound, error) {
	e, err := c.root.forArrow(dt)
	if err != nil {
		return nil, err
	}
	return &Bound{enc: e}, nil
}

// Bound is a Column's encoder for one Arrow type. It is used by one
// goroutine.
type Bound struct{ enc arrowEnc }

// Bind gives the encoder the array of the next batch.
func (b *Bound) Bind(arr arrow.Array) { b.enc.bind(arr) }

// Append appends the encoding of row i of the bound array to dst, or
// returns an *Error; dst is then unusable.
func (b *Bound) Append(dst []byte, i int) ([]byte, error) { return b.enc.append(dst, i) }

// AppendJSON appends the encoding of v to dst, or returns an *Error.
func (c *Column) AppendJSON(dst []byte, v any) ([]byte, error) { return c.root.appendJSON(dst, v) }

// compileKind compiles a serializer snapshot.
func compileKind(s serializers.Snapshot, depth int) (node, error) {
	if depth > maxNesting {
		return nil, errorf("serializers nest deeper than %d", maxNesting)
	}
	args := func(n int) error {
		if len(s.Args) != n {
			return errorf("serializer %s: %d arguments, want %d", s.Kind, len(s.Args), n)
		}
		return nil
	}
	switch s.Kind {
	case serializers.KindBool:
		return boolNode{}, nil
	case serializers.KindInt32:
		return &intNode{name: "int32", min: minInt32, max: maxInt32, put: putBE32}, nil
	case serializers.KindInt64:
		return &intNode{name: "int64", min: minInt64, max: maxInt64, put: putBE64}, nil
	case serializers.KindFloat32:
		return floatNode{single: true}, nil
	case serializers.KindFloat64:
		return floatNode{}, nil
	case serializers.KindString:
		return stringNode{}, nil
	case serializers.KindBytes:
		return bytesNode{}, nil
	case serializers.KindTimestamp:
		return instantMs("timestamp"), nil
	case serializers.KindVoid:
		return nullNode{name: "void"}, nil
	case serializers.KindWindow:
		return windowNode(), nil
	case serializers.KindAvro:
		schema, _, err := avrobin.ParseSchema(s.Schema)
		if err != nil {
			return nil, errorf("Avro %v", err)
		}
		return compileAvro(schema, map[string]bool{})
	case serializers.KindNullable:
		if err := args(1); err != nil {
			return nil, err
		}
		elem, err := compileKind(s.Args[0], depth+1)
		if err != nil {
			return nil, err
		}
		return nullableNode{elem: elem}, nil
	case serializers.KindList:
		if err := args(1); err != nil {
			return nil, err
		}
		elem, err := compileKind(s.Args[0], depth+1)
		if err != nil {
			return nil, within(err, "[]")
		}
		return listNode{elem: elem}, nil
	case serializers.KindMap:
		if err := args(2); err != nil {
			return nil, err
		}
		key, err := compileKind(s.Args[0], depth+1)
		if err != nil {
			return nil, within(err, "[].key")
		}
		val, err := compileKind(s.Args[1], depth+1)
		if err != nil {
			return nil, within(err, "[].value")
		}
		return mapNode{key: key, value: val}, nil
	case serializers.KindTTL:
		if err := args(1); err != nil {
			return nil, err
		}
		elem, err := compileKind(s.Args[0], depth+1)
		if err != nil {
			return nil, within(err, ".value")
		}
		return ttlNode(elem), nil
	case serializers.KindTimer:
		return nil, errorf("a timer serializer outside a timer service has no dataset form")
	}
	return nil, errorf("unknown serializer %s", s.Kind)
}
