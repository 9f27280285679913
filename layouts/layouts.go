package layouts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/flinksource"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// headLen is how many bytes of _metadata detection looks at: enough for
// every layout's magic and version.
const headLen = 12

// layout is one layout stateproc knows: how to recognize its metadata, and
// how to open it.
type layout struct {
	name string
	// match reports whether head, the first bytes of _metadata (fewer when
	// the file is shorter), are the layout's.
	match func(head []byte) bool
	// open opens the savepoint in dir; local is the directory's path when
	// it lies on the local file system, and empty otherwise.
	open func(ctx context.Context, dir storage.Dir, local string, head []byte, o Options) (savepoint.Source, error)
}

// Options say how a savepoint is opened.
type Options struct {
	// PathMap rewrites the absolute paths an Apache Flink _metadata
	// records: a path that starts with a key is read from the value's place
	// instead (a relative value within the savepoint's directory). Without
	// one, an absolute path is looked up by its base name in the
	// savepoint's directory and nowhere else.
	PathMap map[string]string
}

// known lists the layouts in the order they are tried.
var known = []layout{
	{name: "stateproc", match: isStateproc, open: openStateproc},
	{name: "Apache Flink", match: isFlink, open: openFlink},
}

// Open opens the savepoint or checkpoint in the local directory path,
// whatever its layout. It does not check that path is a directory: a path
// without a _metadata is not a savepoint (savepoint.ErrNotSavepoint),
// unless it is a Flink job's checkpoint directory, whose newest checkpoint
// it opens.
func Open(ctx context.Context, path string) (savepoint.Source, error) {
	return OpenWith(ctx, path, Options{})
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, path string, o Options) (savepoint.Source, error) {
	if id, ok := flinkJobDir(ctx, path); ok {
		return flinksource.OpenCheckpoint(ctx, storage.LocalDir(path), id, flinkfmt.Options{PathMap: o.PathMap})
	}
	return open(ctx, storage.LocalDir(path), path, o)
}

// OpenDir opens the savepoint in dir, which may lie anywhere storage
// reaches. A checkpoint whose keyed state lies in native databases needs a
// local directory (see Open) and is refused here.
func OpenDir(ctx context.Context, dir storage.Dir) (savepoint.Source, error) {
	return open(ctx, dir, "", Options{})
}

func open(ctx context.Context, dir storage.Dir, local string, o Options) (savepoint.Source, error) {
	head, err := readHead(ctx, dir)
	if err != nil {
		return nil, err
	}
	for _, l := range known {
		if l.match(head) {
			return l.open(ctx, dir, local, head, o)
		}
	}
	// No layout claims it: the stateproc reader says what is wrong with
	// the file in its own terms (a foreign magic, a truncated preamble).
	return openStateproc(ctx, dir, local, head, o)
}

// readHead returns the first bytes of dir's _metadata.
func readHead(ctx context.Context, dir storage.Dir) ([]byte, error) {
	f, err := dir.Open(ctx, savepoint.MetadataFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s has no %s", savepoint.ErrNotSavepoint, dir.Location(), savepoint.MetadataFile)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, min(f.Size(), headLen))
	if n, err := f.ReadAt(head, 0); n < len(head) {
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: %s ends after %d bytes", savepoint.ErrCorrupt, savepoint.MetadataFile, n)
		}
		return nil, err
	}
	return head, nil
}

// stateprocMagic starts every file of stateproc's layout (see
// snapshotfmt/FORMAT.md).
var stateprocMagic = []byte("STPROC")

func isStateproc(head []byte) bool { return bytes.HasPrefix(head, stateprocMagic) }

// openStateproc opens a stateproc savepoint, or one of the engine's
// checkpoints: an incremental one lists its native databases in a manifest
// beside the metadata, and is read through the engine's checkpoint reader.
func openStateproc(ctx context.Context, dir storage.Dir, local string, _ []byte, _ Options) (savepoint.Source, error) {
	switch f, err := dir.Open(ctx, engine.IncrementalManifest); {
	case err == nil:
		f.Close()
		if local == "" {
			return nil, fmt.Errorf("%w: %s is an incremental checkpoint, whose native databases are read from a local directory only",
				savepoint.ErrUnsupported, dir.Location())
		}
		return engine.OpenCheckpoint(ctx, local, "")
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	if local == "" {
		// In a bucket every open is a request: a data file is opened
		// when first read, and inspect without a scan reads one object.
		return snapshotfmt.OpenLazily(ctx, dir)
	}
	return snapshotfmt.Open(ctx, dir)
}

func isFlink(head []byte) bool { return flinkfmt.IsFlink(head) }

// openFlink opens an Apache Flink savepoint or checkpoint. A local chk-<id>
// directory beside the shared/ or taskowned/ directory of Flink's
// checkpoint storage is read as that checkpoint of the job's directory,
// so that the files it shares with other checkpoints are found there.
func openFlink(ctx context.Context, dir storage.Dir, local string, _ []byte, o Options) (savepoint.Source, error) {
	opts := flinkfmt.Options{PathMap: o.PathMap}
	if local != "" {
		if root, id, ok := flinkCheckpoint(local); ok {
			return flinksource.OpenCheckpoint(ctx, storage.LocalDir(root), id, opts)
		}
	}
	return flinksource.Open(ctx, dir, opts)
}

// flinkCheckpoint reports whether path is the chk-<id> directory of a job's
// checkpoint directory, which holds shared/ or taskowned/ beside it.
func flinkCheckpoint(path string) (root string, id int64, ok bool) {
	clean := filepath.Clean(path)
	n, found := strings.CutPrefix(filepath.Base(clean), "chk-")
	if !found {
		return "", 0, false
	}
	id, err := strconv.ParseInt(n, 10, 64)
	if err != nil || id < 0 {
		return "", 0, false
	}
	root = filepath.Dir(clean)
	if !hasSharedDirs(root) {
		return "", 0, false
	}
	return root, id, true
}

// hasSharedDirs reports whether root holds the shared/ or taskowned/
// directory of Flink's checkpoint storage.
func hasSharedDirs(root string) bool {
	for _, d := range []string{"shared", "taskowned"} {
		if st, err := os.Lstat(filepath.Join(root, d)); err == nil && st.IsDir() {
			return true
		}
	}
	return false
}

// flinkJobDir reports whether path is a Flink job's checkpoint directory,
// which users point at to read the job's newest checkpoint: no _metadata
// of its own, shared/ or taskowned/, and chk-<id> directories, the newest
// of which with a _metadata holds a Flink one. It returns that id.
func flinkJobDir(ctx context.Context, path string) (int64, bool) {
	if _, err := os.Lstat(filepath.Join(path, savepoint.MetadataFile)); !errors.Is(err, fs.ErrNotExist) || !hasSharedDirs(path) {
		return 0, false
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return 0, false
	}
	newest := int64(-1)
	for _, e := range entries {
		n, found := strings.CutPrefix(e.Name(), "chk-")
		id, err := strconv.ParseInt(n, 10, 64)
		if !found || err != nil || id <= newest || !e.IsDir() {
			continue
		}
		if _, err := os.Lstat(filepath.Join(path, e.Name(), savepoint.MetadataFile)); err == nil {
			newest = id
		}
	}
	if newest < 0 {
		return 0, false
	}
	head, err := readHead(ctx, storage.LocalDir(filepath.Join(path, "chk-"+strconv.FormatInt(newest, 10))))
	return newest, err == nil && isFlink(head)
}
