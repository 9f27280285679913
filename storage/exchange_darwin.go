package storage

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

func exchange(a, b string) error {
	err := unix.RenamexNp(a, b, unix.RENAME_SWAP)
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EINVAL) {
		return errNoExchange
	}
	return err
}

func renameNoReplace(a, b string) error {
	err := unix.RenamexNp(a, b, unix.RENAME_EXCL)
	switch {
	case errors.Is(err, unix.EEXIST):
		return fmt.Errorf("%w: %s (use --force to replace it)", ErrExists, b)
	case errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EINVAL):
		return renameChecked(a, b)
	}
	return err
}
