package export

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/stateproc/stateproc/serializers"
)

// A column is how the values of one serializer appear in Arrow: their type,
// whether they can be null, and how their bytes are decoded. A column is
// compiled once per dataset from the serializer snapshot; bind then attaches
// it to the builder of each file's batches.
type column struct {
	typ      arrow.DataType
	nullable bool
	// bind returns a decoder that appends to b, a builder of typ (as
	// array.NewBuilder makes it).
	bind func(b array.Builder) decoder
	// flat is how a top-level column of the serializer's values decodes
	// without builders, or notFlat; flatElem is the element's decoding of
	// a Flink TTL value, and nullFlag says that the values start with a
	// map value's null flag.
	flat     flatDec
	flatElem flatDec
	nullFlag bool
}

// A decoder appends the value that one serialized value encodes to its
// builder. src holds exactly that value.
type decoder interface {
	decode(src []byte) error
}

// ErrUnmappable is wrapped by the error about a serializer, or an Avro type
// within one, that has no Arrow type.
var ErrUnmappable = errors.New("export: no Arrow mapping")

// unmappableError says where in a column a type has no Arrow mapping and
// why: "value.next: recursive record com.example.Node: no Arrow mapping".
type unmappableError struct{ msg string }

func (e *unmappableError) Error() string { return e.msg + ": no Arrow mapping" }
func (e *unmappableError) Unwrap() error { return ErrUnmappable }

func unmappable(path, format string, args ...any) error {
	return &unmappableError{msg: path + ": " + fmt.Sprintf(format, args...)}
}

// malformed is a value whose bytes do not decode. It wraps
// serializers.ErrDecode, as the serializers' own decode errors do, so that
// callers treat it as corrupt input.
func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", serializers.ErrDecode, fmt.Sprintf(format, args...))
}
