package bootstrap

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"
)

// maxLine bounds a line of a JSON lines file: a row is held whole, so this
// is the largest row a bootstrap reads, as the savepoint format's block
// limit is the largest entry it writes.
const maxLine = 256 << 20

// jsonl reads a JSON lines file: one object per line, its members the
// columns, values in the JSON conventions of every command's output.
// Blank lines are skipped; a row's number is its line's.
func (fl *fileLoad) jsonl(ctx context.Context, r io.Reader) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var line []byte
	for n := int64(1); ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		var err error
		line, err = readLine(br, line[:0])
		if errors.Is(err, errLongLine) {
			if err := fl.bad(n, "", err); err != nil {
				return err
			}
			continue
		}
		if err != nil && (err != io.EOF || len(line) == 0) {
			if err == io.EOF {
				return nil
			}
			return fileError(fl.source, err)
		}
		if err := fl.jsonRow(n, bytes.TrimSpace(line)); err != nil {
			return err
		}
		if err == io.EOF {
			return nil
		}
	}
}

var errLongLine = fmt.Errorf("the line is longer than %d bytes", maxLine)

// readLine appends the next line, without its end, to dst. A line longer
// than maxLine is skipped and reported.
func readLine(br *bufio.Reader, dst []byte) ([]byte, error) {
	for {
		frag, err := br.ReadSlice('\n')
		if len(dst)+len(frag) > maxLine {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return dst[:0], err
			}
			return dst[:0], errLongLine
		}
		dst = append(dst, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == nil {
			dst = dst[:len(dst)-1]
		}
		return dst, err
	}
}

func (fl *fileLoad) jsonRow(n int64, line []byte) error {
	if len(line) == 0 {
		return nil
	}
	if !utf8.Valid(line) {
		// encoding/json would replace the bad bytes silently.
		return fl.bad(n, "", errors.New("the line is not valid UTF-8"))
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return fl.bad(n, "", fmt.Errorf("not a JSON object: %v", err))
	}
	if dec.More() {
		return fl.bad(n, "", errors.New("more than one JSON value on the line"))
	}
	if obj == nil {
		return fl.bad(n, "", errors.New("null, not a JSON object"))
	}
	for name := range obj {
		if !slices.ContainsFunc(fl.cols, func(c column) bool { return c.name == name }) {
			return fl.bad(n, name, fmt.Errorf("no such column in a dataset of %s; it has %s", fl.s.t.describe(), columnNames(fl.cols)))
		}
	}
	fl.r.reset(fl.b.opts.Now)
	for k := range fl.cols {
		c := &fl.cols[k]
		v, ok := obj[c.name]
		switch {
		case c.enc == nil:
			continue
		case c.optional && v == nil:
			continue
		case !ok:
			return fl.bad(n, c.name, errors.New("the column is missing"))
		}
		slot := fl.r.slot(c)
		var err error
		if *slot, err = c.enc.AppendJSON(*slot, v); err == nil {
			err = fl.r.take(c)
		}
		if err != nil {
			name, e := columnError(c.name, err)
			return fl.bad(n, name, e)
		}
	}
	return fl.add(n)
}
