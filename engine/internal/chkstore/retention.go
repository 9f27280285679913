package chkstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/storage"
)

// Retain deletes all but the newest keep checkpoints under the root, then
// the shared files that no remaining checkpoint references: those of the
// deleted checkpoints that compaction has since replaced, and those that an
// aborted checkpoint left behind. It runs between checkpoints, when no
// subtask is adding shared files, under the hold of the root: in a
// bucket, each delete is made under the hold's deadline, and none once the
// hold may have passed to another run.
func (s *Store) Retain(ctx context.Context, keep int) error {
	if s.bucket != nil {
		return s.retainBucket(ctx, keep)
	}
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
		if ok {
			addReferences(referenced, m)
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
		s.forget(name)
	}
	return nil
}

func addReferences(referenced map[string]bool, m *chkdir.Manifest) {
	for _, db := range m.Databases {
		for _, f := range db.Files {
			referenced[f.Path] = true
		}
	}
}

func (s *Store) forget(name string) {
	s.mu.Lock()
	delete(s.published, name)
	s.mu.Unlock()
}

// retainBucket is retain on a bucket root. A checkpoint there is deleted
// _metadata first, so that it stops being one before its files go; the
// objects of checkpoints that began before the newest complete one and
// never completed (a dead run's, an aborted one's content-named files) go
// too.
func (s *Store) retainBucket(ctx context.Context, keep int) error {
	b := s.bucket
	ids, err := b.List(ctx)
	if err != nil {
		return err
	}
	for len(ids) > keep {
		if err := b.RemoveCheckpoint(ctx, ids[0], s.hold.under); err != nil {
			return err
		}
		ids = ids[1:]
	}
	if len(ids) > 0 {
		incomplete, err := b.Incomplete(ctx)
		if err != nil {
			return err
		}
		for _, id := range incomplete {
			if id < ids[len(ids)-1] {
				if err := b.RemoveCheckpoint(ctx, id, s.hold.under); err != nil {
					return err
				}
			}
		}
	}
	referenced := map[string]bool{}
	for _, id := range ids {
		m, ok, err := b.ReadManifest(ctx, id)
		if err != nil {
			return fmt.Errorf("engine: retention: %w", err)
		}
		if ok {
			addReferences(referenced, m)
		}
	}
	shared, err := b.Shared(ctx)
	if err != nil {
		return err
	}
	for _, name := range shared {
		if referenced[name] {
			continue
		}
		if err := b.Remove(ctx, name, s.hold.under); err != nil {
			return err
		}
		s.forget(name)
	}
	return nil
}

// Latest returns the location of the latest checkpoint under the
// checkpoint root, a local path or a bucket URL. A checkpoint's directory
// appears only once the checkpoint is complete; in a bucket, a checkpoint
// is complete once its _metadata exists.
func Latest(root string) (string, error) {
	loc, err := storage.ParseLocation(root)
	if err != nil {
		return "", fmt.Errorf("engine: checkpoint root: %w", err)
	}
	if !loc.IsBucket() {
		root = loc.Path
	}
	var ids []uint64
	if InBucket(root) {
		ids, err = latestInBucket(context.Background(), root)
	} else {
		ids, err = chkdir.List(root)
	}
	if err != nil {
		return "", fmt.Errorf("engine: checkpoint root: %w", err)
	}
	if len(ids) == 0 {
		return "", fmt.Errorf("engine: no checkpoint under %s", storage.Shown(root))
	}
	return chkdir.Path(root, ids[len(ids)-1]), nil
}

func latestInBucket(ctx context.Context, root string) ([]uint64, error) {
	b, err := chkdir.OpenBucket(ctx, root)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return b.List(ctx)
}
