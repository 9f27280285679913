package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// checkpointStore writes the checkpoints and savepoints of one attempt.
// Savepoints, and the checkpoints of heap state, are canonical through and
// through; periodic checkpoints of Pebble state are incremental (see
// incremental_write.go). The checkpoint root and the savepoint may lie on
// disk or in a bucket (see the package documentation).
type checkpointStore struct {
	compression snapshotfmt.Codec
	// root is the checkpoint root, a local path or a bucket URL.
	root string
	// bucket is the root when it lies in a bucket, opened at the first
	// checkpoint; nil otherwise.
	bucket *chkdir.Bucket
	// work is where native checkpoints are made before they are published:
	// beside the attempt's databases, so that making one links their files
	// rather than copying them.
	work string

	// sharedMade is set once shared/ exists and its name is synced.
	sharedMade bool

	mu sync.Mutex
	// published holds the shared files this attempt wrote, by path relative
	// to the root: an immutable file is written at the first checkpoint that
	// needs it and referenced by the later ones.
	published map[string]chkdir.File
}

func newCheckpointStore(opts *RunOptions, work string) *checkpointStore {
	return &checkpointStore{compression: opts.Compression, root: opts.CheckpointDir, work: work, published: map[string]chkdir.File{}}
}

// inBucket reports whether location is a bucket URL.
func inBucket(location string) bool {
	loc, err := storage.ParseLocation(location)
	return err == nil && loc.IsBucket()
}

// openBucket opens the bucket root, once.
func (s *checkpointStore) openBucket(ctx context.Context) (*chkdir.Bucket, error) {
	if s.bucket == nil {
		b, err := chkdir.OpenBucket(ctx, s.root)
		if err != nil {
			return nil, err
		}
		s.bucket = b
	}
	return s.bucket, nil
}

// close releases the bucket root's connection, if any.
func (s *checkpointStore) close() error {
	if s.bucket == nil {
		return nil
	}
	return s.bucket.Close()
}

// begin opens the target of cp and the canonical writer into it. It runs
// in the coordinator, one checkpoint at a time. On disk the checkpoint is
// staged beside its directory and renamed into place; in a bucket it is
// written in place and exists once its _metadata does, so objects that a
// dead run left under the same checkpoint's name are removed first.
func (s *checkpointStore) begin(ctx context.Context, cp *checkpoint) error {
	switch {
	case !cp.savepoint && inBucket(s.root):
		b, err := s.openBucket(ctx)
		if err != nil {
			return err
		}
		if done, err := b.HasCheckpoint(ctx, cp.id); err != nil {
			return err
		} else if done {
			return fmt.Errorf("%w: %s holds a checkpoint", storage.ErrExists, cp.target)
		}
		if err := b.RemoveCheckpoint(ctx, cp.id); err != nil {
			return fmt.Errorf("removing what a dead run left of the checkpoint: %w", err)
		}
	case !inBucket(cp.target):
		if err := os.MkdirAll(filepath.Dir(cp.target), 0o755); err != nil {
			return err
		}
		if cp.incremental && !s.sharedMade {
			if err := os.MkdirAll(filepath.Join(s.root, chkdir.SharedDir), 0o755); err != nil {
				return err
			}
			if err := chkdir.SyncDir(s.root); err != nil {
				return err
			}
			s.sharedMade = true
		}
	}
	t, err := storage.OpenTarget(ctx, cp.target, storage.TargetOptions{})
	if err != nil {
		return err
	}
	cp.staging = t
	w, err := snapshotfmt.NewWriter(t, cp.meta, snapshotfmt.Options{Compression: s.compression})
	if err != nil {
		t.Abort()
		t.Close()
		return err
	}
	cp.writer = w
	return nil
}

// publish makes cp visible: its _metadata last.
func (s *checkpointStore) publish(ctx context.Context, cp *checkpoint) error {
	return errors.Join(cp.writer.Finish(ctx), cp.staging.Close())
}

// discard removes what cp wrote into its own directory.
func (s *checkpointStore) discard(cp *checkpoint) {
	cp.writer.Abort()
	cp.staging.Close()
}

// written is how many bytes cp wrote into its own directory.
func (cp *checkpoint) written() int64 {
	return storage.CountersOf(cp.staging).BytesWritten.Load()
}

// savepointExists reports whether a savepoint (or anything else, on disk)
// lies at location already.
func savepointExists(ctx context.Context, location string) (bool, error) {
	if !inBucket(location) {
		_, err := os.Stat(location)
		return err == nil, nil
	}
	d, err := storage.OpenDir(ctx, location, storage.Options{})
	if err != nil {
		return false, err
	}
	defer d.Close()
	f, err := d.Open(ctx, storage.MetadataName)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	f.Close()
	return true, nil
}

// ErrCorruptCheckpoint is wrapped by errors about a checkpoint whose files
// are missing, damaged or inconsistent.
var ErrCorruptCheckpoint = chkdir.ErrCorrupt
