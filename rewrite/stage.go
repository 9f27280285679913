package rewrite

import (
	"context"
	"errors"
	"path/filepath"
	"sync"

	"github.com/stateproc/stateproc/storage"
)

// Resolve returns p as an absolute path with the symbolic links of its
// existing part resolved, as CheckTarget compares its paths: a command
// that checks a target of its own against its input compares these.
func Resolve(p string) (string, error) { return resolve(p) }

// StageDir stages a directory for target under the rules a rewrite's
// output follows, for a command whose output is not a savepoint (export's
// datasets): it takes the target's lock, removes the temporary directories
// that killed runs into the same target left behind, and stages the
// directory beside the target. The caller has checked the target against
// its input. Publishing or aborting the staging releases the lock. It
// returns the names of the directories it removed.
func StageDir(target string, force bool) (storage.Staging, []string, error) {
	target = filepath.Clean(target)
	lock, err := lockTarget(filepath.Join(filepath.Dir(target), storage.TempPrefix+filepath.Base(target)+".lock"))
	if err != nil {
		return nil, nil, err
	}
	removed, err := removeStale(target)
	if err != nil {
		return nil, nil, errors.Join(err, lock.Release())
	}
	st, err := storage.Stage(target, force)
	if err != nil {
		return nil, removed, errors.Join(err, lock.Release())
	}
	return &lockedStaging{Staging: st, lock: lock}, removed, nil
}

// lockedStaging holds its target's lock until it is published or
// aborted.
type lockedStaging struct {
	storage.Staging
	lock *storage.FileLock
	once sync.Once
}

func (s *lockedStaging) unlock() (err error) {
	s.once.Do(func() { err = s.lock.Release() })
	return err
}

func (s *lockedStaging) Publish(ctx context.Context) error {
	err := s.Staging.Publish(ctx)
	if err != nil {
		return err
	}
	return s.unlock()
}

func (s *lockedStaging) Abort() error {
	return errors.Join(s.Staging.Abort(), s.unlock())
}
