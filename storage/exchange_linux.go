package storage

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
		return errNoExchange
	}
	return err
}

// renameNoReplace renames a to b unless b exists: a plain rename would
// replace an empty directory that appeared at b in the meantime.
func renameNoReplace(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_NOREPLACE)
	switch {
	case errors.Is(err, unix.EEXIST):
		return fmt.Errorf("%w: %s (use --force to replace it)", ErrExists, b)
	case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL):
		return renameChecked(a, b)
	}
	return err
}
