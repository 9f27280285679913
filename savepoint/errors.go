package savepoint

import (
	"errors"
	"strconv"
	"strings"
)

// MetadataFile is the name of the file that holds a savepoint's metadata,
// in stateproc's layout as in Apache Flink's: the file that makes a
// directory a savepoint.
const MetadataFile = "_metadata"

// The sentinels every layout's errors wrap, so that a tool tells bad input
// from a failure of its own without knowing the layout. They are checked
// with errors.Is; a layout's own sentinels (snapshotfmt.ErrNewerVersion, say)
// say more and wrap one of these.
var (
	// ErrNotSavepoint: no savepoint or checkpoint of any layout is there.
	ErrNotSavepoint = errors.New("savepoint: not a savepoint")
	// ErrCorrupt: the input breaks a rule of its layout: a checksum, a
	// length, an order, a name, truncation.
	ErrCorrupt = errors.New("savepoint: corrupt")
	// ErrUnsupported: a savepoint that this build cannot read: a newer or
	// retired version of its layout, or a layout not read yet.
	ErrUnsupported = errors.New("savepoint: unsupported")
)

// Error locates a problem in the files of a savepoint.
type Error struct {
	// Reader is the package that found the problem, which prefixes the
	// message: snapshotfmt, engine.
	Reader string
	// File is the name of the file within the savepoint's directory, or
	// empty when the problem lies in no file of the layout's own.
	File string
	// KeyGroup is the key group of the segment concerned, or -1.
	KeyGroup int
	// Offset is the byte offset in File, or -1.
	Offset int64
	Err    error
}

func (e *Error) Error() string {
	var parts []string
	if e.Reader != "" {
		parts = append(parts, e.Reader)
	}
	if e.File != "" {
		parts = append(parts, e.File)
	}
	if e.KeyGroup >= 0 {
		parts = append(parts, "key group "+strconv.Itoa(e.KeyGroup))
	}
	if e.Offset >= 0 {
		parts = append(parts, "offset "+strconv.FormatInt(e.Offset, 10))
	}
	return strings.Join(append(parts, e.Err.Error()), ": ")
}

func (e *Error) Unwrap() error { return e.Err }

// BadInput reports whether err says the input is not a readable savepoint:
// not one, corrupt, or unsupported.
func BadInput(err error) bool {
	return errors.Is(err, ErrNotSavepoint) || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupported)
}
