package pebblebackend

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// restoreWriter writes the entries of a restore. While their keys ascend,
// as a savepoint in the format's order gives them, it writes them straight
// into sstables in a directory of its own in the database's, which the
// database ingests at the end: the entries never pass through a memtable,
// no flush rewrites them, and when the key groups restored hold nothing yet
// the tables land in the bottom level, where a compaction would have put
// them. At the first key that does not ascend (a source in another order,
// or a key given twice) it ingests what it has written and sends the rest
// through write batches, which apply each write over the one before: the
// database ends up as if every entry had been written in turn, whichever
// path each took.
type restoreWriter struct {
	ctx  context.Context
	b    *Backend
	opts sstable.WriterOptions
	// dir holds the tables written and not ingested yet, named in order.
	dir   string
	paths []string
	table *sstable.Writer
	// tableBytes is where a table ends, by its estimated size: the size
	// Pebble cuts the tables of its base level at, which an empty
	// database's bottom level is. Tables of that size keep later
	// compactions, and the incremental checkpoints that upload what they
	// write, as small as Pebble's own tables do.
	tableBytes uint64
	// last is the last key written to a table, nil before the first; no
	// key is empty, since every key starts with its key group.
	last []byte
	// batch takes every write once the keys have stopped ascending.
	batch *batchWriter
}

func (b *Backend) newRestoreWriter(ctx context.Context) *restoreWriter {
	return &restoreWriter{
		ctx: ctx, b: b,
		// The tables may land in any level, so they take no option that
		// only the bottom level allows.
		opts:       b.opts.MakeWriterOptions(0, b.db.TableFormat()),
		tableBytes: uint64(b.opts.TargetFileSizes[1]),
	}
}

func (w *restoreWriter) set(k, v []byte) error {
	if w.batch != nil {
		return w.batch.set(k, v)
	}
	if w.last != nil && bytes.Compare(k, w.last) <= 0 {
		if err := w.ingest(); err != nil {
			return err
		}
		w.batch = newBatchWriter(w.b.db)
		return w.batch.set(k, v)
	}
	if w.table == nil {
		if err := w.create(); err != nil {
			return err
		}
	}
	if err := w.table.Set(k, v); err != nil {
		return fmt.Errorf("pebblebackend: write %s: %w", w.paths[len(w.paths)-1], err)
	}
	w.last = append(w.last[:0], k...)
	if w.table.Raw().EstimatedSize() >= w.tableBytes {
		return w.closeTable()
	}
	return nil
}

// create starts the next table.
func (w *restoreWriter) create() error {
	if w.dir == "" {
		// Pebble leaves alone what it does not name itself, and a backend
		// restores one source at a time.
		dir := filepath.Join(w.b.dir, "restore")
		if err := w.b.fs.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("pebblebackend: restore: %w", err)
		}
		w.dir = dir
	}
	path := filepath.Join(w.dir, fmt.Sprintf("%06d.sst", len(w.paths)))
	f, err := w.b.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("pebblebackend: restore: %w", err)
	}
	w.paths = append(w.paths, path)
	w.table = sstable.NewWriter(objstorageprovider.NewFileWritable(f), w.opts)
	return nil
}

// closeTable finishes the table being written.
func (w *restoreWriter) closeTable() error {
	t := w.table
	w.table = nil
	if err := t.Close(); err != nil {
		return fmt.Errorf("pebblebackend: write %s: %w", w.paths[len(w.paths)-1], err)
	}
	return nil
}

// ingest hands the tables written to the database, which links them in,
// and removes the restore's directory, whether the database took them or
// not.
func (w *restoreWriter) ingest() (err error) {
	defer func() {
		if rerr := w.removeDir(); err == nil {
			err = rerr
		}
	}()
	if w.table != nil {
		if err := w.closeTable(); err != nil {
			return err
		}
	}
	if len(w.paths) > 0 {
		if err := w.b.db.Ingest(w.ctx, w.paths); err != nil {
			return fmt.Errorf("pebblebackend: ingest the restored tables: %w", err)
		}
	}
	return nil
}

// finish makes every write visible in the database.
func (w *restoreWriter) finish() error {
	if w.batch != nil {
		return w.batch.finish()
	}
	return w.ingest()
}

// abort drops what was not written to the database yet.
func (w *restoreWriter) abort() {
	if w.table != nil {
		_ = w.table.Close()
		w.table = nil
	}
	if w.batch != nil {
		w.batch.abort()
	}
	_ = w.removeDir()
}

func (w *restoreWriter) removeDir() error {
	if w.dir == "" {
		return nil
	}
	err := w.b.fs.RemoveAll(w.dir)
	w.dir, w.paths = "", w.paths[:0]
	return err
}
