package chkdir

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/stateproc/stateproc/internal/crc"
)

// LinkOrCopy puts the file src at dst, which must not exist: as a hard link
// when both lie on one file system, which writes no data, and as a copy
// otherwise. It returns the file's CRC-32C, read from dst. With sync, dst's
// data is synced (for a link, that syncs the file src names too); the
// directory entry is the caller's to sync.
func LinkOrCopy(src, dst string, sync bool) (uint32, error) {
	if err := os.Link(src, dst); err == nil {
		return Checksum(dst, sync)
	}
	return copyFile(src, dst, sync)
}

// Checksum reads the file at path and returns its CRC-32C, syncing it
// first when asked.
func Checksum(path string, sync bool) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if sync {
		if err := f.Sync(); err != nil {
			return 0, err
		}
	}
	h := crc.New()
	if _, err := io.Copy(h, f); err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	return h.Sum32(), nil
}

// copyFile copies src to a new file dst and returns the CRC-32C of what it
// wrote. A failed copy leaves no dst behind.
func copyFile(src, dst string, sync bool) (sum uint32, err error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(dst)
		}
	}()
	h := crc.New()
	if _, err := io.Copy(io.MultiWriter(out, h), in); err != nil {
		return 0, fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	if sync {
		if err := out.Sync(); err != nil {
			return 0, err
		}
	}
	return h.Sum32(), nil
}

// SyncDir syncs a directory, so that the names just created in it survive
// a crash.
func SyncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
