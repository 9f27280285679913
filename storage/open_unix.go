//go:build linux || darwin || freebsd || netbsd || openbsd

package storage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// openedInHandle says that a file comes from the held directory itself:
// it is opened relative to the directory's descriptor.
const openedInHandle = true

// dirHandle is a directory held open, and its identity when it was opened.
type dirHandle struct {
	f  *os.File
	id fs.FileInfo
}

func openDirHandle(path string) (*dirHandle, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	id, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &dirHandle{f: f, id: id}, nil
}

func (h *dirHandle) close() error { return h.f.Close() }

// at runs fn with the directory's descriptor, which stays open while fn
// runs even if the directory is closed meanwhile.
func (h *dirHandle) at(fn func(dirfd int) error) error {
	rc, err := h.f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return &fs.PathError{Op: "open", Path: h.f.Name(), Err: fs.ErrClosed}
	}
	return ferr
}

// open opens the regular file name below the directory, whose path is
// root. Each directory on the way is opened relative to the previous one
// with O_NOFOLLOW, so that no link, swapped in at any moment, can lead
// outside the directory; the file itself is inspected with fstatat before
// it is opened (opening a FIFO blocks, opening a device may have effects),
// opened non-blocking and without following a link, and checked again to
// be the same regular file.
func (h *dirHandle) open(root, name string) (*os.File, error) {
	full := filepath.Join(root, filepath.FromSlash(name))
	dirs, base := components(name)
	var file *os.File
	err := h.at(func(dirfd int) error {
		fd, err := openDirs(dirfd, root, dirs, full)
		if err != nil {
			return err
		}
		if fd != dirfd {
			defer unix.Close(fd)
		}
		file, err = openRegular(fd, base, full)
		return err
	})
	return file, err
}

// openDirs opens the directories dirs one below the other, from dirfd,
// the directory at root, without following a link: it returns dirfd itself
// for none, and a descriptor for the caller to close otherwise. A link or
// a file on the way is refused as what stands at full.
func openDirs(dirfd int, root string, dirs []string, full string) (int, error) {
	fd, at := dirfd, root
	for _, d := range dirs {
		at = filepath.Join(at, d)
		next, err := unix.Openat(fd, d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			err = notRegular(full, modeAt(fd, d))
		} else if err != nil {
			err = &fs.PathError{Op: "open", Path: at, Err: err}
		}
		if fd != dirfd {
			unix.Close(fd)
		}
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// openRegular opens base in the directory dirfd, a regular file and
// nothing else; full is its path for errors.
func openRegular(dirfd int, base, full string) (*os.File, error) {
	var before unix.Stat_t
	if err := unix.Fstatat(dirfd, base, &before, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: full, Err: err}
	}
	if uint32(before.Mode)&unix.S_IFMT != unix.S_IFREG {
		return nil, notRegular(full, unixMode(uint32(before.Mode)))
	}
	ffd, err := unix.Openat(dirfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
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

// readDir lists the directory rel (slash-separated, "" for the directory
// itself) below the directory, whose path is root, with the type of each
// entry, reached and examined relative to the directory as open does. An
// entry removed between the listing and its examination is left out.
func (h *dirHandle) readDir(root, rel string) ([]dirEntry, error) {
	var dirs []string
	if rel != "" {
		dirs = strings.Split(rel, "/")
	}
	at := filepath.Join(root, filepath.FromSlash(rel))
	var entries []dirEntry
	err := h.at(func(dirfd int) error {
		fd, err := openDirs(dirfd, root, dirs, at)
		if err != nil {
			return err
		}
		// A descriptor of its own: reading a directory moves the offset
		// of the descriptor read, and the held one serves every reader.
		rfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if fd != dirfd {
			unix.Close(fd)
		}
		if err != nil {
			return &fs.PathError{Op: "open", Path: at, Err: err}
		}
		f := os.NewFile(uintptr(rfd), at)
		defer f.Close()
		names, err := f.Readdirnames(-1)
		if err != nil {
			return err
		}
		for _, n := range names {
			var st unix.Stat_t
			if err := unix.Fstatat(rfd, n, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
				continue
			} else if err != nil {
				return &fs.PathError{Op: "stat", Path: filepath.Join(at, n), Err: err}
			}
			entries = append(entries, dirEntry{name: n, mode: unixMode(uint32(st.Mode))})
		}
		return nil
	})
	return entries, err
}

// modeAt is the type of what name is in the directory dirfd, a link not
// followed.
func modeAt(dirfd int, name string) fs.FileMode {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fs.ModeIrregular
	}
	return unixMode(uint32(st.Mode))
}

func unixMode(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
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
