//go:build unix && !solaris && !aix

package storage

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// FileLock is an exclusive flock on a local file. The kernel releases it
// when the process dies, so a killed holder never leaves it taken.
type FileLock struct {
	path string
	f    *os.File
}

// LockFile takes the lock at path, creating the file, or fails with ErrHeld
// at once, naming the holder (host and process id), which the file holds.
// The file is removed on release; a taker that opened it just
// before must not then lock a deleted file while a third locks a new one,
// so after locking, the path must still name the file that was locked.
func LockFile(path string) (*FileLock, error) {
	for range 100 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("storage: lock: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			who := make([]byte, 256)
			n, _ := f.ReadAt(who, 0)
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				detail := path + " is held"
				if holder := strings.TrimSpace(string(who[:n])); holder != "" {
					detail += " by " + holder
				}
				return nil, &heldError{detail}
			}
			return nil, fmt.Errorf("storage: lock %s: %w", path, err)
		}
		held, err1 := f.Stat()
		named, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, named) {
			// Who holds it, for the next taker to say.
			if err := f.Truncate(0); err == nil {
				f.WriteAt([]byte(holderName()+"\n"), 0)
			}
			return &FileLock{path: path, f: f}, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("%w: the lock %s keeps changing", ErrHeld, path)
}

// Release removes the lock file while still holding it, then unlocks.
func (l *FileLock) Release() error {
	err := os.Remove(l.path)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}
