package pebblebackend

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// batchLimit bounds the bytes a batch collects before it is committed, so
// that a restore, a sweep or the clearing of a large map holds a bounded
// amount of memory. It is well below the memtable size: a batch larger than
// half a memtable makes Pebble flush it as a memtable of its own.
const batchLimit = 1 << 20

// writeBatchLimit is the size at which the write batch is committed. Small
// against a memtable: Pebble's first memtables are a fraction of the
// configured size, a batch that does not fit the one filling rotates it, and
// every early rotation leaves one more level-0 file for reads to look in.
// Commits of this size already cost little per write.
const writeBatchLimit = 64 << 10

// The state writes of records go to the write cache (cache.go) and from
// there to the backend's write batch, an indexed batch that reads see
// through, which reaches the database when it holds commitAt
// (writeBatchLimit) bytes or at the next snapshot, checkpoint or restore: a
// commit per write costs more than the write itself. Nothing is lost by
// holding them back, since state after a failure comes from a snapshot,
// which commits first.

// set and del record a write; the caller then calls commitIfFull.
func (b *Backend) set(k, v []byte) error { return b.cachedWrite(k, v, true) }
func (b *Backend) del(k []byte) error    { return b.cachedWrite(k, nil, false) }

// full reports whether the write batch has reached its bound.
func (b *Backend) full() bool { return b.wb.Len() >= b.commitAt }

// commitIfFull commits the write batch when it has reached its bound and no
// iterator over it is open; with one open, the batch grows until the next
// write after it is closed.
func (b *Backend) commitIfFull() error {
	if !b.full() || b.openIters > 0 {
		return nil
	}
	return b.commitBatch()
}

// commitWrites applies every write held, in the cache and in the write
// batch, to the database.
func (b *Backend) commitWrites() error {
	if b.openIters > 0 {
		return fmt.Errorf("pebblebackend: commit with %d iterators open", b.openIters)
	}
	if err := b.spillAll(); err != nil {
		return err
	}
	if err := b.spillTimers(); err != nil {
		return err
	}
	return b.commitBatch()
}

// commitBatch applies the write batch to the database and empties it.
func (b *Backend) commitBatch() error {
	// Dropped even with nothing to commit: a flush or compaction may come
	// next, and the kept iterator would pin the files they replace.
	b.dropKept()
	if b.wb.Empty() {
		return nil
	}
	if err := b.wb.Commit(pebble.NoSync); err != nil {
		return err
	}
	b.wb.Reset()
	return nil
}

// batchWriter applies writes in batches of at most about batchLimit bytes,
// straight to the database, for a restore, which reads nothing back.
// The writes of one batchWriter are not atomic as a whole; nothing needs them
// to be, since a Backend is used by one goroutine and state after a crash
// comes from a snapshot.
type batchWriter struct {
	db    *pebble.DB
	batch *pebble.Batch
}

func newBatchWriter(db *pebble.DB) *batchWriter {
	return &batchWriter{db: db, batch: db.NewBatch()}
}

func (w *batchWriter) set(k, v []byte) error {
	if err := w.batch.Set(k, v, nil); err != nil {
		return err
	}
	if w.batch.Len() < batchLimit {
		return nil
	}
	if err := w.batch.Commit(pebble.NoSync); err != nil {
		return err
	}
	w.batch.Reset()
	return nil
}

// finish commits what is left and releases the batch.
func (w *batchWriter) finish() error {
	var err error
	if !w.batch.Empty() {
		err = w.batch.Commit(pebble.NoSync)
	}
	if cerr := w.batch.Close(); err == nil {
		err = cerr
	}
	return err
}

// abort releases the batch without committing it.
func (w *batchWriter) abort() { _ = w.batch.Close() }
