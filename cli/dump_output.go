package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/stateproc/stateproc/internal/jsonvalue"
)

// errLimit stops a dump once --limit entries are printed.
var errLimit = errors.New("limit reached")

// field is one named value of an output line; fields keep their order, so
// that every line reads key first.
type field struct {
	name  string
	value any
	// text, when isText, is the value: a string's UTF-8 bytes, which a
	// line writes without building the string.
	text   []byte
	isText bool
}

type fields []field

func (f *fields) add(name string, v any) { *f = append(*f, field{name: name, value: v}) }

func (f *fields) addText(name string, b []byte) {
	*f = append(*f, field{name: name, text: b, isText: true})
}

// instant is a field's time in epoch milliseconds, which is written as
// jsonvalue.Time renders it, without building the string.
type instant int64

// dumpSink writes lines as JSON objects, one per line, or collects them
// into a table whose columns are the fields of the first line.
type dumpSink struct {
	w *bufio.Writer
	// line is the JSON line being built.
	line []byte
	// enc writes into spill the values that appendValue leaves to
	// encoding/json, without escaping <, > and &, which are common in values
	// and harmless in JSON lines.
	enc    *json.Encoder
	spill  bytes.Buffer
	table  bool
	header []any
	rows   [][]any
	limit  int
	n      int
}

func newDumpSink(w io.Writer, output string, limit int) *dumpSink {
	s := &dumpSink{w: bufio.NewWriterSize(w, 64<<10), table: output == outputTable, limit: limit}
	s.enc = json.NewEncoder(&s.spill)
	s.enc.SetEscapeHTML(false)
	return s
}

// write writes one entry; it returns errLimit once the limit is reached.
func (s *dumpSink) write(f fields) error {
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
			if c.isText {
				row[i] = string(c.text)
				continue
			}
			if t, ok := c.value.(instant); ok {
				row[i] = jsonvalue.Time(int64(t))
				continue
			}
			row[i] = cellText(c.value)
		}
		s.rows = append(s.rows, row)
		return nil
	}
	b := append(s.line[:0], '{')
	var err error
	for i, c := range f {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(s.appendString(b, c.name), ':')
		if c.isText {
			b = appendText(s, b, c.text)
			continue
		}
		if b, err = s.appendValue(b, c.value); err != nil {
			return err
		}
	}
	b = append(b, '}', '\n')
	s.line = b
	_, err = s.w.Write(b)
	return err
}

// appendValue appends v as encoding/json writes it (with HTML escaping
// off), byte for byte: the kinds of value a dump line holds by the million
// are written here without reflection, and the rest by encoding/json.
func (s *dumpSink) appendValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case instant:
		// The layout's digits, dashes, colons, T, dot and Z need no escaping.
		b = append(b, '"')
		b = time.UnixMilli(int64(x)).UTC().AppendFormat(b, jsonvalue.TimeLayout)
		return append(b, '"'), nil
	case string:
		return s.appendString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			break // encoding/json's error
		}
		return appendFloat(b, x), nil
	case []any:
		if x == nil {
			break
		}
		return appendArray(s, b, x)
	case []map[string]any:
		if x == nil {
			break
		}
		return appendArray(s, b, x)
	case map[string]any:
		if x == nil {
			break
		}
		// encoding/json sorts the members by name.
		keys := slices.Sorted(maps.Keys(x))
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(s.appendString(b, k), ':')
			var err error
			if b, err = s.appendValue(b, x[k]); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	}
	return s.encode(b, v)
}

// appendString writes a string of printable ASCII, which JSON escapes only
// at quotes and backslashes, itself; encoding/json writes any other.
func (s *dumpSink) appendString(b []byte, v string) []byte { return appendText(s, b, v) }

func appendText[T string | []byte](s *dumpSink, b []byte, v T) []byte {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			b, _ = s.encode(b, string(v)) // a string always encodes
			return b
		}
	}
	b = append(b, '"')
	b = append(b, v...)
	return append(b, '"')
}

func (s *dumpSink) encode(b []byte, v any) ([]byte, error) {
	s.spill.Reset()
	if err := s.enc.Encode(v); err != nil {
		return b, err
	}
	// Encode ends the value with a newline.
	return append(b, s.spill.Bytes()[:s.spill.Len()-1]...), nil
}

// appendFloat writes a finite float64 as encoding/json does: the shortest
// decimal that reads back as the same number, in exponent form below 1e-6
// and from 1e21 up, with an exponent of at least two digits only when it
// needs them.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-07 becomes e-7, as in JavaScript.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// close renders the table, if any, and flushes.
func (s *dumpSink) close() error {
	if s.table && len(s.rows) > 0 {
		t := newTable(s.w, s.header...)
		for _, r := range s.rows {
			t.Append(r...)
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	return s.w.Flush()
}

// appendArray writes xs as a JSON array, as encoding/json writes a non-nil
// slice.
func appendArray[E any](s *dumpSink, b []byte, xs []E) ([]byte, error) {
	b = append(b, '[')
	for i, e := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = s.appendValue(b, e); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}
