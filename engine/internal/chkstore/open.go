package chkstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/engine/pebblebackend"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// Open opens the savepoint or checkpoint at dir, a local path or a
// bucket URL. The native databases of an incremental checkpoint are
// materialized in work (linked or copied from a local root, downloaded
// from a bucket); release closes them and removes work, closeAll does that
// and closes the rest.
func Open(ctx context.Context, dir, work string) (src savepoint.Source, release, closeAll func() error, err error) {
	loc, err := storage.ParseLocation(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	d, err := storage.OpenDir(ctx, dir, storage.Options{})
	if err != nil {
		return nil, nil, nil, err
	}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	r, err := snapshotfmt.Open(ctx, d)
	if err != nil {
		return nil, nil, nil, err
	}
	m, ok, err := chkdir.ReadManifestIn(ctx, d)
	if err != nil {
		r.Close()
		return nil, nil, nil, err
	}
	if !ok {
		// Without _incremental.json the checkpoint reads as canonical. The
		// files of native databases beside _metadata say it is an
		// incremental checkpoint that lost its manifest, whose keyed state
		// the canonical part does not hold: read as canonical, it would
		// restore as empty.
		if native, err := hasNativeFiles(ctx, d); err != nil || native {
			r.Close()
			if err == nil {
				err = fmt.Errorf("%w: %s: %s is missing, but the checkpoint holds native databases' files, which it lists", chkdir.ErrCorrupt, d.Location(), chkdir.ManifestName)
			}
			return nil, nil, nil, err
		}
		return r, func() error { return nil }, func() error { return errors.Join(r.Close(), d.Close()) }, nil
	}
	// The checkpoint's parent is the checkpoint root.
	fetch, done, err := rootFetcher(ctx, loc.Parent())
	if err != nil {
		r.Close()
		return nil, nil, nil, err
	}
	cs, err := openCheckpoint(ctx, r, m, d.Location(), work, fetch)
	if derr := done(); err == nil {
		err = derr
	}
	if err != nil {
		r.Close()
		return nil, nil, nil, err
	}
	return cs, cs.closeNative, func() error { return errors.Join(cs.Close(), d.Close()) }, nil
}

// hasNativeFiles reports whether the checkpoint or savepoint in d holds
// files of native databases: files in directories named as
// chkdir.NativeDirName names them.
func hasNativeFiles(ctx context.Context, d storage.Dir) (bool, error) {
	names, err := d.List(ctx)
	if err != nil {
		return false, err
	}
	for _, name := range names {
		dir, _, nested := strings.Cut(name, "/")
		var op, subtask int
		if n, _ := fmt.Sscanf(dir, "op%03d-%05d", &op, &subtask); nested && n == 2 && dir == chkdir.NativeDirName(op, subtask) {
			return true, nil
		}
	}
	return false, nil
}

// fetchFunc puts the file f of a checkpoint root at dst, a new local file,
// and returns its CRC-32C, after checking its size, and where it was, for
// messages.
type fetchFunc func(ctx context.Context, f chkdir.File, dst string) (crc uint32, where string, err error)

// rootFetcher returns how files are fetched from the checkpoint root at
// root, and done, which releases what that holds.
func rootFetcher(ctx context.Context, root storage.Location) (fetchFunc, func() error, error) {
	if !root.IsBucket() {
		return func(_ context.Context, f chkdir.File, dst string) (uint32, string, error) {
			src := filepath.Join(root.Path, filepath.FromSlash(f.Path))
			info, err := os.Stat(src)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return 0, src, fmt.Errorf("%w: %s is missing", chkdir.ErrCorrupt, src)
			case err != nil:
				return 0, src, err
			case info.Size() != f.Size:
				return 0, src, fmt.Errorf("%w: %s is %d bytes, the checkpoint lists %d", chkdir.ErrCorrupt, src, info.Size(), f.Size)
			}
			crc, err := chkdir.LinkOrCopy(src, dst, false)
			if err != nil {
				return 0, src, fmt.Errorf("engine: %s: %w", src, err)
			}
			return crc, src, nil
		}, func() error { return nil }, nil
	}
	b, err := chkdir.OpenBucket(ctx, root.URL())
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, f chkdir.File, dst string) (uint32, string, error) {
		where := root.Join(f.Path).String()
		crc, err := b.Download(ctx, f.Path, dst, f.Size)
		if errors.Is(err, fs.ErrNotExist) {
			return 0, where, fmt.Errorf("%w: %s is missing", chkdir.ErrCorrupt, where)
		}
		return crc, where, err
	}, b.Close, nil
}

