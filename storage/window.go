package storage

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
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

// OpenWindowed opens the file name of d for reads through a window of size
// bytes, as Windowed gives them, where d lies in a bucket. On S3 the open
// is the window's first read: one GET of the object's last size bytes (a
// suffix range) gives its length, its version and the tail a table's
// reader starts with, where an open and a read are two requests. Elsewhere
// it is Open, and Windowed for a bucket's file; a local file is returned
// as it is.
func OpenWindowed(ctx context.Context, d Dir, name string, size int64) (File, error) {
	if bd, ok := d.(*bucketDir); ok && bd.s3 != nil && size > 0 {
		if err := CheckName(name); err != nil {
			return nil, err
		}
		if _, ok := bd.preloadedFile(ctx, name); !ok {
			f, tail, err := bd.openTail(ctx, name, size)
			if err != nil {
				return nil, err
			}
			return &windowed{File: f, size: size, buf: tail, off: f.size - int64(len(tail))}, nil
		}
	}
	f, err := d.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	if rs := ReadSize(f); rs > 0 {
		return Windowed(f, min(size, rs)), nil
	}
	return f, nil
}

// openTail opens an S3 object with a read of its last limit bytes, all of
// it when it is shorter, in one request.
func (d *bucketDir) openTail(ctx context.Context, name string, limit int64) (*bucketFile, []byte, error) {
	suffix := func(as func(any) bool) error {
		var in *s3.GetObjectInput
		if as(&in) {
			in.Range = aws.String("bytes=-" + strconv.FormatInt(limit, 10))
		}
		return nil
	}
	r, refused, err := d.openGet(ctx, name, 0, -1, suffix)
	if err != nil {
		return nil, nil, err
	}
	var f *bucketFile
	var out s3.GetObjectOutput
	if r == nil {
		// The range was refused: the object is empty, or the server
		// refuses a suffix longer than the object (which it should serve
		// whole). Either way the tail is read as below.
		f = refused
	} else {
		defer r.Close()
		r.As(&out)
		f = &bucketFile{st: d.bucketStore, ctx: ctx, name: name, size: r.Size(), etag: aws.ToString(out.ETag), modTime: r.ModTime()}
		if !sizeGiven(aws.ToString(out.ContentRange)) {
			// The answer does not say how long the object is (the body's
			// length is not): it is asked, and the tail read as below.
			if f, err = d.stat(ctx, name); err != nil {
				return nil, nil, err
			}
		}
	}
	if f.size < 0 {
		return nil, nil, fmt.Errorf("storage: %s: the server gives a size of %d", d.where(name), f.size)
	}
	n := min(limit, f.size)
	tail := make([]byte, n)
	rest, at := tail, f.size-n
	if start, ok := rangeStart(aws.ToString(out.ContentRange), f.size); r != nil && ok && start == at && aws.ToInt64(out.ContentLength) == n {
		m, err := io.ReadFull(r, tail)
		d.c.BytesRead.Add(int64(m))
		if err == nil {
			// Reading on to the body's end lets the connection be reused.
			r.Read(make([]byte, 1))
			return f, tail, nil
		}
		// The body broke off: the rest is read as every read is.
		rest, at = tail[m:], at+int64(m)
	}
	// Any other answer (a server that sends the whole object) is not
	// trusted to be the tail: the tail is read as every read is.
	if m, err := f.ReadAt(rest, at); m < len(rest) {
		if err == nil || err == io.EOF {
			err = fmt.Errorf("storage: %s ended after %d of its %d bytes", d.where(name), at+int64(m), f.size)
		}
		return nil, nil, err
	}
	return f, tail, nil
}

// sizeGiven reports whether a Content-Range gives the length of the whole
// object ("bytes 10-14/27"), from which the reader takes its size; none
// means the answer is the whole object. An unknown length ("bytes
// 10-14/*") leaves the client with the body's length for the object's.
func sizeGiven(contentRange string) bool {
	if contentRange == "" {
		return true
	}
	_, total, ok := strings.Cut(contentRange, "/")
	n, err := strconv.ParseInt(total, 10, 64)
	return ok && err == nil && n >= 0
}

// rangeStart is the first offset a Content-Range of an object of size
// bytes gives ("bytes 10-14/27"); no Content-Range is the whole object.
func rangeStart(contentRange string, size int64) (int64, bool) {
	if contentRange == "" {
		return 0, true
	}
	r, ok := strings.CutPrefix(contentRange, "bytes ")
	if !ok {
		return 0, false
	}
	first, rest, ok := strings.Cut(r, "-")
	last, total, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		return 0, false
	}
	f, err1 := strconv.ParseInt(first, 10, 64)
	l, err2 := strconv.ParseInt(last, 10, 64)
	t, err3 := strconv.ParseInt(total, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || t != size || l != size-1 || f < 0 || f > l {
		return 0, false
	}
	return f, true
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
