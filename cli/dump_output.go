package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// errLimit stops a dump once --limit entries are printed.
var errLimit = errors.New("limit reached")

// field is one named value of an output line; fields keep their order, so
// that every line reads key first.
type field struct {
	name  string
	value any
}

type fields []field

func (f *fields) add(name string, v any) { *f = append(*f, field{name, v}) }

// dumpSink writes lines as JSON objects, one per line, or collects them
// into a table whose columns are the fields of the first line.
type dumpSink struct {
	w *bufio.Writer
	// enc writes values into buf without escaping <, > and &, which are
	// common in values and harmless in JSON lines.
	enc    *json.Encoder
	buf    bytes.Buffer
	table  bool
	header []any
	rows   [][]any
	limit  int
	n      int
}

func newDumpSink(w io.Writer, output string, limit int) *dumpSink {
	s := &dumpSink{w: bufio.NewWriter(w), table: output == outputTable, limit: limit}
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false)
	return s
}

// line writes one entry; it returns errLimit once the limit is reached.
func (s *dumpSink) line(f fields) error {
	if s.limit > 0 && s.n >= s.limit {
		return errLimit
	}
	s.n++
	if s.table {
		if s.header == nil {
			for _, c := range f {
				s.header = append(s.header, c.name)
			}
		}
		row := make([]any, len(f))
		for i, c := range f {
			row[i] = cellText(c.value)
		}
		s.rows = append(s.rows, row)
		return nil
	}
	s.buf.Reset()
	s.buf.WriteByte('{')
	for i, c := range f {
		if i > 0 {
			s.buf.WriteByte(',')
		}
		// Encode ends each value with a newline, which is cut off.
		s.enc.Encode(c.name)
		s.buf.Truncate(s.buf.Len() - 1)
		s.buf.WriteByte(':')
		if err := s.enc.Encode(c.value); err != nil {
			return err
		}
		s.buf.Truncate(s.buf.Len() - 1)
	}
	s.buf.WriteString("}\n")
	_, err := s.w.Write(s.buf.Bytes())
	return err
}

// close renders the table, if any, and flushes.
func (s *dumpSink) close() error {
	if s.table && len(s.rows) > 0 {
		t := newTable(s.w, s.header...)
		for _, r := range s.rows {
			if err := t.Append(r...); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	return s.w.Flush()
}
