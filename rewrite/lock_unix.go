//go:build unix && !solaris && !aix

package rewrite

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// targetLock is an exclusive flock on a file beside the target. The kernel
// releases it when the process dies, so a killed run never leaves the
// target locked.
type targetLock struct {
	path string
	f    *os.File
}

// lockTarget takes the lock at path, or fails with ErrBusy at once. The
// file is removed on release; a run that opened it just before must not
// then lock a deleted file while a third run locks a new one, so after
// locking, the path must still name the file that was locked.
func lockTarget(path string) (*targetLock, error) {
	for range 100 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("rewrite: lock: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("%w (lock %s)", ErrBusy, path)
			}
			return nil, fmt.Errorf("rewrite: lock %s: %w", path, err)
		}
		held, err1 := f.Stat()
		named, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, named) {
			return &targetLock{path: path, f: f}, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("%w (lock %s keeps changing)", ErrBusy, path)
}

// release removes the lock file while still holding it, then unlocks.
func (l *targetLock) release() error {
	err := os.Remove(l.path)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}
