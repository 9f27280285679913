package storage

import (
	"io"
	"sync/atomic"
)

// Counters count what a location's files move, for progress output and for
// the tests that prove which way bytes went. Every field may be read while
// the transfers run.
type Counters struct {
	// BytesRead is what reads returned to the caller.
	BytesRead atomic.Int64
	// BytesWritten is what the caller wrote, and what went through the
	// client for copies that could not be made on the server.
	BytesWritten atomic.Int64
	// BytesCopied is what the store copied on its side, without the bytes
	// passing through this process.
	BytesCopied atomic.Int64
	// Requests counts the requests made to a bucket (ranged reads, writes,
	// copies, listings, deletions), retries aside.
	Requests atomic.Int64
	// Retries counts the requests that were sent again after a throttling
	// answer, a server error or a broken connection.
	Retries atomic.Int64
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.WriteCloser
	n *atomic.Int64
}

func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.n.Add(int64(n))
	return n, err
}

func (w countingWriter) Close() error { return w.w.Close() }
