//go:build linux || darwin || freebsd || netbsd || openbsd

package storage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openInside opens the regular file name below root. Each directory on the
// way is opened relative to the previous one with O_NOFOLLOW, so that no
// link, swapped in at any moment, can lead outside root; the file itself is
// inspected with fstatat before it is opened (opening a FIFO blocks, opening
// a device may have effects), opened non-blocking and without following a
// link, and checked again to be the same regular file.
func openInside(root, name string) (*os.File, error) {
	full := filepath.Join(root, filepath.FromSlash(name))
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	dirs, base := components(name)
	at := root
	for _, d := range dirs {
		at = filepath.Join(at, d)
		next, err := unix.Openat(fd, d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		switch {
		case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
			return nil, notRegular(full, lstatMode(at))
		case err != nil:
			return nil, &fs.PathError{Op: "open", Path: at, Err: err}
		}
		fd = next
	}
	defer unix.Close(fd)
	var before unix.Stat_t
	if err := unix.Fstatat(fd, base, &before, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: full, Err: err}
	}
	if uint32(before.Mode)&unix.S_IFMT != unix.S_IFREG {
		return nil, notRegular(full, unixMode(uint32(before.Mode)))
	}
	ffd, err := unix.Openat(fd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, notRegular(full, fs.ModeSymlink)
		}
		return nil, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	var after unix.Stat_t
	if err := unix.Fstat(ffd, &after); err != nil {
		unix.Close(ffd)
		return nil, &fs.PathError{Op: "stat", Path: full, Err: err}
	}
	if uint32(after.Mode)&unix.S_IFMT != unix.S_IFREG || after.Dev != before.Dev || after.Ino != before.Ino {
		unix.Close(ffd)
		return nil, notRegular(full, unixMode(uint32(after.Mode)))
	}
	// Reads of a regular file never block; the flag only guarded the open.
	if err := unix.SetNonblock(ffd, false); err != nil {
		unix.Close(ffd)
		return nil, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	return os.NewFile(uintptr(ffd), full), nil
}

func lstatMode(p string) fs.FileMode {
	st, err := os.Lstat(p)
	if err != nil {
		return fs.ModeIrregular
	}
	return st.Mode()
}

func unixMode(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}
