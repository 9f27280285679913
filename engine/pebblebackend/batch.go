package pebblebackend

import "github.com/cockroachdb/pebble/v2"

// batchLimit bounds the bytes a batch collects before it is committed, so
// that a restore, a sweep or the clearing of a large map holds a bounded
// amount of memory. It is well below the memtable size: a batch larger than
// half a memtable makes Pebble flush it as a memtable of its own.
const batchLimit = 1 << 20

// batchWriter applies writes in batches of at most about batchLimit bytes.
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
	return w.maybeCommit()
}

func (w *batchWriter) delete(k []byte) error {
	if err := w.batch.Delete(k, nil); err != nil {
		return err
	}
	return w.maybeCommit()
}

func (w *batchWriter) maybeCommit() error {
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
