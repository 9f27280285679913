//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package storage

import (
	"os"
	"path/filepath"
)

// openInside opens the regular file name below root, refusing a symbolic
// link on the way and anything but a regular file, checked with Lstat
// before the open and with SameFile after it.
func openInside(root, name string) (*os.File, error) {
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
