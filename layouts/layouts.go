package layouts

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/stateproc/stateproc/engine"
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
	open func(ctx context.Context, dir storage.Dir, local string, head []byte) (savepoint.Source, error)
}

// known lists the layouts in the order they are tried.
var known = []layout{
	{name: "stateproc", match: isStateproc, open: openStateproc},
	{name: "Apache Flink", match: isFlink, open: openFlink},
}

// Open opens the savepoint or checkpoint in the local directory path,
// whatever its layout. It does not check that path is a directory: a path
// without a _metadata is not a savepoint (savepoint.ErrNotSavepoint).
func Open(ctx context.Context, path string) (savepoint.Source, error) {
	return open(ctx, storage.LocalDir(path), path)
}

// OpenDir opens the savepoint in dir, which may lie anywhere storage
// reaches. A checkpoint whose keyed state lies in native databases needs a
// local directory (see Open) and is refused here.
func OpenDir(ctx context.Context, dir storage.Dir) (savepoint.Source, error) {
	return open(ctx, dir, "")
}

func open(ctx context.Context, dir storage.Dir, local string) (savepoint.Source, error) {
	head, err := readHead(ctx, dir)
	if err != nil {
		return nil, err
	}
	for _, l := range known {
		if l.match(head) {
			return l.open(ctx, dir, local, head)
		}
	}
	// No layout claims it: the stateproc reader says what is wrong with
	// the file in its own terms (a foreign magic, a truncated preamble).
	return openStateproc(ctx, dir, local, head)
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
func openStateproc(ctx context.Context, dir storage.Dir, local string, _ []byte) (savepoint.Source, error) {
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
	return snapshotfmt.Open(ctx, dir)
}

// flinkMagic starts the _metadata of an Apache Flink savepoint or
// checkpoint (Checkpoints.HEADER_MAGIC_NUMBER), followed by the metadata
// version.
const flinkMagic = 0x4960672D

func isFlink(head []byte) bool {
	return len(head) >= 4 && binary.BigEndian.Uint32(head) == flinkMagic
}

func openFlink(_ context.Context, dir storage.Dir, _ string, head []byte) (savepoint.Source, error) {
	version := "unknown"
	if len(head) >= 8 {
		version = fmt.Sprint(binary.BigEndian.Uint32(head[4:]))
	}
	return nil, fmt.Errorf("%w: %s is an Apache Flink savepoint (metadata version %s), which this stateproc does not read yet",
		savepoint.ErrUnsupported, dir.Location(), version)
}