// Reader is an incremental checkpoint as a savepoint.Source: the keyed
// state of the operators that have native databases comes from them,
// everything else from the canonical part. Open returns one for a
// checkpoint with native databases.
type Reader struct {
	canonical *snapshotfmt.Reader
	native    map[int]pebblebackend.CheckpointSet
	work      string
}

// openCheckpoint materializes every native database of m, the manifest of
// the checkpoint in dir, in a directory of its own under work (the files
// under their database's names, hard linked from the checkpoint root where
// possible) after checking each file's size and checksum, and opens them.
func openCheckpoint(ctx context.Context, r *snapshotfmt.Reader, m *chkdir.Manifest, dir, work string, fetch fetchFunc) (_ *Reader, err error) {
	cs := &Reader{canonical: r, native: map[int]pebblebackend.CheckpointSet{}, work: work}
	readers := map[int][]*pebblebackend.CheckpointReader{}
	defer func() {
		if err == nil {
			return
		}
		for _, rs := range readers {
			for _, rd := range rs {
				rd.Close()
			}
		}
		cs.closeNative()
	}()
	meta := r.Metadata()
	for _, db := range m.Databases {
		op := operatorIndex(meta, db.Operator)
		if op < 0 {
			return nil, fmt.Errorf("%w: %s: a database of operator %q, which the metadata does not list", chkdir.ErrCorrupt, dir, db.Operator)
		}
		dbDir := filepath.Join(work, chkdir.NativeDirName(op, db.Subtask))
		if err := materialize(ctx, fetch, dbDir, db.Files); err != nil {
			return nil, err
		}
		rd, err := pebblebackend.OpenCheckpoint(dbDir, db.Keyspace)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: operator %q subtask %d: %v", chkdir.ErrCorrupt, dir, db.Operator, db.Subtask, err)
		}
		readers[op] = append(readers[op], rd)
	}
	for op, rs := range readers {
		o := &meta.Operators[op]
		set, err := pebblebackend.NewCheckpointSet(rs...)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: operator %q: %v", chkdir.ErrCorrupt, dir, o.UID, err)
		}
		delete(readers, op)
		cs.native[op] = set
		if set.MaxParallelism() != o.MaxParallelism {
			return nil, fmt.Errorf("%w: %s: operator %q has max parallelism %d, its databases %d", chkdir.ErrCorrupt, dir, o.UID, o.MaxParallelism, set.MaxParallelism())
		}
	}
	return cs, nil
}

func operatorIndex(meta *savepoint.Metadata, uid string) int {
	for i := range meta.Operators {
		if meta.Operators[i].UID == uid {
			return i
		}
	}
	return -1
}

// materialize puts the files of one native database into dir under their
// database names. A file that is missing or does not match its size and
// checksum is an error that names it.
func materialize(ctx context.Context, fetch fetchFunc, dir string, files []chkdir.File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		crc, where, err := fetch(ctx, f, filepath.Join(dir, f.Name))
		if err != nil {
			return err
		}
		if crc != f.CRC32C {
			return fmt.Errorf("%w: %s: checksum mismatch: listed %08x, computed %08x", chkdir.ErrCorrupt, where, f.CRC32C, crc)
		}
	}
	return nil
}

func (cs *Reader) Metadata() *savepoint.Metadata { return cs.canonical.Metadata() }

func (cs *Reader) Entries(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) savepoint.EntryIterator {
	if cs.native == nil {
		return savepoint.Failed(errors.New("engine: the checkpoint's databases are closed"))
	}
	set, ok := cs.native[ref.Operator]
	if !ok {
		return cs.canonical.Entries(ctx, ref, kgs)
	}
	if err := cs.Metadata().Check(ref); err != nil {
		return savepoint.Failed(fmt.Errorf("engine: %w", err))
	}
	return set.Entries(ctx, cs.Metadata().RefName(ref), kgs)
}

// Close closes the databases and the canonical part, and removes the
// materialized files.
func (cs *Reader) Close() error {
	return errors.Join(cs.closeNative(), cs.canonical.Close())
}

func (cs *Reader) closeNative() error {
	var errs []error
	for _, set := range cs.native {
		errs = append(errs, set.Close())
	}
	cs.native = nil
	return errors.Join(append(errs, os.RemoveAll(cs.work))...)
}
