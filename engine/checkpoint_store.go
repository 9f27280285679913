package engine

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// checkpointStore writes the checkpoints and savepoints of one attempt.
// Savepoints, and the checkpoints of heap state, are canonical through and
// through; periodic checkpoints of Pebble state are incremental (see
// incremental_write.go).
type checkpointStore struct {
	compression snapshotfmt.Codec
	// root is the checkpoint root.
	root string
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

// begin stages the directory of cp and the canonical writer into it. It
// runs in the coordinator, one checkpoint at a time.
func (s *checkpointStore) begin(_ context.Context, cp *checkpoint) error {
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
	st, err := storage.Stage(cp.target, false)
	if err != nil {
		return err
	}
	cp.staging = &countingStaging{Target: st}
	w, err := snapshotfmt.NewWriter(cp.staging, cp.meta, snapshotfmt.Options{Compression: s.compression})
	if err != nil {
		st.Abort()
		return err
	}
	cp.writer = w
	return nil
}

// countingStaging counts the bytes written into a staged directory.
type countingStaging struct {
	storage.Target
	written atomic.Int64
}

func (s *countingStaging) Create(ctx context.Context, name string) (io.WriteCloser, error) {
	w, err := s.Target.Create(ctx, name)
	if err != nil {
		return nil, err
	}
	return countingWriter{w, &s.written}, nil
}

func (s *countingStaging) CreateNamed(ctx context.Context, stem, ext string) (storage.NamedWriter, error) {
	w, err := s.Target.CreateNamed(ctx, stem, ext)
	if err != nil {
		return nil, err
	}
	return countingNamed{w, &s.written}, nil
}

type countingNamed struct {
	storage.NamedWriter
	n *atomic.Int64
}

func (w countingNamed) Write(p []byte) (int, error) {
	n, err := w.NamedWriter.Write(p)
	w.n.Add(int64(n))
	return n, err
}

type countingWriter struct {
	io.WriteCloser
	n *atomic.Int64
}

func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.WriteCloser.Write(p)
	w.n.Add(int64(n))
	return n, err
}

// ErrCorruptCheckpoint is wrapped by errors about a checkpoint whose files
// are missing, damaged or inconsistent.
var ErrCorruptCheckpoint = chkdir.ErrCorrupt
