package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
)

// retain deletes all but the newest keep checkpoints under the root, then
// the shared files that no remaining checkpoint references: those of the
// deleted checkpoints that compaction has since replaced, and those that an
// aborted checkpoint left behind. It runs between checkpoints, when no
// subtask is adding shared files.
func (s *checkpointStore) retain(keep int) error {
	ids, err := chkdir.List(s.root)
	if err != nil {
		return err
	}
	for len(ids) > keep {
		if err := os.RemoveAll(chkdir.Path(s.root, ids[0])); err != nil {
			return err
		}
		ids = ids[1:]
	}
	referenced := map[string]bool{}
	for _, id := range ids {
		m, ok, err := chkdir.ReadManifest(chkdir.Path(s.root, id))
		if err != nil {
			// Without every reference, no shared file is known to be unused.
			return fmt.Errorf("engine: retention: %w", err)
		}
		if !ok {
			continue
		}
		for _, db := range m.Databases {
			for _, f := range db.Files {
				referenced[f.Path] = true
			}
		}
	}
	entries, err := os.ReadDir(filepath.Join(s.root, chkdir.SharedDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := path.Join(chkdir.SharedDir, e.Name())
		if referenced[name] {
			continue
		}
		if err := os.Remove(filepath.Join(s.root, filepath.FromSlash(name))); err != nil {
			return err
		}
		s.mu.Lock()
		delete(s.published, name)
		s.mu.Unlock()
	}
	return nil
}

// LatestCheckpoint returns the directory of the latest checkpoint under the
// checkpoint root: where a job killed while it ran restarts from
// (RunOptions.RestoreFrom). A checkpoint's directory appears only once the
// checkpoint is complete.
func LatestCheckpoint(root string) (string, error) {
	ids, err := chkdir.List(root)
	if err != nil {
		return "", fmt.Errorf("engine: checkpoint root: %w", err)
	}
	if len(ids) == 0 {
		return "", fmt.Errorf("engine: no checkpoint under %s", root)
	}
	return chkdir.Path(root, ids[len(ids)-1]), nil
}
