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
// versions, so none are returned. A local Dir wraps it in the error of a
// file that is gone because the directory it holds is no longer the one
// at its path (see LocalDir). Either way the reader must start again.
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

// SuccessName is the file whose presence makes a bucket prefix a finished
// export of datasets, as _metadata makes one a savepoint (the name Hadoop
// and Spark give theirs); a target opened for either finds the other.
const SuccessName = "_SUCCESS"

// ReadSize is how many bytes a reader that goes through f in order should
// ask for at once: 0 for a local file, where a read of any size is one
// system call and the reader's own window suits, and a few MiB for an
// object in a bucket, where every read is a request with a latency of its
// own (see BenchmarkRangedReads).
func ReadSize(f File) int64 {
	if r, ok := f.(interface{ readSize() int64 }); ok {
		return r.readSize()
	}
	return 0
}

// WithContext returns f with its reads bound to ctx. A bucket's file keeps
// the context it was opened with for every read: a reader that opens a
// file once and reads it for several callers gives each its own. Any
// other file is returned as it is.
func WithContext(ctx context.Context, f File) File {
	switch f := f.(type) {
	case *bucketFile:
		c := *f
		c.ctx = ctx
		return &c
	case *preloadedFile:
		c := *f
		c.ctx = ctx
		return &c
	}
	return f
}

// InBucket reports whether x, a Dir, Target or File that this package
// opened, lies in an object store.
func InBucket(x any) bool {
	switch x.(type) {
	case *bucketDir, *bucketTarget, *bucketFile:
		return true
	}
	return false
}

// SameStore reports whether the store of target t can copy bytes of f
// itself, without them passing through this process: both lie in one
// bucket of one store (on S3 ranges too, elsewhere whole files only; see
// Target.Compose).
func SameStore(t any, f File) bool {
	bt, ok1 := t.(*bucketTarget)
	bf, ok2 := f.(*bucketFile)
	return ok1 && ok2 && sameStore(bf.st, bt.bucketStore)
}
