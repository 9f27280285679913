package filesource

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// lines reads a file line by line from a byte offset, keeping the offset
// of the next line.
type lines struct {
	br  *bufio.Reader
	pos int64
	max int
	buf []byte
}

func newLines(r io.ReaderAt, at int64, max int) *lines {
	return &lines{br: bufio.NewReaderSize(io.NewSectionReader(r, at, 1<<62), 64<<10), pos: at, max: max}
}

var errLineTooLong = errors.New("line too long")

// next returns the next line without its line break (LF or CRLF), valid
// until the next call; io.EOF when there is none. A last line without a
// line break is a line.
func (l *lines) next() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.br.ReadSlice('\n')
		if len(l.buf)+len(chunk) > l.max {
			return nil, fmt.Errorf("%w: more than %d bytes", errLineTooLong, l.max)
		}
		switch {
		case err == nil && len(l.buf) == 0:
			// The common case: the line is in the buffer, no copy.
			l.pos += int64(len(chunk))
			return trimEOL(chunk), nil
		case errors.Is(err, bufio.ErrBufferFull):
			l.buf = append(l.buf, chunk...)
			continue
		case err == nil, errors.Is(err, io.EOF):
			l.buf = append(l.buf, chunk...)
			if len(l.buf) == 0 {
				return nil, io.EOF
			}
			l.pos += int64(len(l.buf))
			return trimEOL(l.buf), nil
		default:
			return nil, err
		}
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte{'\n'})
	return bytes.TrimSuffix(b, []byte{'\r'})
}

// parseCSVLine appends the fields of one CSV line (RFC 4180, comma
// separated, without line breaks in quoted fields) to dst.
func parseCSVLine(line []byte, dst []string) ([]string, error) {
	for i := 0; ; {
		if i < len(line) && line[i] == '"' {
			var f []byte
			j := i + 1
			for {
				k := bytes.IndexByte(line[j:], '"')
				if k < 0 {
					return dst, fmt.Errorf("column %d: unterminated quoted field", len(dst)+1)
				}
				f = append(f, line[j:j+k]...)
				j += k + 1
				if j < len(line) && line[j] == '"' {
					f = append(f, '"')
					j++
					continue
				}
				break
			}
			dst = append(dst, string(f))
			switch {
			case j == len(line):
				return dst, nil
			case line[j] != ',':
				return dst, fmt.Errorf("column %d: %q after a quoted field", len(dst), line[j])
			}
			i = j + 1
			continue
		}
		k := bytes.IndexByte(line[i:], ',')
		end := len(line)
		if k >= 0 {
			end = i + k
		}
		if q := bytes.IndexByte(line[i:end], '"'); q >= 0 {
			return dst, fmt.Errorf("column %d: a quote inside an unquoted field", len(dst)+1)
		}
		dst = append(dst, string(line[i:end]))
		if k < 0 {
			return dst, nil
		}
		i = end + 1
	}
}
