package filesource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/internal/crc"
)

// Format is how the lines of a file are read.
type Format uint8

const (
	// ByExtension reads files named *.csv as CSV and *.jsonl, *.ndjson and
	// *.json as JSON lines, and refuses a directory holding any other file.
	ByExtension Format = iota
	// JSONLines reads every file as one JSON value per line.
	JSONLines
	// CSV reads every file as CSV whose first line is a header naming the
	// columns. A record is one line: a quoted field cannot hold a line
	// break, as a split must find where records begin from any byte.
	CSV
)

// Defaults of Options.
const (
	DefaultSplitBytes   = 32 << 20
	DefaultMaxLineBytes = 16 << 20
)

// Options configures a Source.
type Options[T any] struct {
	Format Format
	// SplitBytes is the size of the byte ranges files are cut into; 0
	// means DefaultSplitBytes. A file of n bytes has ceil(n/SplitBytes)
	// splits; an empty file has none.
	SplitBytes int64
	// MaxLineBytes bounds a line, so that a file without line breaks
	// cannot take all memory; a longer line fails the read, whether or
	// not OnMalformed is set. 0 means DefaultMaxLineBytes.
	MaxLineBytes int
	// Decode turns a JSON line into a record; nil means encoding/json into
	// T. The line is only valid during the call.
	Decode func(line []byte) (T, error)
	// DecodeCSV turns the fields of a CSV line into a record, given the
	// file's header; nil means the columns go into the fields of T, a
	// struct, by their `csv` tag or else by their name, ignoring case
	// (see New). The slices are only valid during the call.
	DecodeCSV func(header, fields []string) (T, error)
	// EventTime gives a record's event time in epoch milliseconds; nil
	// means 0 for every record.
	EventTime func(T) int64
	// OnMalformed, when set, is called with every line that cannot be
	// decoded, and the line is skipped; when nil, such a line fails the
	// job. A line read again after a restore is reported again.
	OnMalformed func(*LineError)
}

