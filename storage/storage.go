package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// File is an open file that supports ranged reads.
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

// CheckName rejects names that are absolute, contain "..", backslashes or
// empty elements: a name read from a file must never point outside its
// directory.
func CheckName(name string) error {
	if !fs.ValidPath(name) || name == "." || strings.Contains(name, `\`) {
		return fmt.Errorf("%w: %q", ErrBadName, name)
	}
	return nil
}

// LocalDir returns the directory at path.
func LocalDir(path string) Dir { return localDir(path) }

type localDir string

func (d localDir) Location() string { return string(d) }

func (d localDir) Open(_ context.Context, name string) (File, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(string(d), filepath.FromSlash(name)))
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("storage: %s is not a regular file", f.Name())
	}
	return &localFile{File: f, size: st.Size()}, nil
}

func (d localDir) List(_ context.Context) ([]string, error) {
	var names []string
	err := filepath.WalkDir(string(d), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() {
			rel, err := filepath.Rel(string(d), p)
			if err != nil {
				return err
			}
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(names)
	return names, err
}

type localFile struct {
	*os.File
	size int64
}

func (f *localFile) Size() int64 { return f.size }

// TempPrefix starts the name of every staging directory. Such a directory
// lies beside its target and is never a savepoint.
const TempPrefix = ".stateproc-tmp-"

// Stage prepares a new directory that Publish renames to target. The staging
// directory is created beside target, so that the rename stays on one file
// system. With force, an existing target is replaced at Publish.
func Stage(target string, force bool) (Staging, error) {
	target = filepath.Clean(target)
	if _, err := os.Lstat(target); err == nil && !force {
		return nil, fmt.Errorf("%w: %s (use --force to replace it)", ErrExists, target)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	parent := filepath.Dir(target)
	tmp, err := os.MkdirTemp(parent, TempPrefix+filepath.Base(target)+"-")
	if err != nil {
		return nil, err
	}
	return &localStaging{target: target, tmp: tmp, force: force}, nil
}

type localStaging struct {
	target, tmp string
	force       bool
	published   bool
}

func (s *localStaging) Create(_ context.Context, name string) (io.WriteCloser, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	p := filepath.Join(s.tmp, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return syncOnClose{f}, nil
}

type syncOnClose struct{ *os.File }

func (f syncOnClose) Close() error {
	if err := f.File.Sync(); err != nil {
		f.File.Close()
		return err
	}
	return f.File.Close()
}

func (s *localStaging) Publish(_ context.Context) error {
	if err := syncDirs(s.tmp); err != nil {
		return err
	}
	var old string
	if s.force {
		if _, err := os.Lstat(s.target); err == nil {
			old = s.tmp + ".old"
			if err := os.Rename(s.target, old); err != nil {
				return err
			}
		}
	}
	if err := os.Rename(s.tmp, s.target); err != nil {
		if old != "" {
			os.Rename(old, s.target)
		}
		return err
	}
	s.published = true
	if err := syncDir(filepath.Dir(s.target)); err != nil {
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

func (s *localStaging) Abort() error {
	if s.published {
		return nil
	}
	return os.RemoveAll(s.tmp)
}

// syncDirs fsyncs root and every directory below it, so that the names of
// the files written there survive a crash once the rename is visible.
func syncDirs(root string) error {
	return filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			return syncDir(p)
		}
		return nil
	})
}

func syncDir(p string) error {
	d, err := os.Open(p)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
