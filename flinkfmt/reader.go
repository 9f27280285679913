package flinkfmt

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/golang/snappy"

	"github.com/stateproc/stateproc/storage"
)

// Options configure a Reader.
type Options struct {
	// PathMap rewrites the absolute paths recorded in the metadata: a path
	// that starts with a key is read from the value's place instead. A
	// relative value names a file in the savepoint directory; an absolute
	// one is opened through OpenDir. Without a match, an absolute path is
	// looked up by its base name in the savepoint directory and nowhere
	// else.
	PathMap map[string]string
	// OpenDir opens the directory of a mapped absolute path or URL (a
	// location, as storage.ParseLocation reads it). It is called for every
	// file read through a mapping, so it should keep what it opens. By
	// default it opens local directories, and refuses buckets.
	OpenDir func(location string) (storage.Dir, error)
	// MaxKeyGroupBytes bounds the bytes one key group may decompress to;
	// 1 GiB by default. For native RocksDB handles, it bounds a table's
	// blocks (at most 256 MiB) and a value joined from merge operands.
	MaxKeyGroupBytes int64
}

const defaultMaxKeyGroupBytes = 1 << 30

// Reader reads a Flink savepoint or checkpoint directory.
type Reader struct {
	dir  storage.Dir
	meta *Metadata
	opts Options
	// root is the job's checkpoint directory of a reader from
	// OpenCheckpoint, nil otherwise.
	root storage.Dir
	// files holds the files opened in buckets, by location and name.
	mu    sync.Mutex
	files map[string]storage.File
}

// Open reads the metadata of the Flink savepoint or checkpoint in dir.
func Open(ctx context.Context, dir storage.Dir, opts Options) (*Reader, error) {
	if opts.MaxKeyGroupBytes <= 0 {
		opts.MaxKeyGroupBytes = defaultMaxKeyGroupBytes
	}
	if opts.OpenDir == nil {
		opts.OpenDir = localOnly
	}
	m, err := ReadMetadata(ctx, dir)
	if err != nil {
		return nil, err
	}
	return &Reader{dir: dir, meta: m, opts: opts}, nil
}

// localOnly is the OpenDir of Options without one.
func localOnly(location string) (storage.Dir, error) {
	loc, err := storage.ParseLocation(location)
	if err != nil {
		return nil, err
	}
	if loc.IsBucket() {
		return nil, fmt.Errorf("flinkfmt: path map to %s: this reader opens no bucket (Options.OpenDir)", loc)
	}
	return storage.LocalDir(loc.Path), nil
}

// Metadata returns the parsed metadata.
func (r *Reader) Metadata() *Metadata { return r.meta }

// InBucket reports whether the savepoint (or the checkpoint's job
// directory) lies in a bucket, where every read is a request.
func (r *Reader) InBucket() bool {
	if r.root != nil {
		return storage.InBucket(r.root)
	}
	return storage.InBucket(r.dir)
}

// ErrNoOperator is returned by Operator for a reference that matches none.
var ErrNoOperator = errors.New("flinkfmt: no such operator")

// Operator finds an operator by its hex id, by its uid (recorded, or
// matched through Flink's uid hash), or by its recorded name.
func (r *Reader) Operator(ref string) (*Operator, error) {
	var id OperatorID
	if b, err := hex.DecodeString(ref); err == nil && len(b) == len(id) {
		copy(id[:], b)
		for _, op := range r.meta.Operators {
			if op.ID == id {
				return op, nil
			}
		}
	}
	hash := UIDHash(ref)
	for _, op := range r.meta.Operators {
		if op.UID == ref || op.ID == hash {
			return op, nil
		}
	}
	var named []*Operator
	for _, op := range r.meta.Operators {
		if op.Name == ref {
			named = append(named, op)
		}
	}
	switch len(named) {
	case 1:
		return named[0], nil
	case 0:
		return nil, fmt.Errorf("%w: %q is neither an operator id, a uid nor a name", ErrNoOperator, ref)
	}
	return nil, fmt.Errorf("%w: %d operators are named %q; give the id", ErrNoOperator, len(named), ref)
}

