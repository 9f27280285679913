//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package storage

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// openedInHandle says that a file does not come from the held directory
// itself: it is opened by its path, so each open is followed by a check
// that the directory at that path is still the one first opened.
const openedInHandle = false

// dirHandle is the identity of the directory when it was first used. No
// handle is kept open: on Windows an open directory could not be renamed,
// and a forced publish renames it.
type dirHandle struct {
	id fs.FileInfo
}

func openDirHandle(path string) (*dirHandle, error) {
	id, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !id.IsDir() {
		return nil, fmt.Errorf("storage: %s is not a directory", path)
	}
	return &dirHandle{id: id}, nil
}

func (h *dirHandle) close() error { return nil }

// open opens the regular file name below root, refusing a symbolic link
// on the way and anything but a regular file, checked with Lstat before
// the open and with SameFile after it.
func (h *dirHandle) open(root, name string) (*os.File, error) {
	full := filepath.Join(root, filepath.FromSlash(name))
	dirs, _ := components(name)
	at := root
	for _, d := range dirs {
		at = filepath.Join(at, d)
		st, err := os.Lstat(at)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			return nil, notRegular(full, st.Mode())
		}
	}
	before, err := os.Lstat(full)
	if err != nil {
		return nil, err
	}
	if !before.Mode().IsRegular() {
		return nil, notRegular(full, before.Mode())
	}
	f, err := os.Open(full)
	if err != nil {
		return nil, err
	}
	after, err := f.Stat()
	if err != nil || !os.SameFile(before, after) {
		f.Close()
		if err != nil {
			return nil, err
		}
		return nil, notRegular(full, after.Mode())
	}
	return f, nil
}

// readDir lists the directory rel (slash-separated, "" for the directory
// itself) below root, with the type of each entry.
func (h *dirHandle) readDir(root, rel string) ([]dirEntry, error) {
	all, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	entries := make([]dirEntry, len(all))
	for i, e := range all {
		entries[i] = dirEntry{name: e.Name(), mode: e.Type()}
	}
	return entries, nil
}
