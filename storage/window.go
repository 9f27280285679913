package storage

import (
	"io"
	"sync"
)

// Windowed returns f for a reader that reads it in many small pieces,
// mostly forward, as a table's reader reads its blocks: each read of an
// object in a bucket is a request, so the reads are served from a window
// of size bytes of f, which a read outside it moves. The window starts at
// that read, or ends at the end of f when the read lies within size bytes
// of it, so that the tail a table keeps its footer and indexes in is one
// request. A read longer than the window goes to f as it is. Reads may
// come from several goroutines. The window's buffer is allocated at the
// first read and lives as long as the returned file.
func Windowed(f File, size int64) File {
	if size <= 0 {
		return f
	}
	return &windowed{File: f, size: size}
}

type windowed struct {
	File
	size int64
	mu   sync.Mutex
	buf  []byte
	// off is the file offset of buf[0]; buf holds the bytes read.
	off int64
}

func (w *windowed) ReadAt(p []byte, off int64) (int, error) {
	if int64(len(p)) > w.size || off < 0 {
		return w.File.ReadAt(p, off)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	total := w.File.Size()
	if off < w.off || off+int64(len(p)) > w.off+int64(len(w.buf)) {
		if off >= total {
			return 0, io.EOF
		}
		start := off
		if total-off < w.size {
			start = max(0, total-w.size)
		}
		n := min(w.size, total-start)
		if w.buf == nil {
			w.buf = make([]byte, w.size)
		}
		m, err := w.File.ReadAt(w.buf[:n], start)
		w.off, w.buf = start, w.buf[:m]
		if m < int(n) {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			if err != io.EOF {
				return 0, err
			}
		}
	}
	if off-w.off > int64(len(w.buf)) {
		return 0, io.EOF
	}
	n := copy(p, w.buf[off-w.off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
