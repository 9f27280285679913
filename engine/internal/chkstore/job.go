package chkstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/storage"
)

// JobName is the file, under the checkpoint root, that names the job whose
// checkpoints the root holds.
const JobName = "_job"

// ErrRootOfAnotherJob is wrapped by the error of a run whose checkpoint
// root holds another job's checkpoints: its retention would delete them.
var ErrRootOfAnotherJob = errors.New("engine: the checkpoint root holds another job's checkpoints")

// maxJobName bounds what is read of a JobName file, which a root of
// unknown origin may hold.
const maxJobName = 4 << 10

// ClaimRoot makes sure that the root the run holds is job's: a root whose
// JobName names another job fails it with ErrRootOfAnotherJob; one that
// names none is given job's name, under the hold.
func (h *RootHold) ClaimRoot(ctx context.Context, root, job string) error {
	where := storage.Shown(root) + "/" + JobName
	name, found, err := h.readJobName(ctx, root)
	switch {
	case err != nil:
		return fmt.Errorf("engine: checkpoint root: reading %s: %w", where, err)
	case found && name != job:
		return fmt.Errorf("%w: %s names the job %q, and this is %q; give each job a root of its own (or remove %s to hand the root over)",
			ErrRootOfAnotherJob, where, name, job, JobName)
	case found:
		return nil
	}
	if err := h.writeJobName(ctx, root, job); err != nil {
		return fmt.Errorf("engine: checkpoint root: writing %s: %w", where, err)
	}
	return nil
}

func (h *RootHold) readJobName(ctx context.Context, root string) (string, bool, error) {
	d := h.bucket
	if d == nil {
		d = storage.LocalDir(root)
		defer d.Close()
	}
	f, err := d.Open(ctx, JobName)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	} else if err != nil {
		return "", false, err
	}
	defer f.Close()
	b := make([]byte, min(f.Size(), maxJobName))
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return "", false, err
	}
	return string(bytes.TrimSpace(b)), true, nil
}

func (h *RootHold) writeJobName(ctx context.Context, root, job string) error {
	content := []byte(job + "\n")
	if h.bucket == nil {
		tmp, err := storage.CreateTemp(root, storage.TempPrefix+"job-")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		if _, err := tmp.Write(content); err != nil {
			tmp.Close()
			return err
		}
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return err
		}
		if err := tmp.Close(); err != nil {
			return err
		}
		if err := os.Rename(tmp.Name(), filepath.Join(root, JobName)); err != nil {
			return err
		}
		return chkdir.SyncDir(root)
	}
	hctx, cancel, err := h.under(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	return storage.Put(hctx, h.bucket, JobName, bytes.NewReader(content))
}
