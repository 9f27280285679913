package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// File is an open file that supports ranged reads. ReadAt may be called
// from several goroutines at once.
type File interface {
	io.ReaderAt
	io.Closer
	Size() int64
}

// Dir is a read-only directory of files, addressed by relative slash-separated
// names.
type Dir interface {
	Open(ctx context.Context, name string) (File, error)
	// List returns the names of every file, sorted.
	List(ctx context.Context) ([]string, error)
	// Location is a human-readable place for error messages.
	Location() string
}

// Staging collects the files of a directory that is not visible yet.
type Staging interface {
	// Create creates a file; it is synced when closed.
	Create(ctx context.Context, name string) (io.WriteCloser, error)
	// Publish makes the directory visible at its target in one step.
	Publish(ctx context.Context) error
	// Abort removes everything written. It is a no-op after Publish.
	Abort() error
}

// ErrBadName is wrapped by errors about names that could escape a directory.
var ErrBadName = errors.New("storage: invalid file name")

// ErrExists is returned by Stage when the target exists and force is off.
var ErrExists = errors.New("storage: target exists")

// ErrNotRegular is wrapped by the errors of Open for a name that is not a
// regular file inside the directory: a directory, a FIFO, a device, a
// socket, or a symbolic link anywhere on the way (links are never followed
// out of a savepoint, nor within it).
var ErrNotRegular = errors.New("storage: not a regular file")

// ErrChanged is wrapped by the errors of reads from a bucket object that
// was replaced or removed after it was opened: the bytes would mix two
// versions, so none are returned.
var ErrChanged = errors.New("storage: file changed while it was read")

// ErrConflict is wrapped by the errors of a bucket write that lost to
// another writer: a create-only file or _metadata that someone else created
// first, or a forced replacement of a _metadata that someone else replaced
// in the meantime.
var ErrConflict = errors.New("storage: another writer changed the target")

// CheckName rejects names that are absolute, contain "..", backslashes or
// empty elements: a name read from a file must never point outside its
// directory.
func CheckName(name string) error {
	if !fs.ValidPath(name) || name == "." || strings.Contains(name, `\`) {
		return fmt.Errorf("%w: %q", ErrBadName, name)
	}
	return nil
}

// TempPrefix starts the name of every staging directory and every
// temporary object. Such a directory lies beside its target and is never a
// savepoint; such an object lies under a bucket target's prefix and is
// never part of one.
const TempPrefix = ".stateproc-tmp-"

// MetadataName is the file whose presence makes a directory a savepoint. It
// is written last; on a bucket, with a create-only condition.
const MetadataName = "_metadata"
