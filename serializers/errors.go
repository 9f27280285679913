package serializers

import (
	"errors"
	"fmt"
)

var (
	// ErrEncode is wrapped by every error about a value that cannot be
	// encoded: a Go value of the wrong type, a string that is not UTF-8, two
	// map keys with the same encoding.
	ErrEncode = errors.New("serializers: value cannot be encoded")
	// ErrSnapshot is wrapped by every error about a snapshot that cannot be
	// restored.
	ErrSnapshot = errors.New("serializers: malformed snapshot")
	// ErrUnreadable is wrapped by a Migrate error about a well-formed value
	// that the new serializer has no reading of: it uses a union branch the
	// new Avro schema removed. Only pairs whose Compatibility is
	// DataDependent fail so.
	ErrUnreadable = errors.New("serializers: value has no reading in the new serializer")
)

// valueError is an encode or decode error. Nesting adds context to msg
// instead of wrapping, so that a value deep in a map in a list reads as one
// message with one package prefix.
type valueError struct {
	sentinel error // ErrDecode, ErrEncode or ErrUnreadable
	msg      string
	cause    error // an error from outside this package, if any
	// places counts the places within the value that msg names.
	places int
}

func (e *valueError) Error() string        { return e.sentinel.Error() + ": " + e.msg }
func (e *valueError) Is(target error) bool { return target == e.sentinel }
func (e *valueError) Unwrap() error        { return e.cause }

// Detail is what an error of this package says about a value, without the
// sentinel's words: "ttl value: OpenRequest.note: union narrowed: long
// matches no branch of the reader union". Reasons shown to people use it.
func Detail(err error) string {
	var ve *valueError
	if errors.As(err, &ve) {
		return ve.msg
	}
	return err.Error()
}

func decodeErr(format string, args ...any) error {
	return &valueError{sentinel: ErrDecode, msg: fmt.Sprintf(format, args...)}
}

func encodeErr(format string, args ...any) error {
	return &valueError{sentinel: ErrEncode, msg: fmt.Sprintf(format, args...)}
}

// within says where err happened ("list element 3"). An error that is not
// ours (from a caller's own Of[T]) is kept as the cause and classified as
// sentinel.
func within(err, sentinel error, format string, args ...any) error {
	ve, ok := err.(*valueError)
	if !ok {
		ve = &valueError{sentinel: sentinel, msg: err.Error(), cause: err}
	}
	switch {
	case ve.places > maxPlaces:
		return ve
	case ve.places == maxPlaces:
		// A value nested hundreds of levels deep would name every level:
		// the innermost say where.
		return &valueError{sentinel: ve.sentinel, msg: "…: " + ve.msg, cause: ve.cause, places: ve.places + 1}
	}
	where := fmt.Sprintf(format, args...)
	return &valueError{sentinel: ve.sentinel, msg: where + ": " + ve.msg, cause: ve.cause, places: ve.places + 1}
}

// maxPlaces is the most places an error's message names on its way out of
// a value.
const maxPlaces = 8

func wantBytes(kind Kind, want, got int) error {
	return decodeErr("%s: want %d bytes, got %d", kind, want, got)
}

func snapshotErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSnapshot, fmt.Sprintf(format, args...))
}
