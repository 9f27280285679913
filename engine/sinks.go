package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// CollectSink keeps what a job writes in memory, with the same exactly-once
// protocol as a real sink: values become visible only when the checkpoint
// covering them completes, or when a bounded job ends. It survives the
// restarts of a run, so tests can compare its contents with a failure-free
// run.
type CollectSink[T any] struct {
	mu        sync.Mutex
	committed []T
	txns      map[string][]T
}

// NewCollectSink returns an empty sink.
func NewCollectSink[T any]() *CollectSink[T] {
	return &CollectSink[T]{txns: map[string][]T{}}
}

// Values returns the committed values, in commit order.
func (s *CollectSink[T]) Values() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]T(nil), s.committed...)
}

func (s *CollectSink[T]) Recover(_ context.Context, pending [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range pending {
		s.commitLocked(string(p))
	}
	// Whatever is left was written after the checkpoint the run restarts
	// from, and will be written again.
	clear(s.txns)
	return nil
}

func (s *CollectSink[T]) commitLocked(id string) {
	if v, ok := s.txns[id]; ok {
		s.committed = append(s.committed, v...)
		delete(s.txns, id)
	}
}

func (s *CollectSink[T]) NewWriter(_ context.Context, c WriterContext) (SinkWriter[T], error) {
	return &collectWriter[T]{s: s, prefix: fmt.Sprintf("%05d-%d", c.Subtask, c.Epoch)}, nil
}

type collectWriter[T any] struct {
	s      *CollectSink[T]
	prefix string
	seq    int
	buf    []T
}

func (w *collectWriter[T]) Write(_ context.Context, v T, _ int64) error {
	w.buf = append(w.buf, v)
	return nil
}

func (w *collectWriter[T]) PreCommit(context.Context) ([]byte, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	id := fmt.Sprintf("%s-%d", w.prefix, w.seq)
	w.seq++
	w.s.txns[id] = w.buf
	w.buf = nil
	return []byte(id), nil
}

func (w *collectWriter[T]) Commit(_ context.Context, txn []byte) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.s.commitLocked(string(txn))
	return nil
}

func (w *collectWriter[T]) Close() error { return nil }

// FileSink writes one line per record into files under a directory. A
// transaction is a file: written as .inprogress-*, renamed to .pending-* at
// the checkpoint barrier (after fsync), and to part-* when the checkpoint
// completes. Readers look at part-* only, so they never see output that a
// failure could take back.
type FileSink[T any] struct {
	dir    string
	format func(v T, eventTime int64) ([]byte, error)
}

// NewFileSink returns a sink writing into dir, formatting each record as
// one line with format (without the newline).
func NewFileSink[T any](dir string, format func(v T, eventTime int64) ([]byte, error)) *FileSink[T] {
	return &FileSink[T]{dir: dir, format: format}
}

const (
	inProgressPrefix = ".inprogress-"
	pendingPrefix    = ".pending-"
	partPrefix       = "part-"
)

func (s *FileSink[T]) Recover(_ context.Context, pending [][]byte) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	for _, p := range pending {
		if err := s.commit(string(p)); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), inProgressPrefix) || strings.HasPrefix(e.Name(), pendingPrefix) {
			if err := os.Remove(filepath.Join(s.dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// commit renames a pending file to its final name; a transaction committed
// before is left alone.
func (s *FileSink[T]) commit(name string) error {
	if name == "" {
		return nil
	}
	if strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("engine: file sink: bad transaction name %q", name)
	}
	err := os.Rename(filepath.Join(s.dir, pendingPrefix+name), filepath.Join(s.dir, partPrefix+name))
	if errors.Is(err, fs.ErrNotExist) {
		if _, statErr := os.Stat(filepath.Join(s.dir, partPrefix+name)); statErr == nil {
			return nil
		}
		// Neither pending nor committed here: the snapshot restored was
		// taken by a run that wrote elsewhere.
		return fmt.Errorf("engine: file sink: the snapshot restored holds the transaction %s, which is neither pending nor committed in %s: restore with the output directory of the run that took the snapshot: %w",
			name, s.dir, err)
	}
	return err
}

func (s *FileSink[T]) NewWriter(_ context.Context, c WriterContext) (SinkWriter[T], error) {
	return &fileWriter[T]{s: s, prefix: fmt.Sprintf("%05d-%06d", c.Subtask, c.Epoch)}, nil
}

type fileWriter[T any] struct {
	s      *FileSink[T]
	prefix string
	seq    int
	f      *os.File
	w      *bufio.Writer
	name   string
}

func (w *fileWriter[T]) Write(_ context.Context, v T, ts int64) error {
	if w.f == nil {
		w.name = fmt.Sprintf("%s-%06d", w.prefix, w.seq)
		w.seq++
		f, err := os.OpenFile(filepath.Join(w.s.dir, inProgressPrefix+w.name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		w.f, w.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	line, err := w.s.format(v, ts)
	if err != nil {
		return err
	}
	w.w.Write(line)
	return w.w.WriteByte('\n')
}

// PreCommit seals the current file; an empty transaction has no file.
func (w *fileWriter[T]) PreCommit(context.Context) ([]byte, error) {
	if w.f == nil {
		return nil, nil
	}
	f, name := w.f, w.name
	w.f = nil
	if err := w.w.Flush(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(filepath.Join(w.s.dir, inProgressPrefix+name), filepath.Join(w.s.dir, pendingPrefix+name)); err != nil {
		return nil, err
	}
	return []byte(name), nil
}

func (w *fileWriter[T]) Commit(_ context.Context, txn []byte) error { return w.s.commit(string(txn)) }

func (w *fileWriter[T]) Close() error {
	if w.f != nil {
		return w.f.Close()
	}
	return nil
}
