package flinkfmt

import (
	"bytes"
	"context"
	"io"

	"github.com/stateproc/stateproc/storage"
)

// OpenStream opens the bytes a stream handle names as a file for ranged
// reads, under the reader's path rules: inline bytes, a file of the
// savepoint (or checkpoint) directory, a file where Options.PathMap sends
// an absolute path, or a segment of a file-merging file. The second result
// names the file for messages. Package rocksdb reads the tables of native
// handles through it, so that they need not fit in memory.
func (r *Reader) OpenStream(ctx context.Context, s *StreamHandle) (storage.File, string, error) {
	if s == nil {
		return nil, "", corruptf("missing stream handle")
	}
	switch s.Kind {
	case StreamInline:
		return inlineFile{bytes.NewReader(s.Data)}, "inline handle " + s.Name, nil
	case StreamEmptySegment:
		return inlineFile{bytes.NewReader(nil)}, "empty segment", nil
	case StreamKeyGroups:
		if s.KeyGroups == nil {
			return nil, "", corruptf("key-group stream handle without a delegate")
		}
		return r.OpenStream(ctx, s.KeyGroups.Stream)
	}
	dir, name, err := r.resolve(s)
	if err != nil {
		return nil, s.Name, err
	}
	f, err := dir.Open(ctx, name)
	if err != nil {
		return nil, name, r.openFailed(name, s, err)
	}
	if s.Kind != StreamSegment {
		return f, name, nil
	}
	size := f.Size()
	if s.Offset < 0 || s.Offset > size || s.Size > size-s.Offset {
		f.Close()
		return nil, name, corruptf("segment of %d bytes at offset %d past the end of %d bytes", s.Size, s.Offset, size)
	}
	return &segmentFile{File: f, off: s.Offset, size: s.Size}, name, nil
}

// openWindowed opens a stream handle's bytes for reads through a window of
// size bytes where they lie in a bucket (storage.Windowed), as a table's
// reader reads them. A whole file is opened with the read of its tail
// (storage.OpenWindowed), in one request where the store allows.
func (r *Reader) openWindowed(ctx context.Context, s *StreamHandle, size int64) (storage.File, string, error) {
	if s != nil && (s.Kind == StreamFile || s.Kind == StreamRelativeFile) {
		dir, name, err := r.resolve(s)
		if err != nil {
			return nil, s.Name, err
		}
		f, err := storage.OpenWindowed(ctx, dir, name, size)
		if err != nil {
			return nil, name, r.openFailed(name, s, err)
		}
		return f, name, nil
	}
	f, name, err := r.OpenStream(ctx, s)
	if err != nil {
		return nil, name, err
	}
	if rs := readSize(f); rs > 0 {
		f = storage.Windowed(f, min(size, rs))
	}
	return f, name, nil
}

// readSize is storage.ReadSize of the file a stream is read from.
func readSize(f storage.File) int64 {
	if s, ok := f.(*segmentFile); ok {
		return storage.ReadSize(s.File)
	}
	return storage.ReadSize(f)
}

// inlineFile is a storage.File over an inline handle's bytes.
type inlineFile struct{ *bytes.Reader }

func (inlineFile) Close() error { return nil }

// segmentFile is the part of a file-merging file that one handle owns.
type segmentFile struct {
	storage.File
	off, size int64
}

func (f *segmentFile) Size() int64 { return f.size }

func (f *segmentFile) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 || off >= f.size {
		if len(b) == 0 && off == f.size {
			return 0, nil
		}
		return 0, io.EOF
	}
	short := int64(len(b)) > f.size-off
	if short {
		b = b[:f.size-off]
	}
	n, err := f.File.ReadAt(b, f.off+off)
	if err == nil && short {
		err = io.EOF
	}
	return n, err
}