// resolve returns the directory and name a stream handle's file is read
// from.
func (r *Reader) resolve(s *StreamHandle) (storage.Dir, string, error) {
	switch s.Kind {
	case StreamRelativeFile:
		if err := storage.CheckName(s.Name); err != nil {
			return nil, "", corruptf("relative file handle %q: %v", s.Name, err)
		}
		return r.dir, s.Name, nil
	case StreamFile, StreamSegment:
	default:
		return nil, "", fmt.Errorf("flinkfmt: %s handle has no file", s.Kind)
	}
	p := stripScheme(s.Name)
	best := ""
	for old := range r.opts.PathMap {
		if (hasPathPrefix(s.Name, old) || hasPathPrefix(p, old)) && len(old) > len(best) {
			best = old
		}
	}
	if best != "" {
		rest := strings.TrimPrefix(strings.TrimPrefix(s.Name, best), "/")
		if !hasPathPrefix(s.Name, best) {
			rest = strings.TrimPrefix(strings.TrimPrefix(p, best), "/")
		}
		// The mapped directory is all a mapping opens: a path that climbs
		// out of it (a "..") is refused, not followed.
		if rest != "" && storage.CheckName(path.Clean(rest)) != nil {
			return nil, "", corruptf("file handle %q: %q below the mapped path %q is no name inside it", s.Name, rest, best)
		}
		repl := r.opts.PathMap[best]
		if strings.Contains(repl, "://") {
			// A URL: a prefix in a bucket, or a file:// directory.
			loc, err := storage.ParseLocation(repl)
			if err != nil {
				return nil, "", fmt.Errorf("flinkfmt: path map for %q: %w", best, err)
			}
			target := loc.Join(rest)
			d, err := r.opts.OpenDir(target.Parent().URL())
			if err != nil {
				return nil, "", err
			}
			return d, target.Base(), nil
		}
		target := path.Join(repl, rest)
		if !strings.HasPrefix(target, "/") && !filepath.IsAbs(target) {
			if err := storage.CheckName(target); err != nil {
				return nil, "", fmt.Errorf("flinkfmt: path map gives %q for %q: %w", target, s.Name, err)
			}
			return r.dir, target, nil
		}
		d, err := r.opts.OpenDir(path.Dir(target))
		if err != nil {
			return nil, "", err
		}
		return d, path.Base(target), nil
	}
	if r.root != nil {
		if rel, ok := checkpointRelative(p); ok {
			return r.root, rel, nil
		}
	}
	base := path.Base(p)
	if err := storage.CheckName(base); err != nil || base == "/" {
		return nil, "", corruptf("file handle %q has no file name", s.Name)
	}
	return r.dir, base, nil
}

// stripScheme drops the scheme and authority of a URI (hdfs://host:8020,
// s3://bucket, file:), leaving its path.
func stripScheme(p string) string {
	if u := strings.Index(p, "://"); u >= 0 {
		p = p[u+3:]
		if i := strings.IndexByte(p, '/'); i >= 0 {
			return p[i:]
		}
		return p
	}
	return strings.TrimPrefix(p, "file:")
}

// hasPathPrefix reports whether prefix names path or a directory above it.
func hasPathPrefix(path, prefix string) bool {
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	return len(path) == len(prefix) || strings.HasSuffix(prefix, "/") || path[len(prefix)] == '/'
}

// streamBytes reads length bytes at off of a stream handle; length < 0
// reads to its end.
func (r *Reader) streamBytes(ctx context.Context, s *StreamHandle, off, length int64) ([]byte, string, error) {
	return r.streamBytesInto(ctx, s, off, length, nil, nil)
}

// streamBytesInto is streamBytes reading into *dst, grown as needed, when
// dst is not nil: a walk of many key groups reuses one buffer. Inline
// bytes are returned as they are. win, when set, is the walk's window on
// a bucket's file (see fileBytes).
func (r *Reader) streamBytesInto(ctx context.Context, s *StreamHandle, off, length int64, dst *[]byte, win *window) ([]byte, string, error) {
	if s == nil {
		return nil, "", corruptf("missing stream handle")
	}
	switch s.Kind {
	case StreamInline:
		name := "inline handle " + s.Name
		if off < 0 || off > int64(len(s.Data)) {
			return nil, name, corruptf("offset %d past the end of %d inline bytes", off, len(s.Data))
		}
		end := int64(len(s.Data))
		if length >= 0 {
			if length > end-off {
				return nil, name, corruptf("%d bytes at offset %d run past the end of %d inline bytes", length, off, end)
			}
			end = off + length
		}
		return s.Data[off:end], name, nil
	case StreamEmptySegment:
		return nil, "empty segment", corruptf("read from an empty segment")
	case StreamKeyGroups:
		if s.KeyGroups == nil {
			return nil, "", corruptf("key-group stream handle without a delegate")
		}
		return r.streamBytesInto(ctx, s.KeyGroups.Stream, off, length, dst, win)
	}
	return r.fileBytes(ctx, s, off, length, dst, win)
}

