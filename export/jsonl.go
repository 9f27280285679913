package export

import (
	"bufio"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// jsonlWriter writes each row as a JSON object whose members are the
// columns in schema order, in Arrow's JSON form, which arrow's readers
// read back: struct fields in their order, a map as a list of {"key",
// "value"} objects (keys need not be strings), timestamps in RFC 3339,
// bytes in base64, decimals as strings.
type jsonlWriter struct {
	bw     *bufio.Writer
	schema *arrow.Schema
	buf    []byte
}

func (w *jsonlWriter) write(rec arrow.RecordBatch) error {
	for row := range int(rec.NumRows()) {
		b := append(w.buf[:0], '{')
		for i, col := range rec.Columns() {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSONName(b, w.schema.Field(i).Name); err != nil {
				return err
			}
			if b, err = appendJSON(b, col, row); err != nil {
				return fmt.Errorf("column %s: %w", w.schema.Field(i).Name, err)
			}
		}
		w.buf = append(b, '}', '\n')
		if _, err := w.bw.Write(w.buf); err != nil {
			return err
		}
	}
	return nil
}

func (w *jsonlWriter) close() error { return w.bw.Flush() }

func appendJSONName(b []byte, name string) ([]byte, error) {
	n, err := json.Marshal(name)
	if err != nil {
		return b, err
	}
	return append(append(b, n...), ':'), nil
}

// appendJSON appends value i of arr.
func appendJSON(b []byte, arr arrow.Array, i int) ([]byte, error) {
	if arr.IsNull(i) {
		return append(b, "null"...), nil
	}
	var err error
	switch a := arr.(type) {
	case *array.Struct:
		typ := a.DataType().(*arrow.StructType)
		b = append(b, '{')
		for f := range a.NumField() {
			if f > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSONName(b, typ.Field(f).Name); err != nil {
				return b, err
			}
			if b, err = appendJSON(b, a.Field(f), i); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case *array.Map:
		start, end := a.ValueOffsets(i)
		b = append(b, '[')
		for j := start; j < end; j++ {
			if j > start {
				b = append(b, ',')
			}
			b = append(b, `{"key":`...)
			if b, err = appendJSON(b, a.Keys(), int(j)); err != nil {
				return b, err
			}
			b = append(b, `,"value":`...)
			if b, err = appendJSON(b, a.Items(), int(j)); err != nil {
				return b, err
			}
			b = append(b, '}')
		}
		return append(b, ']'), nil
	case *array.List:
		start, end := a.ValueOffsets(i)
		b = append(b, '[')
		for j := start; j < end; j++ {
			if j > start {
				b = append(b, ',')
			}
			if b, err = appendJSON(b, a.ListValues(), int(j)); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	}
	v, err := json.Marshal(arr.GetOneForMarshal(i))
	if err != nil {
		return b, err
	}
	return append(b, v...), nil
}
