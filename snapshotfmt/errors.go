package snapshotfmt

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinels, checked with errors.Is. Every error about the content of a
// savepoint is an *Error that wraps one of them.
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

// Error locates a problem in a savepoint.
type Error struct {
	// File is the name of the file within the savepoint directory.
	File string
	// KeyGroup is the key group of the segment concerned, or -1.
	KeyGroup int
	// Offset is the byte offset in File, or -1.
	Offset int64
	Err    error
}

func (e *Error) Error() string {
	s := "snapshotfmt: " + e.File
	if e.KeyGroup >= 0 {
		s += ": key group " + strconv.Itoa(e.KeyGroup)
	}
	if e.Offset >= 0 {
		s += ": offset " + strconv.FormatInt(e.Offset, 10)
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// problem is the cause inside an *Error: a message of its own that still
// matches its sentinels (and, for bad names, storage.ErrBadName) with
// errors.Is, without repeating the sentinel's text in every message.
type problem struct {
	msg  string
	kind []error
}

func (p *problem) Error() string   { return p.msg }
func (p *problem) Unwrap() []error { return p.kind }

func corruptf(format string, args ...any) error {
	return &problem{msg: fmt.Sprintf(format, args...), kind: []error{ErrCorrupt}}
}

func notSavepointf(format string, args ...any) error {
	return &problem{msg: fmt.Sprintf(format, args...), kind: []error{ErrNotSavepoint}}
}

// at wraps err with its location. An err that already is an *Error keeps its
// own, more precise location.
func at(file string, kg int, off int64, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{File: file, KeyGroup: kg, Offset: off, Err: err}
}