// fileBytes is streamBytesInto for a handle of a file. With win set, and
// the file in a bucket, it reads up to win.until rather than the bytes
// asked for alone, and serves the next reads in win from what it read.
func (r *Reader) fileBytes(ctx context.Context, s *StreamHandle, off, length int64, dst *[]byte, win *window) ([]byte, string, error) {
	if b, ok := win.serve(s, off, length); ok {
		return b, win.name, nil
	}
	dir, name, err := r.resolve(s)
	if err != nil {
		return nil, s.Name, err
	}
	if s.Offset == 0 && off == 0 && length != 0 && length <= firstReadMax && storage.InBucket(dir) && !r.opened(dir, name) {
		return r.openReading(ctx, s, dir, name, length)
	}
	f, err := r.open(ctx, dir, name)
	if err != nil {
		return nil, name, r.openFailed(name, s, err)
	}
	defer f.Close()
	size := f.Size()
	base := s.Offset
	limit := size - base
	if s.Kind == StreamSegment && s.Size < limit {
		limit = s.Size
	}
	if off < 0 || off > limit {
		return nil, name, corruptf("offset %d past the end of %d bytes", off, limit)
	}
	n := limit - off
	if length >= 0 {
		if length > n {
			return nil, name, corruptf("%d bytes at offset %d run past the end of %d bytes", length, off, limit)
		}
		n = length
	}
	read := n
	if win != nil && storage.ReadSize(f) > 0 {
		// Up to where the walk will read next, in requests of the
		// store's read size, and no further than the stream.
		end := keyGroupStart(min(win.until, limit, off+storage.ReadSize(f)), win.sk)
		read = max(n, end-off)
		dst = &win.b
	} else {
		win = nil
	}
	var b []byte
	switch {
	case dst == nil:
		b = make([]byte, read)
	case int64(cap(*dst)) < read:
		// With room to spare: the next key group is as likely to be a
		// little larger as smaller, and each new buffer is memory the
		// kernel faults in afresh.
		*dst = make([]byte, read, read+read/8)
		b = *dst
	default:
		b = (*dst)[:read]
	}
	if _, err := f.ReadAt(b, base+off); err != nil && !(errors.Is(err, io.EOF) && read == 0) {
		return nil, name, fmt.Errorf("flinkfmt: reading %s: %w", name, err)
	}
	if win != nil {
		win.s, win.name, win.off, win.b = s, name, off, b
	}
	return b[:n], name, nil
}

// window is what a walk of key groups read of a bucket's stream beyond
// the key group it asked for: the next key groups' bytes, whole, up to
// until (where the walk's key groups of the stream end), which the next
// reads take without a request. The bytes served are valid until the next
// read.
type window struct {
	s     *StreamHandle
	name  string
	off   int64
	b     []byte
	until int64
	// sk is the subtask whose key groups the stream holds: a read ends
	// where a key group starts, so that no key group is read in part and
	// then again whole.
	sk *subtaskKeyed
}

// serve returns the length bytes at off of stream s from w, if w holds
// them.
func (w *window) serve(s *StreamHandle, off, length int64) ([]byte, bool) {
	if w == nil || w.s != s || length < 0 || off < w.off || off+length > w.off+int64(len(w.b)) {
		return nil, false
	}
	return w.b[off-w.off : off-w.off+length], true
}

// firstReadMax is the most a read at a file's start takes with the open
// of the file (see openReading): what the metadata asks for is not
// trusted with more memory before the file's size is known.
const firstReadMax = 1 << 20

// openReading opens a bucket's file that this reader has not opened with a
// read of its first length bytes, or of all of it for a length below 0, in
// one request (storage.OpenHead) where an open and a read are two: the
// first read of a file is mostly the keyed state's header at its start, or
// a whole file of metadata. Of a file longer than firstReadMax read whole,
// the rest is a second request.
func (r *Reader) openReading(ctx context.Context, s *StreamHandle, dir storage.Dir, name string, length int64) ([]byte, string, error) {
	limit := length
	if length < 0 {
		limit = firstReadMax
	}
	f, head, err := storage.OpenHead(ctx, dir, name, limit)
	if err != nil {
		return nil, name, r.openFailed(name, s, err)
	}
	f = r.keep(dir, name, f)
	end := f.Size()
	if s.Kind == StreamSegment && s.Size < end {
		end = s.Size
	}
	if length >= 0 {
		if length > end || int64(len(head)) < length {
			return nil, name, corruptf("%d bytes at offset 0 run past the end of %d bytes", length, end)
		}
		return head[:length], name, nil
	}
	if end <= int64(len(head)) {
		return head[:end], name, nil
	}
	b := make([]byte, end)
	n := copy(b, head)
	if _, err := f.ReadAt(b[n:], int64(n)); err != nil {
		return nil, name, fmt.Errorf("flinkfmt: reading %s: %w", name, err)
	}
	return b, name, nil
}

