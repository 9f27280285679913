package flinkfmt

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// Sentinels, checked with errors.Is.
var (
	// ErrNotFlink: the file does not start with Flink's metadata magic.
	ErrNotFlink = errors.New("flinkfmt: not a Flink savepoint or checkpoint")
	// ErrCorrupt: a structural error in a Flink file (a length past the
	// end, a bad tag, a header that does not parse). It also matches the
	// read seam's savepoint.ErrCorrupt (and snapshotfmt.ErrCorrupt), so
	// that the toolkit maps it to the exit code of a corrupt savepoint.
	ErrCorrupt = errors.New("flinkfmt: corrupt Flink savepoint")
	// ErrUnsupported: a well-formed part that this reader cannot read yet
	// (a metadata version, a state layout, a serializer snapshot). It also
	// matches savepoint.ErrUnsupported.
	ErrUnsupported = errors.New("flinkfmt: not readable yet")
)

// Error locates a problem in a Flink savepoint.
type Error struct {
	// File is the name of the file within the savepoint directory.
	File string
	// Operator is the operator's id in hex, or empty.
	Operator string
	// KeyGroup is the key group concerned, or -1.
	KeyGroup int
	// Offset is the byte offset in File, or -1.
	Offset int64
	Err    error
}

func (e *Error) Error() string {
	s := "flinkfmt: " + e.File
	if e.Operator != "" {
		s += ": operator " + e.Operator
	}
	if e.KeyGroup >= 0 {
		s += ": key group " + strconv.Itoa(e.KeyGroup)
	}
	if e.Offset >= 0 {
		s += ": offset " + strconv.FormatInt(e.Offset, 10)
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

type problem struct {
	msg  string
	kind []error
}

func (p *problem) Error() string   { return p.msg }
func (p *problem) Unwrap() []error { return p.kind }

func corruptf(format string, args ...any) error {
	return &problem{msg: fmt.Sprintf(format, args...), kind: []error{ErrCorrupt, savepoint.ErrCorrupt, snapshotfmt.ErrCorrupt}}
}

// corrupt marks err as a structural error, keeping what it wraps.
func corrupt(err error) error {
	if err == nil || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupported) {
		return err
	}
	return &problem{msg: err.Error(), kind: []error{ErrCorrupt, savepoint.ErrCorrupt, snapshotfmt.ErrCorrupt, err}}
}

func unsupportedf(format string, args ...any) error {
	return &problem{msg: fmt.Sprintf(format, args...), kind: []error{ErrUnsupported, savepoint.ErrUnsupported}}
}

func at(file, op string, kg int, off int64, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{File: file, Operator: op, KeyGroup: kg, Offset: off, Err: err}
}
