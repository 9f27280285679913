package flinkfmt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/stateproc/stateproc/storage"
)

// Directory names of Flink's file system checkpoint storage
// (FsCheckpointStorageAccess): a job's checkpoint directory holds one
// chk-<id> directory per retained checkpoint, with its _metadata and its
// exclusive files, and the directories shared (the SST files that
// incremental checkpoints share) and taskowned.
const (
	checkpointDirPrefix = "chk-"
	sharedDir           = "shared"
	taskOwnedDir        = "taskowned"
)

// OpenCheckpoint opens a retained checkpoint in the layout of Flink's file
// system checkpoint storage. root is the job's checkpoint directory (the
// one that holds chk-<id>, shared and taskowned); id selects chk-<id>, or,
// when negative, the newest checkpoint with a _metadata. Relative handles
// are read from chk-<id>, as Flink resolves them against the directory of
// the _metadata. An absolute path recorded in the metadata is read from
// root when one of its directories is shared, taskowned or chk-<n>: from
// the last of them on, so that the files are found wherever the job's
// directory has been copied. Other absolute paths follow the rules of
// Open. Nothing outside root is read unless Options.PathMap says so.
func OpenCheckpoint(ctx context.Context, root storage.Dir, id int64, opts Options) (*Reader, error) {
	if id < 0 {
		var err error
		if id, err = NewestCheckpoint(ctx, root); err != nil {
			return nil, err
		}
	}
	chk := checkpointDirPrefix + strconv.FormatInt(id, 10)
	dir, err := storage.Sub(root, chk)
	if err != nil {
		return nil, err
	}
	r, err := Open(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	r.root = root
	if got := r.meta.CheckpointID; got != id {
		r.meta.Warnings = append(r.meta.Warnings, fmt.Sprintf("%s/%s records checkpoint %d", chk, MetadataFile, got))
	}
	return r, nil
}

// ErrNoCheckpoint is returned by OpenCheckpoint for a directory without a
// retained checkpoint.
var ErrNoCheckpoint = errors.New("flinkfmt: no retained checkpoint")

// NewestCheckpoint returns the id of the newest retained checkpoint in a
// job's checkpoint directory: the highest chk-<id> that holds a _metadata.
func NewestCheckpoint(ctx context.Context, root storage.Dir) (int64, error) {
	// The directories alone: a job's shared/ may hold many thousands of
	// files, which a listing of every name would page through.
	dirs, err := storage.Subdirs(ctx, root)
	if err != nil {
		return 0, err
	}
	var ids []int64
	for _, d := range dirs {
		if id, ok := checkpointID(d); ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for i := len(ids) - 1; i >= 0; i-- {
		f, err := root.Open(ctx, checkpointDirPrefix+strconv.FormatInt(ids[i], 10)+"/"+MetadataFile)
		switch {
		case err == nil:
			f.Close()
			return ids[i], nil
		case !errors.Is(err, fs.ErrNotExist):
			return 0, err
		}
	}
	return 0, fmt.Errorf("%w: %s has no %s<id>/%s", ErrNoCheckpoint, root.Location(), checkpointDirPrefix, MetadataFile)
}

// checkpointID reads the id of a chk-<id> directory name.
func checkpointID(name string) (int64, bool) {
	digits, ok := strings.CutPrefix(name, checkpointDirPrefix)
	if !ok || digits == "" || digits[0] == '+' || digits[0] == '-' {
		return 0, false
	}
	id, err := strconv.ParseInt(digits, 10, 64)
	return id, err == nil
}

// checkpointRelative finds the part of an absolute path, without its
// scheme and authority, that lies in a job's checkpoint directory: from
// the last directory named shared, taskowned or chk-<n> on. File-merging
// puts files one directory deeper (shared/job_..._op_..., taskowned/job_..._tm_...),
// so the marker need not be the file's parent.
func checkpointRelative(p string) (string, bool) {
	parts := strings.Split(p, "/")
	for i := len(parts) - 2; i >= 0; i-- {
		c := parts[i]
		if _, chk := checkpointID(c); c != sharedDir && c != taskOwnedDir && !chk {
			continue
		}
		rel := strings.Join(parts[i:], "/")
		if storage.CheckName(rel) != nil {
			return "", false
		}
		return rel, true
	}
	return "", false
}

// outsideHint explains a file that was looked up by its base name and not
// found, when its path shows that it lies outside the directory that was
// opened.
func (r *Reader) outsideHint(s *StreamHandle, err error) string {
	if r.root != nil || (s.Kind != StreamFile && s.Kind != StreamSegment) || !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	rel, ok := checkpointRelative(stripScheme(s.Name))
	if !ok || strings.HasPrefix(rel, checkpointDirPrefix) {
		return ""
	}
	return fmt.Sprintf(" (%s lies in the job's checkpoint directory, outside %s: read the checkpoint from the job's directory, or map the path)", rel, r.dir.Location())
}
