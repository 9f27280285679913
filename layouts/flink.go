package layouts

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/flinksource"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// Directory names of Flink's file system checkpoint storage: a job's
// checkpoint directory holds chk-<id> per retained checkpoint, and shared
// and taskowned, the files that several checkpoints reference.
const (
	checkpointPrefix = "chk-"
	sharedDir        = "shared"
	taskOwnedDir     = "taskowned"
)

// openFlink opens an Apache Flink savepoint or checkpoint. A chk-<id>
// directory beside the shared/ or taskowned/ directory of Flink's
// checkpoint storage, on disk or in a bucket, is read as that checkpoint
// of the job's directory, so that the files it shares with other
// checkpoints are found there.
func openFlink(ctx context.Context, dir storage.Dir, local string, o Options) (savepoint.Source, error) {
	if local != "" {
		if root, id, ok := flinkCheckpoint(local); ok {
			rd := storage.LocalDir(root)
			src, err := o.source(flinksource.OpenCheckpoint(ctx, rd, id, o.flink()))
			if err != nil {
				rd.Close()
				return nil, err
			}
			return withCloser(src, rd), nil
		}
	}
	if o.bucket != nil {
		root, id, err := bucketCheckpoint(ctx, *o.bucket, o.Store)
		if err != nil {
			return nil, err
		}
		if root != nil {
			src, err := o.source(flinksource.OpenCheckpoint(ctx, root, id, o.flink()))
			if err != nil {
				root.Close()
				return nil, err
			}
			return withCloser(src, root), nil
		}
	}
	return o.source(flinksource.Open(ctx, dir, o.flink()))
}

// flink is the options of the Flink reader: the path map, and the
// directories it names opened through o.mapped.
func (o Options) flink() flinkfmt.Options {
	opts := flinkfmt.Options{PathMap: o.PathMap}
	if o.mapped != nil {
		opts.OpenDir = o.mapped.open
	}
	return opts
}

// source is s as opened, wrapped when it must close what it reads besides:
// the directories that o's path map names.
func (o Options) source(s *flinksource.Source, err error) (savepoint.Source, error) {
	if err != nil {
		return nil, err
	}
	if o.mapped != nil {
		return &flinkSource{Source: s, closers: []io.Closer{o.mapped}}, nil
	}
	return s, nil
}

// flinkCheckpoint reports whether path is the chk-<id> directory of a job's
// checkpoint directory, which holds shared/ or taskowned/ beside it.
func flinkCheckpoint(path string) (root string, id int64, ok bool) {
	clean := filepath.Clean(path)
	id, ok = checkpointID(filepath.Base(clean))
	if !ok {
		return "", 0, false
	}
	root = filepath.Dir(clean)
	if !hasSharedDirs(root) {
		return "", 0, false
	}
	return root, id, true
}

// checkpointID reads the id of a chk-<id> directory's name.
func checkpointID(name string) (int64, bool) {
	n, found := strings.CutPrefix(name, checkpointPrefix)
	if !found {
		return 0, false
	}
	id, err := strconv.ParseInt(n, 10, 64)
	return id, err == nil && id >= 0
}

// hasSharedDirs reports whether root holds the shared/ or taskowned/
// directory of Flink's checkpoint storage.
func hasSharedDirs(root string) bool {
	for _, d := range []string{sharedDir, taskOwnedDir} {
		if st, err := os.Lstat(filepath.Join(root, d)); err == nil && st.IsDir() {
			return true
		}
	}
	return false
}

// flinkJobDir reports whether path, read through dir, is a Flink job's
// checkpoint directory, which users point at to read the job's newest
// checkpoint: no _metadata of its own, shared/ or taskowned/, and chk-<id>
// directories, the newest of which with a _metadata holds a Flink one. It
// returns that id.
func flinkJobDir(ctx context.Context, dir storage.Dir, path string) (int64, bool) {
	if _, err := os.Lstat(filepath.Join(path, savepoint.MetadataFile)); !errors.Is(err, fs.ErrNotExist) || !hasSharedDirs(path) {
		return 0, false
	}
	return newestFlinkCheckpoint(ctx, dir)
}

