//go:build unix && !solaris && !aix

package workdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// removeIfDead removes the work directory at path if no live run holds
// it: its lock file can be taken, or, without one, it is empty and older
// than locklessAge. The lock file is opened without following a link and
// without blocking (a FIFO would block), and must be a regular file; it is
// never created, so a directory that is not one of ours gets no file. A
// holder writes its name into the file once it has locked it: an empty
// lock file younger than locklessAge may be that of a run between
// creating the file and locking it, and is not even tried, since a lock
// taken then would make that run's own attempt fail.
func removeIfDead(path string, now time.Time) bool {
	lockPath := filepath.Join(path, LockName)
	f, err := os.OpenFile(lockPath, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		info, err := os.Lstat(path)
		if err != nil || !info.IsDir() || now.Sub(info.ModTime()) < locklessAge {
			return false
		}
		return os.Remove(path) == nil
	}
	if err != nil {
		return false
	}
	defer f.Close()
	held, err := f.Stat()
	if err != nil || !held.Mode().IsRegular() || held.Size() == 0 && now.Sub(held.ModTime()) < locklessAge {
		return false
	}
	// EWOULDBLOCK: a live run holds it. Another error: this file system
	// has no flock, and nothing tells whether the run lives.
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return false
	}
	// A lock file removed since it was opened is that of a run that
	// removed its directory itself, or of another sweep's removal.
	named, err := os.Lstat(lockPath)
	if err != nil || !os.SameFile(held, named) {
		return false
	}
	return discard(path)
}

// discard removes the work directory at path of a dead run, renamed first
// so that what a removal cut short leaves is recognised.
func discard(path string) bool {
	gone := gonePath(path)
	if os.Rename(path, gone) != nil {
		return false
	}
	return os.RemoveAll(gone) == nil
}
