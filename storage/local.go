package storage

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// LocalDir returns the directory at path. Its files are opened without
// following symbolic links, and anything but a regular file is refused
// before it is opened, so that neither a FIFO nor a device can block or
// feed a read.
func LocalDir(path string) Dir { return localDir(path) }

type localDir string

func (d localDir) Location() string { return string(d) }

func (d localDir) Open(_ context.Context, name string) (File, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	f, err := openInside(string(d), name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &localFile{File: f, size: st.Size()}, nil
}

// List names the regular files under the directory. Symbolic links, and
// what lies below a linked directory, are left out: Open would refuse them.
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

// notRegular describes what stands at path instead of a regular file. It
// names the type only: a size or content of a file outside the directory
// must not leak into a message.
func notRegular(path string, mode fs.FileMode) error {
	var kind string
	switch {
	case mode&fs.ModeSymlink != 0:
		kind = "a symbolic link"
	case mode.IsDir():
		kind = "a directory"
	case mode&fs.ModeNamedPipe != 0:
		kind = "a FIFO"
	case mode&fs.ModeSocket != 0:
		kind = "a socket"
	case mode&fs.ModeCharDevice != 0:
		kind = "a character device"
	case mode&fs.ModeDevice != 0:
		kind = "a block device"
	default:
		kind = "not a regular file"
	}
	return fmt.Errorf("%w: %s is %s", ErrNotRegular, path, kind)
}

// components splits a checked name into its directories and its base.
func components(name string) (dirs []string, base string) {
	parts := strings.Split(name, "/")
	return parts[:len(parts)-1], parts[len(parts)-1]
}