// newestFlinkCheckpoint returns the id of the newest checkpoint in root,
// a job's checkpoint directory, when its _metadata is Flink's.
func newestFlinkCheckpoint(ctx context.Context, root storage.Dir) (int64, bool) {
	id, err := flinkfmt.NewestCheckpoint(ctx, root)
	if err != nil {
		return 0, false
	}
	head, err := readHead(ctx, root, checkpointPrefix+strconv.FormatInt(id, 10)+"/"+savepoint.MetadataFile)
	return id, err == nil && isFlink(head)
}

// bucketCheckpoint returns the job's checkpoint directory, opened, when
// loc, a prefix in a bucket, is its chk-<id>: a listing of loc's parent,
// one request, finds shared/ or taskowned/ beside it. It returns a nil
// root otherwise.
func bucketCheckpoint(ctx context.Context, loc storage.Location, opts storage.Options) (root storage.DirCloser, id int64, err error) {
	id, ok := checkpointID(loc.Base())
	if !ok || loc.Prefix == "" {
		return nil, 0, nil
	}
	parent, err := storage.OpenDir(ctx, loc.Parent().URL(), opts)
	if err != nil {
		return nil, 0, err
	}
	if dirs, err := storage.Subdirs(ctx, parent); err != nil || !sharesFiles(dirs) {
		parent.Close()
		return nil, 0, err
	}
	return parent, id, nil
}

// sharesFiles reports whether the directories of a job's checkpoint
// directory include shared or taskowned.
func sharesFiles(dirs []string) bool {
	return slices.Contains(dirs, sharedDir) || slices.Contains(dirs, taskOwnedDir)
}

// openBucketJob opens the newest checkpoint of a Flink job's checkpoint
// directory in a bucket, dir having no _metadata of its own. It returns a
// nil source when dir is no such directory.
func openBucketJob(ctx context.Context, dir storage.Dir, o Options) (savepoint.Source, error) {
	dirs, err := storage.Subdirs(ctx, dir)
	if err != nil || !sharesFiles(dirs) {
		return nil, err
	}
	id, ok := newestFlinkCheckpoint(ctx, dir)
	if !ok {
		return nil, nil
	}
	return o.source(flinksource.OpenCheckpoint(ctx, dir, id, o.flink()))
}

// mappedDirs opens the directories a path map names, each once, for the
// reader's many reads through them, and closes them with the source.
type mappedDirs struct {
	ctx  context.Context
	opts storage.Options
	mu   sync.Mutex
	dirs map[string]storage.DirCloser
}

// newMappedDirs returns the mappedDirs of o, nil without a path map.
func newMappedDirs(ctx context.Context, o Options) *mappedDirs {
	if len(o.PathMap) == 0 {
		return nil
	}
	return &mappedDirs{ctx: ctx, opts: o.Store, dirs: map[string]storage.DirCloser{}}
}

func (m *mappedDirs) open(location string) (storage.Dir, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d, ok := m.dirs[location]; ok {
		return d, nil
	}
	d, err := storage.OpenDir(m.ctx, location, m.opts)
	if err != nil {
		return nil, err
	}
	m.dirs[location] = d
	return d, nil
}

// Close closes every directory opened.
func (m *mappedDirs) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, d := range m.dirs {
		errs = append(errs, d.Close())
	}
	clear(m.dirs)
	return errors.Join(errs...)
}

// flinkSource is an Apache Flink savepoint with what it closes after
// itself: its bucket, its job's checkpoint directory, the directories a
// path map named. It keeps the source's own methods: its walk, which
// counts the segments in the read that scans them (Flink keeps no index),
// its warnings, and its reader, for the rewrites and diff.
type flinkSource struct {
	*flinksource.Source
	closers []io.Closer
}

func (s *flinkSource) Close() error {
	errs := []error{s.Source.Close()}
	for _, c := range s.closers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Unwrap is the source itself, whose reader the Flink rewrites use.
func (s *flinkSource) Unwrap() savepoint.Source { return s.Source }
