package workdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/stateproc/stateproc/storage"
)

const (
	// LockName is the file inside a work directory that its creator keeps
	// locked for the directory's life.
	LockName = ".stateproc-work.lock"
	// liveSuffix ends the name of a work directory, goneSuffix that of one
	// being removed. Names such as a staging directory's
	// (storage.TempPrefix + target + "-" + digits) never end in either, so
	// a prefix shared with them, as a target named "rescale" shares
	// storage.TempPrefix + "rescale-", takes none of them for a work
	// directory.
	liveSuffix = ".work"
	goneSuffix = ".gone"
	// locklessAge is how old a work directory without its lock file must
	// be to be taken for that of a run killed before it locked it, rather
	// than one of a live run between the two steps.
	locklessAge = time.Minute
)

// Dir is a work directory of this process.
type Dir struct {
	// Path is the directory.
	Path string
	// Removed lists the directories of dead runs that the sweep before
	// this directory's creation removed.
	Removed []string
	lock    *storage.FileLock
}

// Create removes from parent, the first time this process creates a
// directory with prefix there, the work directories of dead runs with the
// same prefix, then creates a new one, locked. parent "" is the system's
// temporary directory. Remove must be called when the work is done.
func Create(parent, prefix string) (*Dir, error) {
	removed := sweepOnce(parent, prefix)
	path, err := os.MkdirTemp(parent, prefix+"*"+liveSuffix)
	if err != nil {
		return nil, err
	}
	d := &Dir{Path: path, Removed: removed}
	lockPath := filepath.Join(path, LockName)
	if d.lock, err = storage.LockFile(lockPath); err != nil {
		// On a file system without flock the directory lives unlocked:
		// its lock file, which no sweep can take there either, keeps it
		// from being taken for a lockless leftover.
		if _, serr := os.Lstat(lockPath); serr != nil {
			os.Remove(path)
			return nil, err
		}
		d.lock = nil
	}
	return d, nil
}

// Remove removes the directory with everything in it, and then releases
// its lock. A directory that is already gone is no error.
func (d *Dir) Remove() error {
	path := d.Path
	if gone := gonePath(d.Path); os.Rename(d.Path, gone) == nil {
		path = gone
	}
	err := os.RemoveAll(path)
	if d.lock != nil {
		// The lock file went with the directory.
		if rerr := d.lock.Release(); err == nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = rerr
		}
		d.lock = nil
	}
	return err
}

// sweeps records the parents and prefixes this process has swept: a run
// that dies later is swept by the next process, and a sweep per directory
// would read the parent, the system's temporary directory perhaps, again
// and again.
var sweeps struct {
	sync.Mutex
	done map[[2]string]bool
}

func sweepOnce(parent, prefix string) []string {
	if parent == "" {
		parent = os.TempDir()
	}
	key := [2]string{filepath.Clean(parent), prefix}
	sweeps.Lock()
	defer sweeps.Unlock()
	if sweeps.done[key] {
		return nil
	}
	if sweeps.done == nil {
		sweeps.done = map[[2]string]bool{}
	}
	sweeps.done[key] = true
	return sweep(parent, prefix, time.Now())
}

// sweep removes from parent the work directories with prefix that no live
// run holds and returns their paths.
func sweep(parent, prefix string, now time.Time) []string {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		suffix, ok := nameOf(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		path := filepath.Join(parent, e.Name())
		switch {
		case suffix == goneSuffix:
			// Only a removal gives this name, by the owner or after its
			// death: whatever is left of it is no live run's.
			if os.RemoveAll(path) != nil {
				continue
			}
		case !removeIfDead(path, now):
			continue
		}
		removed = append(removed, path)
	}
	return removed
}

// nameOf reports whether name is that of a work directory with prefix,
// and which suffix it ends with.
func nameOf(name, prefix string) (suffix string, ok bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return "", false
	}
	for _, suffix := range []string{liveSuffix, goneSuffix} {
		if digits, ok := strings.CutSuffix(rest, suffix); ok && digits != "" && strings.Trim(digits, "0123456789") == "" {
			return suffix, true
		}
	}
	return "", false
}

func gonePath(path string) string { return strings.TrimSuffix(path, liveSuffix) + goneSuffix }