// opened reports whether the reader holds the file name of dir open.
func (r *Reader) opened(dir storage.Dir, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.files[fileKey(dir, name)]
	return ok
}

// keep holds f, the file name of dir, open for the reader's later reads,
// and returns the file held: f, or one another goroutine opened first.
func (r *Reader) keep(dir storage.Dir, name string, f storage.File) storage.File {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.files == nil {
		r.files = map[string]storage.File{}
	}
	key := fileKey(dir, name)
	if g, ok := r.files[key]; ok {
		return g
	}
	r.files[key] = f
	return f
}

func fileKey(dir storage.Dir, name string) string { return dir.Location() + "\x00" + name }

// open opens the file name of dir. A bucket's file is opened once per
// reader, since each open is a request and a walk reads a file once per key
// group; its reads are bound to ctx. Elsewhere each call opens the file.
func (r *Reader) open(ctx context.Context, dir storage.Dir, name string) (storage.File, error) {
	if !storage.InBucket(dir) {
		return dir.Open(ctx, name)
	}
	r.mu.Lock()
	f, ok := r.files[fileKey(dir, name)]
	r.mu.Unlock()
	if !ok {
		var err error
		if f, err = dir.Open(ctx, name); err != nil {
			return nil, err
		}
		f = r.keep(dir, name, f)
	}
	return storage.WithContext(ctx, f), nil
}

// streamSize returns the number of bytes of a stream.
func (r *Reader) streamSize(ctx context.Context, s *StreamHandle) (int64, string, error) {
	switch s.Kind {
	case StreamInline:
		return int64(len(s.Data)), "inline handle " + s.Name, nil
	case StreamKeyGroups:
		if s.KeyGroups == nil {
			return 0, "", corruptf("key-group stream handle without a delegate")
		}
		return r.streamSize(ctx, s.KeyGroups.Stream)
	case StreamEmptySegment:
		return 0, "empty segment", nil
	}
	dir, name, err := r.resolve(s)
	if err != nil {
		return 0, s.Name, err
	}
	f, err := r.open(ctx, dir, name)
	if err != nil {
		return 0, name, r.openFailed(name, s, err)
	}
	defer f.Close()
	n := f.Size() - s.Offset
	if s.Kind == StreamSegment && s.Size < n {
		n = s.Size
	}
	if n < 0 {
		return 0, name, corruptf("segment at %d past the end of %d bytes", s.Offset, f.Size())
	}
	return n, name, nil
}

var snappyMagic = []byte{0xff, 0x06, 0x00, 0x00, 's', 'N', 'a', 'P', 'p', 'Y'}

// unsnappy decompresses Snappy framed streams (Flink's xerial framing);
// consecutive streams concatenate, as the heap layout writes one per state.
func unsnappy(b []byte, limit int64) ([]byte, error) {
	var u unsnappier
	return u.decode(b, limit)
}

// unsnappier decompresses Snappy framed streams into memory it keeps, so
// that a walk of many compressed key groups allocates once. What decode
// returns is valid until its next call.
type unsnappier struct {
	src bytes.Reader
	sr  *snappy.Reader
	out bytes.Buffer
}

func (u *unsnappier) decode(b []byte, limit int64) ([]byte, error) {
	if !bytes.HasPrefix(b, snappyMagic) {
		return nil, corruptf("compressed data does not start with the Snappy stream identifier")
	}
	u.src.Reset(b)
	if u.sr == nil {
		u.sr = snappy.NewReader(&u.src)
	} else {
		u.sr.Reset(&u.src)
	}
	u.out.Reset()
	n, err := io.Copy(&u.out, io.LimitReader(u.sr, limit+1))
	if err != nil {
		return nil, corruptf("snappy: %v", err)
	}
	if n > limit {
		return nil, unsupportedf("a key group decompresses to more than %d bytes", limit)
	}
	return u.out.Bytes(), nil
}

// openFailed says which file of a handle did not open. A file the metadata
// names that is not there makes the savepoint unreadable, as a truncated
// one is (ErrCorrupt).
func (r *Reader) openFailed(name string, s *StreamHandle, err error) error {
	err = fmt.Errorf("flinkfmt: opening %s (for %s)%s: %w", name, s.Name, r.outsideHint(s, err), err)
	if errors.Is(err, fs.ErrNotExist) {
		return corrupt(fmt.Errorf("a file the metadata names is missing: %w", err))
	}
	return err
}
