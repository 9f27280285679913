package snapshotfmt

import (
	"errors"
	"fmt"

	"github.com/stateproc/stateproc/savepoint"
)

// Sentinels, checked with errors.Is. Every error about the content of a
// savepoint is a *savepoint.Error that wraps one of them and, with it, the
// read seam's sentinel it specializes (savepoint.ErrNotSavepoint,
// savepoint.ErrCorrupt, savepoint.ErrUnsupported), which is what tools
// check.
var (
	// ErrNotSavepoint: the directory has no _metadata, or a file is not a
	// stateproc file of the expected type.
	ErrNotSavepoint = errors.New("snapshotfmt: not a stateproc savepoint")
	// ErrCorrupt: a checksum mismatch, a broken structural rule, a bad
	// length or name, or truncation.
	ErrCorrupt = errors.New("snapshotfmt: corrupt savepoint")
	// ErrNewerVersion: written by a newer stateproc than this one.
	ErrNewerVersion = errors.New("snapshotfmt: savepoint from a newer format version")
	// ErrUnsupportedVersion: written in a version this reader no longer reads.
	ErrUnsupportedVersion = errors.New("snapshotfmt: unsupported old format version")
)

// problem is the cause inside a *savepoint.Error: a message of its own that
// still matches its sentinels (and, for bad names, storage.ErrBadName) with
// errors.Is, without repeating the sentinel's text in every message.
type problem struct {
	msg  string
	kind []error
}

func (p *problem) Error() string   { return p.msg }
func (p *problem) Unwrap() []error { return p.kind }

func corruptf(format string, args ...any) error {
	return &problem{msg: fmt.Sprintf(format, args...), kind: []error{ErrCorrupt, savepoint.ErrCorrupt}}
}

func notSavepointf(format string, args ...any) error {
	return &problem{msg: fmt.Sprintf(format, args...), kind: []error{ErrNotSavepoint, savepoint.ErrNotSavepoint}}
}

func unsupportedf(sentinel error, format string, args ...any) error {
	return &problem{msg: fmt.Sprintf(format, args...), kind: []error{sentinel, savepoint.ErrUnsupported}}
}

// at wraps err with its location. An err that already is a
// *savepoint.Error keeps its own, more precise location.
func at(file string, kg int, off int64, err error) error {
	if err == nil {
		return nil
	}
	var e *savepoint.Error
	if errors.As(err, &e) {
		return err
	}
	return &savepoint.Error{Reader: "snapshotfmt", File: file, KeyGroup: kg, Offset: off, Err: err}
}
