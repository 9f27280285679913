package layouts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

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

// Options say how a savepoint is opened.
type Options struct {
	// PathMap rewrites the absolute paths an Apache Flink _metadata
	// records: a path that starts with a key is read from the value's place
	// instead (a relative value within the savepoint's directory). Without
	// one, an absolute path is looked up by its base name in the
	// savepoint's directory and nowhere else.
	PathMap map[string]string
	// Store says how locations in buckets are opened: the savepoint's own
	// (OpenLocationWith), its job's checkpoint directory, and those PathMap
	// names, whose reads its Counters count too.
	Store storage.Options

	// bucket is the savepoint's location when it lies in a bucket.
	bucket *storage.Location
	// mapped opens what PathMap names.
	mapped *mappedDirs
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
	o.mapped = newMappedDirs(ctx, o)
	dir := storage.LocalDir(path)
	var src savepoint.Source
	var err error
	if id, ok := flinkJobDir(ctx, dir, path); ok {
		src, err = o.source(flinksource.OpenCheckpoint(ctx, dir, id, o.flink()))
	} else {
		src, err = open(ctx, dir, path, o)
	}
	return closingLocal(src, err, dir)
}

// closingLocal returns src, opened (or not, with err) from the local
// directory dir, and closes dir once src no longer reads through it: with
// src for an Apache Flink reader, which opens files as it reads them; at
// once otherwise, since a stateproc savepoint has every data file open
// when snapshotfmt.Open returns, and an incremental checkpoint is read
// from its path. dir holds the directory that the _metadata read came
// from (see storage.LocalDir), so that no file of another savepoint
// renamed to its path is read with it.
func closingLocal(src savepoint.Source, err error, dir io.Closer) (savepoint.Source, error) {
	switch src.(type) {
	case *flinksource.Source, *flinkSource:
		return withCloser(src, dir), nil
	}
	dir.Close()
	return src, err
}

// OpenDir opens the savepoint in dir, which may lie anywhere storage
// reaches. A checkpoint whose keyed state lies in native databases needs a
// local directory (see Open) and is refused here.
func OpenDir(ctx context.Context, dir storage.Dir) (savepoint.Source, error) {
	return open(ctx, dir, "", Options{})
}

func open(ctx context.Context, dir storage.Dir, local string, o Options) (savepoint.Source, error) {
	var manifest *lookup
	if storage.InBucket(dir) {
		// In a bucket each open and read is a request, a round trip:
		// _metadata is read once, whole, for both the head that tells the
		// layout and the layout's reader, while the manifest of an
		// incremental checkpoint is looked for beside it.
		lookCtx, cancel := context.WithCancel(ctx)
		manifest = look(lookCtx, dir, engine.IncrementalManifest)
		// A layout that needs no answer, or an error, stops the look.
		defer func() {
			cancel()
			manifest.wait()
		}()
		if err := storage.Preload(ctx, dir, savepoint.MetadataFile, metaInMemory); err != nil {
			return nil, metadataError(dir, err)
		}
	}
	head, err := readHead(ctx, dir, savepoint.MetadataFile)
	if err != nil {
		return nil, err
	}
	if isFlink(head) {
		return openFlink(ctx, dir, local, o)
	}
	// Anything else is read as stateproc's: its reader says what is wrong
	// with a file that is not (a foreign magic, a truncated preamble).
	return openStateproc(ctx, dir, local, o.bucket, manifest)
}

// metaInMemory is the largest _metadata of a bucket that opening reads
// whole up front: both layouts read all of it next. Of a larger one (an
// Apache Flink savepoint's with much state inline) it reads this much, and
// the rest as its layout reads it.
const metaInMemory = 16 << 20

// readHead returns the first bytes of a _metadata, name in dir: enough for
// every layout's magic and version, fewer when the file is shorter.
func readHead(ctx context.Context, dir storage.Dir, name string) ([]byte, error) {
	f, err := dir.Open(ctx, name)
	if err != nil {
		return nil, metadataError(dir, err)
	}
	defer f.Close()
	head := make([]byte, min(f.Size(), headLen))
	if n, err := f.ReadAt(head, 0); n < len(head) {
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: %s ends after %d bytes", savepoint.ErrCorrupt, name, n)
		}
		return nil, err
	}
	return head, nil
}

// metadataError is err from opening dir's _metadata: a directory without
// one is not a savepoint.
func metadataError(dir storage.Dir, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s has no %s", savepoint.ErrNotSavepoint, dir.Location(), savepoint.MetadataFile)
	}
	return err
}

// lookup is whether a file exists, looked for on a goroutine of its own.
type lookup struct {
	done   chan struct{}
	exists bool
	err    error
}

func look(ctx context.Context, dir storage.Dir, name string) *lookup {
	l := &lookup{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		f, err := dir.Open(ctx, name)
		switch {
		case err == nil:
			l.exists = true
			f.Close()
		case !errors.Is(err, fs.ErrNotExist):
			l.err = err
		}
	}()
	return l
}

func (l *lookup) wait() (exists bool, err error) {
	<-l.done
	return l.exists, l.err
}

// openStateproc opens a stateproc savepoint, or one of the engine's
// checkpoints: an incremental one lists its native databases in a manifest
// beside the metadata, and is read through the engine's checkpoint reader.
// manifest is the look for that manifest if one was started.
func openStateproc(ctx context.Context, dir storage.Dir, local string, bucket *storage.Location, manifest *lookup) (savepoint.Source, error) {
	if manifest == nil {
		manifest = look(ctx, dir, engine.IncrementalManifest)
	}
	switch incremental, err := manifest.wait(); {
	case err != nil:
		return nil, err
	case incremental && local != "":
		return engine.OpenCheckpoint(ctx, local, "")
	case incremental && bucket != nil:
		// The native databases are fetched from the checkpoint root
		// into a temporary directory, as a restore fetches them.
		return engine.OpenCheckpoint(ctx, bucket.URL(), "")
	case incremental:
		return nil, fmt.Errorf("%w: %s is an incremental checkpoint, whose native databases are read from a local directory or a bucket URL only",
			savepoint.ErrUnsupported, dir.Location())
	}
	if local == "" {
		// In a bucket every open is a request: a data file is opened
		// when first read, and inspect without a scan reads one object.
		return snapshotfmt.OpenLazily(ctx, dir)
	}
	return snapshotfmt.Open(ctx, dir)
}

func isFlink(head []byte) bool { return flinkfmt.IsFlink(head) }
