package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/zeebo/xxh3"
)

// Target is where a new savepoint is written: a Staging whose files become
// visible together when _metadata is, plus what a writer needs beyond
// Create on object storage, where nothing can be renamed.
//
// Data files written with Create keep the caller's name; on a bucket that
// name must not exist yet (the write is create-only, so that two writers
// can never mix their files). Data files written with CreateNamed get a
// name derived from their bytes, so that a rerun writes the same names and
// a forced replacement never overwrites a file the old _metadata needs.
type Target interface {
	Staging
	// CreateNamed creates a data file named stem + "-" + the 16 hex
	// digits of the content hash of its bytes (NewContentHash) + ext. The
	// name is known once the writer is closed.
	CreateNamed(ctx context.Context, stem, ext string) (NamedWriter, error)
	// Copy copies the file srcName of src into the target as name: on the
	// store's side where src lies in the same store, through this process
	// otherwise.
	Copy(ctx context.Context, src Dir, srcName, name string) error
	// Compose creates the file name from pieces: bytes written and ranges
	// of files of a Dir in the same store, copied on the store's side
	// where its rules allow and through this process otherwise.
	Compose(ctx context.Context, name string) (Composer, error)
	// ComposeNamed and CopyNamed write a data file whose name the caller
	// derived from its bytes (NameByContent), having read them, when the
	// bytes are not to pass through this process again: ComposeNamed as
	// Compose does, CopyNamed as a copy of the whole of src, on the
	// store's side where src lies in the same store. A file of that name
	// holds the same bytes, so it is replaced rather than refused, and a
	// forced publish keeps it, as it keeps CreateNamed's files.
	ComposeNamed(ctx context.Context, name string) (Composer, error)
	CopyNamed(ctx context.Context, src File, name string) error
	// Location is the target's place, for messages.
	Location() string
	// Close releases the target's connection; call it after Publish or
	// Abort.
	Close() error
}

// NamedWriter writes a content-named data file.
type NamedWriter interface {
	io.WriteCloser
	// Name is the file's name, valid after a successful Close.
	Name() string
}

// Composer writes a file from new bytes and copied ranges, in order.
type Composer interface {
	io.Writer
	// CopyRange appends n bytes of src from off. src is a File opened from
	// a Dir of the same store for a copy on the store's side; any other
	// File is read through this process.
	CopyRange(ctx context.Context, src File, off, n int64) error
	// Close completes the file. After an error the file does not exist.
	Close() error
}

// TargetOptions say how a target is opened.
type TargetOptions struct {
	Options
	// Force replaces a savepoint at the target. Without it, a target
	// holding one is refused with ErrExists.
	Force bool
	// Marker, on a bucket, names the file that is written last and
	// create-only, whose presence makes the target whole: _metadata when
	// empty, as for a savepoint; an export names its own (_SUCCESS). A
	// local target is published by a rename and needs none.
	Marker string
}

// OpenTarget opens a location for writing a new savepoint. A local target
// is staged in a directory beside it and renamed into place (see Stage); a
// bucket target is written in place, _metadata last (see the package
// documentation for what --force does there).
func OpenTarget(ctx context.Context, location string, opts TargetOptions) (Target, error) {
	loc, err := ParseLocation(location)
	if err != nil {
		return nil, err
	}
	if opts.Counters == nil {
		opts.Counters = new(Counters)
	}
	if loc.IsBucket() {
		return openBucketTarget(ctx, loc, opts)
	}
	return stage(loc.Path, opts.Force, opts.Counters)
}

// NewContentHash returns the hash that names a data file after its bytes:
// XXH3, 64 bits, which this process computes at memory speed. The name
// only has to tell files of one stem apart and be the same run after run;
// it is not a checksum (the format's blocks carry CRC-32C) and guards
// against no one (whoever can plant a file in a target can plant its
// _metadata too). SHA-256, which named the files before, took as much CPU
// as encoding them; files named by it read as ever, since a reader never
// checks a name.
func NewContentHash() hash.Hash { return xxh3.New() }

// ContentSum returns the content hash of b, as NewContentHash computes it.
func ContentSum(b []byte) []byte {
	h := NewContentHash()
	h.Write(b)
	return h.Sum(nil)
}

// NameByContent is the name CreateNamed gives a file whose content hash
// is sum.
func NameByContent(stem string, sum []byte, ext string) string {
	return fmt.Sprintf("%s-%x%s", stem, sum[:8], ext)
}

// localTarget is a staged local directory.
type localTarget struct {
	*localStaging
	c *Counters
}

