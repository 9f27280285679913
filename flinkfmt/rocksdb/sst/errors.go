package sst

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinels, checked with errors.Is. Every error about the content of a
// table is an *Error that wraps one of them.
var (
	// ErrCorrupt: a checksum mismatch, a bad length, varint or handle, keys
	// out of order, or truncation.
	ErrCorrupt = errors.New("rocksdb: corrupt table")
	// ErrUnsupported: a well-formed table that uses a part of RocksDB's
	// format this reader does not implement (see the package comment).
	ErrUnsupported = errors.New("rocksdb: unsupported table feature")
)

// Error locates a problem in a table file.
type Error struct {
	// File names the table, as given to Open.
	File string
	// Offset is the byte offset in File of the block concerned, or -1.
	Offset int64
	Err    error
}

func (e *Error) Error() string {
	s := "rocksdb: " + e.File
	if e.Offset >= 0 {
		s += ": offset " + strconv.FormatInt(e.Offset, 10)
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// problem is the cause inside an *Error: its own message, still matching
// its sentinel with errors.Is.
type problem struct {
	msg  string
	kind error
}

func (p *problem) Error() string { return p.msg }
func (p *problem) Unwrap() error { return p.kind }

// Corruptf returns a cause that matches ErrCorrupt. Packages that build on
// tables (the merging iterator, the OPTIONS parser) use it so that every
// error about RocksDB files matches the same sentinels.
func Corruptf(format string, args ...any) error {
	return &problem{msg: fmt.Sprintf(format, args...), kind: ErrCorrupt}
}

// Unsupportedf returns a cause that matches ErrUnsupported.
func Unsupportedf(format string, args ...any) error {
	return &problem{msg: fmt.Sprintf(format, args...), kind: ErrUnsupported}
}

// At wraps err with its location; an err that already is an *Error keeps
// its own, more precise location.
func At(file string, off int64, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{File: file, Offset: off, Err: err}
}
