package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// Stage prepares a new directory that Publish renames to target: the local
// Target that OpenTarget gives for a plain path. The staging directory is
// created beside target, so that the rename stays on one file system. With force, an existing target is replaced at Publish: where the
// OS can exchange two directories atomically (Linux renameat2, macOS
// renamex_np) a reader of target sees the old directory or the new one at
// every instant; elsewhere the old one is moved aside first, and if the run
// dies between the two renames, the next Stage of the same target moves it
// back.
func Stage(target string, force bool) (Target, error) {
	return stage(target, force, new(Counters))
}

func stage(target string, force bool, c *Counters) (*localTarget, error) {
	target = filepath.Clean(target)
	if err := recoverPrevious(target); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(target); err == nil && !force {
		return nil, fmt.Errorf("%w: %s (use --force to replace it)", ErrExists, target)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	parent := filepath.Dir(target)
	tmp, err := mkdirStaging(parent, TempPrefix+filepath.Base(target)+"-")
	if err != nil {
		return nil, err
	}
	return &localTarget{localStaging: &localStaging{target: target, tmp: tmp, force: force}, c: c}, nil
}

type localStaging struct {
	target, tmp string
	force       bool
	published   bool
}

// CreateTemp creates a new file in dir named prefix and decimal digits, as
// os.CreateTemp names them, but with the permissions the umask gives a new
// file rather than 0600: a file staged under a temporary name and renamed
// into place (a savepoint's data file, a report) is then readable as the
// files beside it are.
func CreateTemp(dir, prefix string) (*os.File, error) {
	return freeName(dir, prefix, "temporary file", func(p string) (*os.File, error) {
		return os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	})
}

// freeName calls create with paths in dir named prefix and random decimal
// digits until one does not exist yet.
func freeName[T any](dir, prefix, what string, create func(path string) (T, error)) (T, error) {
	for range 10000 {
		v, err := create(filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10)))
		if !errors.Is(err, fs.ErrExist) {
			return v, err
		}
	}
	var zero T
	return zero, fmt.Errorf("storage: no free %s name for %s in %s", what, prefix, dir)
}

func (s *localStaging) Create(_ context.Context, name string) (io.WriteCloser, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	p := filepath.Join(s.tmp, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return syncOnClose{f}, nil
}

type syncOnClose struct{ *os.File }

func (f syncOnClose) Close() error {
	if err := f.File.Sync(); err != nil {
		f.File.Close()
		return err
	}
	return f.File.Close()
}

// exchangeDirs swaps two paths atomically, or returns errNoExchange. It is
// a variable so that the tests can take the path of a system without one.
var exchangeDirs = exchange

// errNoExchange says that the OS or the file system cannot swap two paths
// in one step.
var errNoExchange = errors.New("storage: no atomic exchange here")

func (s *localStaging) Publish(_ context.Context) error {
	if err := syncDirs(s.tmp); err != nil {
		return err
	}
	parent := filepath.Dir(s.target)
	_, err := os.Lstat(s.target)
	switch {
	case err == nil && !s.force:
		return fmt.Errorf("%w: %s (use --force to replace it)", ErrExists, s.target)
	case err == nil:
		err := exchangeDirs(s.tmp, s.target)
		if errors.Is(err, errNoExchange) {
			return s.replaceInTwoSteps()
		}
		if err != nil {
			return err
		}
		s.published = true
		if err := syncDir(parent); err != nil {
			return err
		}
		// The staging path now holds the old target.
		return os.RemoveAll(s.tmp)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if err := renameNoReplace(s.tmp, s.target); err != nil {
		return err
	}
	s.published = true
	return syncDir(parent)
}

// replaceInTwoSteps replaces the target where no exchange is available.
// The old target waits under previousPath until the new one is in place,
// so that a run killed in between loses neither: Stage restores it.
func (s *localStaging) replaceInTwoSteps() error {
	parent, prev := filepath.Dir(s.target), previousPath(s.target)
	if err := os.Rename(s.target, prev); err != nil {
		return err
	}
	if err := syncDir(parent); err != nil {
		return err
	}
	if err := os.Rename(s.tmp, s.target); err != nil {
		return errors.Join(err, os.Rename(prev, s.target))
	}
	s.published = true
	if err := syncDir(parent); err != nil {
		return err
	}
	return os.RemoveAll(prev)
}

// previousPath is where a forced publish without exchange keeps the old
// target. Its name is not that of a staging directory (no dash and digits
// follow the target's name), so that a cleanup of killed runs' staging
// directories leaves it for recoverPrevious.
func previousPath(target string) string {
	return filepath.Join(filepath.Dir(target), TempPrefix+filepath.Base(target)+".previous")
}

// recoverPrevious finishes what a forced publish killed between its two
// renames left: with the target missing, the old target goes back; with
// the target present, the publish had completed and the old copy goes.
func recoverPrevious(target string) error {
	prev := previousPath(target)
	if _, err := os.Lstat(prev); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	switch _, err := os.Lstat(target); {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.Rename(prev, target); err != nil {
			return fmt.Errorf("storage: restoring %s from %s, left by a killed forced publish: %w", target, prev, err)
		}
		return syncDir(filepath.Dir(target))
	case err != nil:
		return err
	}
	return os.RemoveAll(prev)
}

func (s *localStaging) Abort() error {
	if s.published {
		return nil
	}
	return os.RemoveAll(s.tmp)
}

// syncDirs fsyncs root and every directory below it, so that the names of
// the files written there survive a crash once the rename is visible.
func syncDirs(root string) error {
	return filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			return syncDir(p)
		}
		return nil
	})
}

func syncDir(p string) error {
	d, err := os.Open(p)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// renameChecked is the rename of a system that cannot refuse to replace:
// it checks first, which leaves a window that only such a system has.
func renameChecked(a, b string) error {
	if _, err := os.Lstat(b); err == nil {
		return fmt.Errorf("%w: %s (use --force to replace it)", ErrExists, b)
	}
	return os.Rename(a, b)
}

// mkdirStaging creates a new directory in parent named prefix and decimal
// digits, as os.MkdirTemp names them, but with the permissions the umask
// gives a new directory rather than 0700: the staging directory becomes
// the savepoint, which others on the machine should read as they read the
// job's own.
func mkdirStaging(parent, prefix string) (string, error) {
	return freeName(parent, prefix, "staging directory", func(p string) (string, error) {
		return p, os.Mkdir(p, 0o777)
	})
}