func (t *localTarget) counters() *Counters { return t.c }

func (t *localTarget) Location() string { return t.target }

func (t *localTarget) Close() error { return nil }

func (t *localTarget) Create(ctx context.Context, name string) (io.WriteCloser, error) {
	w, err := t.localStaging.Create(ctx, name)
	if err != nil {
		return nil, err
	}
	return countingWriter{w, &t.c.BytesWritten}, nil
}

// CreateNamed writes a temporary file in the staging directory and renames
// it at Close, when its name is known.
func (t *localTarget) CreateNamed(_ context.Context, stem, ext string) (NamedWriter, error) {
	if err := CheckName(stem + ext); err != nil {
		return nil, err
	}
	dir := filepath.Join(t.tmp, filepath.Dir(filepath.FromSlash(stem)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := CreateTemp(dir, TempPrefix)
	if err != nil {
		return nil, err
	}
	return &localNamed{t: t, f: f, h: NewContentHash(), stem: stem, ext: ext}, nil
}

type localNamed struct {
	t         *localTarget
	f         *os.File
	h         hash.Hash
	stem, ext string
	name      string
	// written counts the bytes written, of which the kernel was asked to
	// start writing those before queued to the device.
	written, queued int64
}

// writebackEvery is how many bytes a data file is written between two
// requests to the kernel to start writing them out, so that the device
// writes while the file is produced and the fsync at Close waits for the
// last few MiB, not the whole file.
const writebackEvery = 8 << 20

func (w *localNamed) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.h.Write(p[:n])
	w.t.c.BytesWritten.Add(int64(n))
	w.written += int64(n)
	if w.written-w.queued >= writebackEvery {
		startWriteback(w.f, w.queued, w.written-w.queued)
		w.queued = w.written
	}
	return n, err
}

func (w *localNamed) Close() error {
	err := errors.Join(w.f.Sync(), w.f.Close())
	if err == nil {
		name := NameByContent(w.stem, w.h.Sum(nil), w.ext)
		// A file of the same name holds the same bytes: replacing it is
		// harmless.
		if err = os.Rename(w.f.Name(), filepath.Join(w.t.tmp, filepath.FromSlash(name))); err == nil {
			w.name = name
			return nil
		}
	}
	os.Remove(w.f.Name())
	return err
}

func (w *localNamed) Name() string { return w.name }

// Copy goes through this process; on Linux io.Copy between two files lets
// the kernel copy (copy_file_range), which may share the blocks.
func (t *localTarget) Copy(ctx context.Context, src Dir, srcName, name string) error {
	return copyThrough(ctx, t, src, srcName, name)
}

func (t *localTarget) Compose(ctx context.Context, name string) (Composer, error) {
	w, err := t.Create(ctx, name)
	if err != nil {
		return nil, err
	}
	return &clientComposer{w: w, c: t.c}, nil
}

// ComposeNamed is Compose: the staging directory is new, so no file of the
// name can be there.
func (t *localTarget) ComposeNamed(ctx context.Context, name string) (Composer, error) {
	return t.Compose(ctx, name)
}

func (t *localTarget) CopyNamed(ctx context.Context, src File, name string) error {
	w, err := t.Create(ctx, name)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, io.NewSectionReader(src, 0, src.Size())); err != nil {
		w.Close()
		return fmt.Errorf("storage: copying into %s: %w", name, err)
	}
	return w.Close()
}

// copyThrough copies a file by reading it and writing it with Create.
func copyThrough(ctx context.Context, t Target, src Dir, srcName, name string) error {
	f, err := src.Open(ctx, srcName)
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := t.Create(ctx, name)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, io.NewSectionReader(f, 0, f.Size())); err != nil {
		w.Close()
		return fmt.Errorf("storage: copying %s to %s: %w", srcName, name, err)
	}
	return w.Close()
}

// clientComposer composes a file through this process: ranges are read
// and written like new bytes.
type clientComposer struct {
	w io.WriteCloser
	c *Counters
}

func (k *clientComposer) Write(p []byte) (int, error) { return k.w.Write(p) }

func (k *clientComposer) CopyRange(_ context.Context, src File, off, n int64) error {
	_, err := io.Copy(k.w, io.NewSectionReader(src, off, n))
	return err
}

func (k *clientComposer) Close() error { return k.w.Close() }

// randomTempName is a temporary object's name: unique, so that no other
// writer's temporary can be mistaken for it.
func randomTempName() string {
	var b [12]byte
	rand.Read(b[:])
	return TempPrefix + hex.EncodeToString(b[:])
}