// LineError is a line of a file that could not be read or decoded.
type LineError struct {
	Path string
	// Offset is the byte offset in the file at which the line begins.
	Offset int64
	Err    error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("filesource: %s at byte %d: %v", e.Path, e.Offset, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// ErrChanged is wrapped by the error of a reader whose file is not what
// the source found when it was made.
var ErrChanged = errors.New("filesource: file changed since the source listed it")

// Source reads the files of a directory. It implements engine.Source,
// engine.SplitIdentifier, and its readers engine.PositionReader.
type Source[T any] struct {
	opts   Options[T]
	files  []file
	splits []split
	// fields maps CSV columns into T when DecodeCSV is nil.
	fields *structFields
}

type file struct {
	path   string
	name   string
	format Format
	size   int64
	// sum is a CRC-32C of the file's head and tail.
	sum uint32
}

// split is the byte range [start, end) of a file: it reads the lines that
// begin in it.
type split struct {
	file       int
	start, end int64
}

// Files whose names begin with these are not read, as Hadoop and Flink
// skip them: editors' and writers' temporary and marker files.
const hiddenPrefixes = "._"

// New lists dir and cuts its files into splits. The list is fixed from
// then on: the splits are the regular files directly in dir, in name
// order, except those whose names begin with '.' or '_'. Files added,
// removed or changed before a restore change the splits' identities, and
// the restore fails naming the first split that differs.
//
// With DecodeCSV nil and a CSV file, T must be a struct whose exported
// fields are strings, booleans, integers, floats or implement
// encoding.TextUnmarshaler; a column with no field is ignored, a field
// with no column keeps its zero value.
func New[T any](dir string, opts Options[T]) (*Source[T], error) {
	if opts.SplitBytes < 0 || opts.MaxLineBytes < 0 || opts.Format > CSV {
		return nil, fmt.Errorf("filesource: split bytes %d, max line bytes %d, format %d", opts.SplitBytes, opts.MaxLineBytes, opts.Format)
	}
	if opts.SplitBytes == 0 {
		opts.SplitBytes = DefaultSplitBytes
	}
	if opts.MaxLineBytes == 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("filesource: %w", err)
	}
	s := &Source[T]{opts: opts}
	for _, e := range entries {
		name := e.Name()
		if strings.ContainsAny(name[:1], hiddenPrefixes) {
			continue
		}
		if !e.Type().IsRegular() {
			if e.IsDir() {
				continue
			}
			return nil, fmt.Errorf("filesource: %s: not a regular file", filepath.Join(dir, name))
		}
		f, err := listFile(filepath.Join(dir, name), name, opts.Format)
		if err != nil {
			return nil, err
		}
		if f.format == CSV && opts.DecodeCSV == nil && s.fields == nil {
			if s.fields, err = fieldsOf[T](); err != nil {
				return nil, err
			}
		}
		for start := int64(0); start < f.size; start += opts.SplitBytes {
			s.splits = append(s.splits, split{file: len(s.files), start: start, end: min(start+opts.SplitBytes, f.size)})
		}
		s.files = append(s.files, f)
	}
	return s, nil
}

func listFile(path, name string, format Format) (file, error) {
	f := file{path: path, name: name, format: format}
	if format == ByExtension {
		switch strings.ToLower(filepath.Ext(name)) {
		case ".csv":
			f.format = CSV
		case ".jsonl", ".ndjson", ".json":
			f.format = JSONLines
		default:
			return f, fmt.Errorf("filesource: %s: neither .csv nor .jsonl, .ndjson or .json; name the format in the options to read it", path)
		}
	}
	h, err := os.Open(path)
	if err != nil {
		return f, fmt.Errorf("filesource: %w", err)
	}
	defer h.Close()
	if f.size, f.sum, err = fingerprint(h); err != nil {
		return f, fmt.Errorf("filesource: %s: %w", path, err)
	}
	return f, nil
}

// fingerprintBytes is how much of a file's head and of its tail the
// checksum of its identity covers: enough to tell a replaced file of the
// same size from the original in practice, without reading it all.
const fingerprintBytes = 4096

func fingerprint(h *os.File) (size int64, sum uint32, err error) {
	fi, err := h.Stat()
	if err != nil {
		return 0, 0, err
	}
	size = fi.Size()
	buf := make([]byte, min(size, fingerprintBytes))
	c := crc.New()
	for _, at := range []int64{0, size - int64(len(buf))} {
		if _, err := h.ReadAt(buf, at); err != nil && !errors.Is(err, io.EOF) {
			return 0, 0, err
		}
		c.Write(buf)
	}
	return size, c.Sum32(), nil
}

// Splits implements engine.Source.
func (s *Source[T]) Splits() int { return len(s.splits) }

// SplitIdentity implements engine.SplitIdentifier.
func (s *Source[T]) SplitIdentity(i int) string {
	sp := s.splits[i]
	f := s.files[sp.file]
	return fmt.Sprintf("%s bytes [%d,%d) of %d, crc32c %08x", f.name, sp.start, sp.end, f.size, f.sum)
}

// Open implements engine.Source: offset 0 is the split's start, any other
// the byte offset in the file of the next line to read, as Position gave.
func (s *Source[T]) Open(ctx context.Context, i int, offset int64) (engine.SplitReader[T], error) {
	if i < 0 || i >= len(s.splits) {
		return nil, fmt.Errorf("filesource: split %d of %d", i, len(s.splits))
	}
	sp := s.splits[i]
	f := &s.files[sp.file]
	h, err := os.Open(f.path)
	if err != nil {
		return nil, fmt.Errorf("filesource: %w", err)
	}
	r, err := s.open(h, f, sp, offset)
	if err != nil {
		h.Close()
		return nil, err
	}
	// The engine does not close a reader: the file closes at the end of
	// its split or when the job stops.
	r.stop = context.AfterFunc(ctx, func() { h.Close() })
	return r, nil
}

func (s *Source[T]) open(h *os.File, f *file, sp split, offset int64) (*reader[T], error) {
	size, sum, err := fingerprint(h)
	if err != nil {
		return nil, fmt.Errorf("filesource: %s: %w", f.path, err)
	}
	if size != f.size || sum != f.sum {
		return nil, fmt.Errorf("%w: %s has %d bytes, crc32c %08x; it had %d, %08x", ErrChanged, f.path, size, sum, f.size, f.sum)
	}
	r := &reader[T]{src: s, h: h, f: f, end: sp.end}
	if f.format == CSV {
		if r.header, err = s.header(h, f); err != nil {
			return nil, err
		}
		if s.opts.DecodeCSV == nil {
			r.columns = s.fields.columns(r.header)
		}
	}
	switch {
	case offset == 0 && sp.start == 0:
		r.lines = newLines(h, 0, s.opts.MaxLineBytes)
		if f.format == CSV {
			// The header is not a record.
			if _, err := r.lines.next(); err != nil {
				return nil, r.lineError(0, err)
			}
		}
	case offset == 0:
		// The line that straddles the split's start belongs to the split
		// before: skip to the first line that begins at or after it.
		r.lines = newLines(h, sp.start-1, s.opts.MaxLineBytes)
		if _, err := r.lines.next(); err != nil && !errors.Is(err, io.EOF) {
			return nil, r.lineError(sp.start-1, err)
		}
	default:
		if offset < sp.start || offset > f.size {
			return nil, fmt.Errorf("filesource: %s: restored offset %d is outside split [%d,%d) of a file of %d bytes", f.path, offset, sp.start, sp.end, f.size)
		}
		var b [1]byte
		if _, err := h.ReadAt(b[:], offset-1); err != nil {
			return nil, fmt.Errorf("filesource: %s: %w", f.path, err)
		}
		// The end of a file whose last line has no line break is where
		// that line ends too.
		if b[0] != '\n' && offset != f.size {
			return nil, fmt.Errorf("filesource: %s: restored offset %d is not at the start of a line", f.path, offset)
		}
		r.lines = newLines(h, offset, s.opts.MaxLineBytes)
	}
	return r, nil
}

// header reads the first line of a CSV file.
func (s *Source[T]) header(h *os.File, f *file) ([]string, error) {
	l := newLines(io.NewSectionReader(h, 0, f.size), 0, s.opts.MaxLineBytes)
	line, err := l.next()
	if err != nil {
		return nil, &LineError{Path: f.path, Err: fmt.Errorf("header: %w", err)}
	}
	fields, err := parseCSVLine(bytes.TrimPrefix(line, []byte("\ufeff")), nil)
	if err != nil {
		return nil, &LineError{Path: f.path, Err: fmt.Errorf("header: %w", err)}
	}
	return fields, nil
}

// reader reads one split.
type reader[T any] struct {
	src    *Source[T]
	h      *os.File
	stop   func() bool
	f      *file
	end    int64
	lines  *lines
	header []string
	// columns maps the header's columns into T's fields; fields holds the
	// current line's.
	columns []int
	fields  []string
}

// Position implements engine.PositionReader: the byte offset of the line
// after the last one Next returned.
func (r *reader[T]) Position() int64 { return r.lines.pos }

// Next implements engine.SplitReader.
func (r *reader[T]) Next(context.Context) (v T, eventTime int64, ok bool, err error) {
	for r.lines.pos < r.end {
		at := r.lines.pos
		line, err := r.lines.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w: it ends before byte %d", ErrChanged, r.end)
			}
			return v, 0, false, r.lineError(at, err)
		}
		if len(line) == 0 {
			continue
		}
		v, err = r.decode(line)
		if err != nil {
			le := r.lineError(at, err)
			if r.src.opts.OnMalformed == nil {
				return v, 0, false, le
			}
			r.src.opts.OnMalformed(le)
			continue
		}
		if et := r.src.opts.EventTime; et != nil {
			eventTime = et(v)
		}
		return v, eventTime, true, nil
	}
	r.stop()
	r.h.Close()
	return v, 0, false, nil
}

func (r *reader[T]) decode(line []byte) (v T, err error) {
	if r.f.format == JSONLines {
		if d := r.src.opts.Decode; d != nil {
			return d(line)
		}
		err = json.Unmarshal(line, &v)
		return v, err
	}
	if r.fields, err = parseCSVLine(line, r.fields[:0]); err != nil {
		return v, err
	}
	if len(r.fields) != len(r.header) {
		return v, fmt.Errorf("%d fields, but the header has %d", len(r.fields), len(r.header))
	}
	if d := r.src.opts.DecodeCSV; d != nil {
		return d(r.header, r.fields)
	}
	err = r.src.fields.set(&v, r.header, r.columns, r.fields)
	return v, err
}

func (r *reader[T]) lineError(at int64, err error) *LineError {
	return &LineError{Path: r.f.path, Offset: at, Err: err}
}
