package flinkfmt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/stateproc/stateproc/storage"
)

// DefaultInlineThreshold is Flink's default state.storage.fs.memory-threshold:
// a state stream of at most this many bytes goes into the metadata as an
// inline handle rather than into a file of its own.
const DefaultInlineThreshold = 20 << 10

// StreamWriter writes one state stream of a savepoint being staged: in
// memory up to its inline threshold, then into the file it is named after.
// Finish gives the handle that points at it.
type StreamWriter struct {
	ctx    context.Context
	dst    storage.Staging
	name   string
	inline int
	buf    []byte
	f      io.WriteCloser
	bw     *bufio.Writer
	pos    int64
	err    error
	done   bool
}

// NewStreamWriter starts the stream name in dst. A stream of at most
// inline bytes becomes an inline handle named name, a larger one the
// relative file name; a negative inline always writes the file.
func NewStreamWriter(ctx context.Context, dst storage.Staging, name string, inline int) *StreamWriter {
	return &StreamWriter{ctx: ctx, dst: dst, name: name, inline: inline}
}

// Write appends p to the stream.
func (w *StreamWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.bw == nil && len(w.buf)+len(p) > w.inline {
		f, err := w.dst.Create(w.ctx, w.name)
		if err != nil {
			w.err = fmt.Errorf("flinkfmt: creating %s: %w", w.name, err)
			return 0, w.err
		}
		w.f, w.bw = f, bufio.NewWriterSize(f, 256<<10)
		if _, err := w.bw.Write(w.buf); err != nil {
			w.err = err
			return 0, err
		}
		w.buf = nil
	}
	if w.bw != nil {
		n, err := w.bw.Write(p)
		w.pos += int64(n)
		if err != nil {
			w.err = fmt.Errorf("flinkfmt: writing %s: %w", w.name, err)
		}
		return n, w.err
	}
	w.buf = append(w.buf, p...)
	w.pos += int64(len(p))
	return len(p), nil
}

// Pos is the number of bytes written so far: the offset of the next byte.
func (w *StreamWriter) Pos() int64 { return w.pos }

// Finish ends the stream and returns its handle.
func (w *StreamWriter) Finish() (*StreamHandle, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.done {
		return nil, errors.New("flinkfmt: stream finished twice")
	}
	w.done = true
	if w.bw == nil {
		return &StreamHandle{Kind: StreamInline, Name: w.name, Data: w.buf, Size: int64(len(w.buf))}, nil
	}
	err := w.bw.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	if err != nil {
		w.err = fmt.Errorf("flinkfmt: writing %s: %w", w.name, err)
		return nil, w.err
	}
	return &StreamHandle{Kind: StreamRelativeFile, Name: w.name, Size: w.pos}, nil
}

// Close releases the file of a stream that was not finished; the staging
// it was created in is aborted by its owner.
func (w *StreamWriter) Close() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// Locate returns the directory and the name of the file a stream handle
// reads from: a relative file in the savepoint directory, an absolute one
// where Options.PathMap or its base name places it. A rewrite copies the
// files it keeps from there.
func (r *Reader) Locate(s *StreamHandle) (storage.Dir, string, error) { return r.resolve(s) }
