package engine

import (
	"context"
	"errors"
	"path/filepath"
	"sync"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/engine/internal/chkstore"
	"github.com/stateproc/stateproc/internal/workdir"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// IncrementalManifest is the file, in a checkpoint's directory, that makes
// it an incremental checkpoint: the tools look for it to know that the
// keyed state lies in native databases, beside the canonical _metadata.
const IncrementalManifest = chkdir.ManifestName

// OpenCheckpoint opens the checkpoint (or savepoint) in the local
// directory dir for the offline tools, through the read seam: an
// incremental checkpoint's keyed state comes from its native databases,
// which are materialized in a new directory under tempDir (the system's
// temporary directory when empty) and removed by Close; a checkpoint
// without native databases is read as the canonical savepoint it is. Every
// error about the checkpoint's content wraps savepoint.ErrCorrupt.
func OpenCheckpoint(ctx context.Context, dir, tempDir string) (savepoint.Source, error) {
	work, err := workdir.Create(tempDir, "stateproc-checkpoint-")
	if err != nil {
		return nil, err
	}
	// In a directory below the work directory, which chkstore removes
	// when it closes: the lock file stays until Remove, so that a run
	// killed while it removes the databases is still recognised.
	src, _, closeAll, err := chkstore.Open(ctx, dir, filepath.Join(work.Path, "native"))
	if err != nil {
		work.Remove()
		if errors.Is(err, ErrCorruptCheckpoint) {
			err = chkstore.Corrupt(err)
		}
		return nil, err
	}
	cs, ok := src.(*chkstore.Reader)
	if !ok {
		work.Remove()
		return src, nil
	}
	closeWork := func() error { return errors.Join(closeAll(), work.Remove()) }
	return &CheckpointSource{cs: cs, close: closeWork, segs: map[savepoint.StateRef][]savepoint.Segment{}}, nil
}

// CheckpointSource is an incremental checkpoint as the tools read it. The
// native databases keep no index, so the figures of their segments are
// counted, as a savepoint would hold them, by reading each state once, the
// first time its segments are asked for.
type CheckpointSource struct {
	cs    *chkstore.Reader
	close func() error

	mu sync.Mutex
	// segs holds the counted segments of every key group, by ref.
	segs map[savepoint.StateRef][]savepoint.Segment
}

// Layout says what the checkpoint is.
func (s *CheckpointSource) Layout() savepoint.Layout { return s.cs.Layout() }

// Metadata is the checkpoint's model, from its canonical part.
func (s *CheckpointSource) Metadata() *savepoint.Metadata { return s.cs.Metadata() }

// Canonical is the checkpoint's canonical part, a stateproc savepoint
// holding everything but the native databases' state: its segments lie in
// its data files, which a rewrite copies as opaque bytes.
func (s *CheckpointSource) Canonical() *snapshotfmt.Reader { return s.cs.Canonical() }

// Segments returns the segments of ref in kgs: from the canonical index, or,
// for the state of a native database, counted from its entries.
func (s *CheckpointSource) Segments(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) ([]savepoint.Segment, error) {
	if !s.cs.Native(ref.Operator) {
		return s.cs.Canonical().Segments(ctx, ref, kgs)
	}
	s.mu.Lock()
	all, ok := s.segs[ref]
	s.mu.Unlock()
	if !ok {
		var err error
		if all, err = s.cs.Segments(ctx, ref, keygroup.All(s.Metadata().Operators[ref.Operator].MaxParallelism)); err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.segs[ref] = all
		s.mu.Unlock()
	}
	var out []savepoint.Segment
	for _, seg := range all {
		if kgs.Contains(seg.KeyGroup) {
			out = append(out, seg)
		}
	}
	return out, nil
}

// Entries iterates the entries of ref in kgs.
func (s *CheckpointSource) Entries(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) savepoint.EntryIterator {
	return chkstore.CorruptEntries(s.cs.Entries(ctx, ref, kgs))
}

// Close closes the databases and the canonical part and removes the
// materialized files.
func (s *CheckpointSource) Close() error { return s.close() }

// ErrCorruptCheckpoint is wrapped by errors about a checkpoint whose files
// are missing, damaged or inconsistent.
var ErrCorruptCheckpoint = chkdir.ErrCorrupt

// ErrCheckpointRootHeld is wrapped by the error of a run whose checkpoint
// root (RunOptions.CheckpointDir) another live run holds, and of a run that
// lost its hold of the root while it ran (in a bucket, where the hold is a
// lease that its holder renews): such a run fails for good, without a
// restart.
var ErrCheckpointRootHeld = chkstore.ErrRootHeld

// ErrCheckpointRootOfAnotherJob is wrapped by the error of a run whose
// checkpoint root records another job's name (CheckpointRootJobName):
// retention there would delete that job's checkpoints. Such a run fails
// at once, without a restart.
var ErrCheckpointRootOfAnotherJob = chkstore.ErrRootOfAnotherJob

// CheckpointRootJobName is the file under a checkpoint root that names the
// job whose checkpoints it holds, written by the first run into it.
const CheckpointRootJobName = chkstore.JobName

// CheckpointRootHoldName is the file under a checkpoint root by which a run
// holds the root while it runs: a lock file on disk, a lease object in a
// bucket. A run removes it at its end; one that was killed leaves it.
const CheckpointRootHoldName = chkstore.HoldName

// LatestCheckpoint returns the location of the latest checkpoint under the
// checkpoint root, a local path or a bucket URL: where a job killed while
// it ran restarts from. A restart takes it with RunOptions.RestoreLatest,
// which looks once the run holds the root; what this returns may be
// superseded by a run that still holds it. A checkpoint's directory
// appears only once the checkpoint is complete; in a bucket, a checkpoint
// is complete once its _metadata exists.
func LatestCheckpoint(root string) (string, error) { return chkstore.Latest(root) }
