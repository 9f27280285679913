package chkstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// Store writes the checkpoints and savepoints of one attempt.
// Savepoints, and the checkpoints of heap state, are canonical through and
// through; periodic checkpoints of Pebble state are incremental (see
// native.go). The checkpoint root and the savepoint may lie on disk or in
// a bucket (see the engine's package documentation).
type Store struct {
	compression snapshotfmt.Codec
	// root is the checkpoint root, a local path or a bucket URL.
	root string
	// bucket is the root when it lies in a bucket, opened at the first
	// checkpoint; nil otherwise.
	bucket *chkdir.Bucket
	// hold is the run's hold of the root: the deletes and the _metadata of
	// checkpoints there are made under it. Nil without a root.
	hold *RootHold
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

// NewStore returns the store of an attempt whose checkpoint root is root,
// held by hold (nil without a root), and whose work directory, where
// native checkpoints are made, is work.
func NewStore(root string, hold *RootHold, work string, compression snapshotfmt.Codec) *Store {
	return &Store{compression: compression, root: root, hold: hold, work: work, published: map[string]chkdir.File{}}
}

// Pending is what one checkpoint in flight has written so far: the
// canonical writer its subtasks write their parts through and, for an
// incremental checkpoint, the native databases they have added.
type Pending struct {
	// Writer writes the canonical part: data files and, at Publish,
	// _metadata.
	Writer *snapshotfmt.Writer

	id          uint64
	savepoint   bool
	incremental bool
	target      string
	meta        *savepoint.Metadata
	staging     storage.Target

	mu sync.Mutex
	// native lists the Pebble subtasks' native checkpoints; shared counts
	// the bytes they added to shared/ and reused the bytes they found there.
	native         []chkdir.DB
	shared, reused int64
}

// InBucket reports whether location is a bucket URL.
func InBucket(location string) bool {
	loc, err := storage.ParseLocation(location)
	return err == nil && loc.IsBucket()
}

// openBucket opens the bucket root, once.
func (s *Store) openBucket(ctx context.Context) (*chkdir.Bucket, error) {
	if s.bucket == nil {
		b, err := chkdir.OpenBucket(ctx, s.root)
		if err != nil {
			return nil, err
		}
		s.bucket = b
	}
	return s.bucket, nil
}

// NextID is the number after those of every complete checkpoint under the
// root: an earlier run's, or one of this run's whose publication was
// reported failed but took effect. A run numbers its checkpoints from it at
// least, so that retention, which keeps the highest numbers, keeps the
// run's own, and no number is taken twice.
func (s *Store) NextID(ctx context.Context) (uint64, error) {
	var ids []uint64
	if InBucket(s.root) {
		b, err := s.openBucket(ctx)
		if err != nil {
			return 0, err
		}
		if ids, err = b.List(ctx); err != nil {
			return 0, err
		}
	} else {
		var err error
		if ids, err = chkdir.List(s.root); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, err
		}
	}
	if len(ids) == 0 {
		return 1, nil
	}
	return ids[len(ids)-1] + 1, nil
}

// Close releases the bucket root's connection, if any.
func (s *Store) Close() error {
	if s.bucket == nil {
		return nil
	}
	return s.bucket.Close()
}

// Begin opens target, where checkpoint id with the metadata meta goes, and
// the canonical writer into it: a savepoint, or a periodic checkpoint that
// is incremental or not. It runs in the coordinator, one checkpoint at a
// time. On disk the checkpoint is staged beside its directory and renamed
// into place; in a bucket it is written in place and exists once its
// _metadata does, so objects that a dead run left under the same
// checkpoint's name are removed first.
func (s *Store) Begin(ctx context.Context, id uint64, target string, meta *savepoint.Metadata, isSavepoint, incremental bool) (*Pending, error) {
	cp := &Pending{id: id, savepoint: isSavepoint, incremental: incremental, target: target, meta: meta}
	if err := s.begin(ctx, cp); err != nil {
		return nil, err
	}
	return cp, nil
}

func (s *Store) begin(ctx context.Context, cp *Pending) error {
	switch {
	case !cp.savepoint && InBucket(s.root):
		b, err := s.openBucket(ctx)
		if err != nil {
			return err
		}
		if done, err := b.HasCheckpoint(ctx, cp.id); err != nil {
			return err
		} else if done {
			return fmt.Errorf("%w: %s holds a checkpoint", storage.ErrExists, storage.Shown(cp.target))
		}
		if err := b.RemoveCheckpoint(ctx, cp.id, s.hold.under); err != nil {
			return fmt.Errorf("removing what a dead run left of the checkpoint: %w", err)
		}
	case !InBucket(cp.target):
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
	cp.Writer = w
	return nil
}

// Publish makes cp visible: the list of its native databases, then its
// _metadata last. A checkpoint's _metadata is written under the hold of
// the root, and not at all once the hold may have passed to another run.
func (s *Store) Publish(ctx context.Context, cp *Pending) error {
	if cp.savepoint {
		if err := cp.writeManifest(ctx); err != nil {
			return err
		}
		return errors.Join(cp.Writer.Finish(ctx), cp.staging.Close())
	}
	// The manifest, then _metadata, each under a deadline of its own.
	step := func(f func(context.Context) error) (sent bool, err error) {
		hctx, cancel, err := s.hold.under(ctx)
		if err != nil {
			return false, err
		}
		defer cancel()
		err = f(hctx)
		if err != nil && ctx.Err() == nil && hctx.Err() != nil {
			// The hold ran out while the checkpoint was being
			// published: whether it landed is for the coordinator to
			// look at; the run writes no more there.
			err = fmt.Errorf("%w, or may be now: its lease ran out while the checkpoint was being published: %w", ErrRootHeld, err)
		}
		return true, err
	}
	sent, err := step(cp.writeManifest)
	if err == nil {
		sent, err = step(cp.Writer.Finish)
	}
	if !sent {
		s.Discard(cp)
		return err
	}
	return errors.Join(err, cp.staging.Close())
}

// Discard removes what cp wrote into its own directory: on disk its
// staging directory, in a bucket the objects it created. A checkpoint's
// objects in a bucket are deleted under the hold of the root, each within
// the hold's deadline; those left once the run lost it are left to the
// retention of the run that holds the root then, which may have written
// objects of the same names.
func (s *Store) Discard(cp *Pending) {
	if !cp.savepoint && InBucket(cp.target) {
		cp.Writer.Leave()
		storage.AbortUnder(cp.staging, s.hold.under)
	} else {
		cp.Writer.Abort()
	}
	cp.staging.Close()
}

// Reclaim makes sure that the run holds the root still, taking back a
// lease that lapsed if no other run took it meanwhile (RootHold.Retake):
// nil, or why the run does not hold the root.
func (s *Store) Reclaim(ctx context.Context) error {
	err := s.hold.Check(ctx)
	if Lapsed(err) {
		err = s.hold.Retake(ctx)
	}
	return err
}

// Written is how many bytes cp added to the checkpoint root: every file in
// its directory and the shared files it added.
func (cp *Pending) Written() int64 {
	return storage.CountersOf(cp.staging).BytesWritten.Load() + cp.shared
}

// Reused is how many bytes of the shared files cp references earlier
// checkpoints had written.
func (cp *Pending) Reused() int64 { return cp.reused }

// Exists reports whether a savepoint (or anything else, on disk) lies at
// location already.
func Exists(ctx context.Context, location string) (bool, error) {
	if !InBucket(location) {
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
