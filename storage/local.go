package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// LocalDir returns the directory at path. The directory itself is opened
// at its first use and held until Close, and every file is opened relative
// to it: a reader reads the files of the directory whose first file it
// read, even after another directory is renamed to path (a forced publish
// exchanges the two, see Stage). Once the held directory is no longer the
// one at path, a file missing from it fails with ErrChanged rather than as
// a missing file: a forced publish deletes the directory it replaced, and
// the reader must start again. After Close, Open and List fail; a Dir
// dropped without Close keeps its descriptor until the garbage collector
// finds it, as an os.File does.
//
// Its files are opened without following symbolic links, and anything but
// a regular file is refused before it is opened, so that neither a FIFO
// nor a device can block or feed a read.
func LocalDir(path string) DirCloser { return newLocalDir(path) }

func newLocalDir(path string) *localDir { return &localDir{root: &heldDir{path: path}} }

// localDir is the directory sub (slash-separated, "" for root itself)
// inside root, the directory a LocalDir holds, which its Subs share.
type localDir struct {
	root *heldDir
	sub  string
}

// heldDir is a local directory opened at first use and held until Close.
type heldDir struct {
	path   string
	mu     sync.Mutex
	h      *dirHandle
	closed bool
}

// handle returns the directory, opened now at its first use.
func (d *heldDir) handle() (*dirHandle, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, &fs.PathError{Op: "open", Path: d.path, Err: fs.ErrClosed}
	}
	if d.h == nil {
		h, err := openDirHandle(d.path)
		if err != nil {
			return nil, err
		}
		d.h = h
	}
	return d.h, nil
}

func (d *heldDir) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if d.h == nil {
		return nil
	}
	h := d.h
	d.h = nil
	return h.close()
}

// replaced returns an error wrapping ErrChanged when the directory held, h,
// is no longer the one at its path: another was renamed there, or it was
// moved or removed. name is the file the reader was opening, "" for a
// listing. It returns nil while the directory is in place, and when the
// path cannot be examined.
func (d *heldDir) replaced(h *dirHandle, name string) error {
	now, err := os.Stat(d.path)
	switch {
	case err == nil && os.SameFile(h.id, now):
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil
	case name == "":
		return fmt.Errorf("%w: %s was replaced or removed while it was listed", ErrChanged, d.path)
	}
	return fmt.Errorf("%w: %s was replaced or removed before its %s was opened", ErrChanged, d.path, name)
}

// dir is the directory's path.
func (d *localDir) dir() string {
	return filepath.Join(d.root.path, filepath.FromSlash(d.sub))
}

// inside is the name, relative to root, of the file name of d.
func (d *localDir) inside(name string) string { return path.Join(d.sub, name) }

// subdir is the directory name inside d, read through the same held
// directory; or, when name is a symbolic link (a Flink job directory whose
// chk-N links elsewhere), the directory it leads to, held on its own, as
// LocalDir would hold it: the files inside are still opened without
// following links.
func (d *localDir) subdir(name string) *localDir {
	p := filepath.Join(d.dir(), filepath.FromSlash(name))
	if st, err := os.Lstat(p); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return newLocalDir(p)
	}
	return &localDir{root: d.root, sub: d.inside(name)}
}

func (d *localDir) Location() string { return d.dir() }

// Close releases the directory. Closing a Sub of it does nothing: the
// directory is its parent's.
func (d *localDir) Close() error {
	if d.sub != "" {
		return nil
	}
	return d.root.close()
}

func (d *localDir) Open(_ context.Context, name string) (File, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	h, err := d.root.handle()
	if err != nil {
		return nil, err
	}
	f, err := h.open(d.root.path, d.inside(name))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if rerr := d.root.replaced(h, d.inside(name)); rerr != nil {
			return nil, rerr
		}
		return nil, err
	case err != nil:
		return nil, err
	case !openedInHandle:
		if rerr := d.root.replaced(h, d.inside(name)); rerr != nil {
			f.Close()
			return nil, rerr
		}
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
// A directory replaced meanwhile may have been listed in part: it fails
// with ErrChanged.
func (d *localDir) List(_ context.Context) ([]string, error) {
	h, err := d.root.handle()
	if err != nil {
		return nil, err
	}
	var names []string
	var walk func(rel string) error
	walk = func(rel string) error {
		entries, err := h.readDir(d.root.path, d.inside(rel))
		if err != nil {
			return err
		}
		for _, e := range entries {
			name := path.Join(rel, e.name)
			switch {
			case e.mode.IsRegular():
				names = append(names, name)
			case e.mode.IsDir():
				if err := walk(name); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err = walk("")
	if rerr := d.root.replaced(h, ""); rerr != nil {
		err = rerr
	}
	sort.Strings(names)
	return names, err
}

// subdirs names the directories directly under d.
func (d *localDir) subdirs() ([]string, error) {
	h, err := d.root.handle()
	if err != nil {
		return nil, err
	}
	entries, err := h.readDir(d.root.path, d.sub)
	if rerr := d.root.replaced(h, ""); rerr != nil {
		err = rerr
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.mode.IsDir() {
			names = append(names, e.name)
		}
	}
	return names, nil
}

// dirEntry is a name in a directory and the type of what it names, a
// symbolic link not followed.
type dirEntry struct {
	name string
	mode fs.FileMode
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
