package export

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// flatWriter writes the Parquet file of a flat dataset a row group of
// flatCols at a time, with the schema, properties and key-value metadata
// of parquetWriter's files, so that both write the same bytes.
type flatWriter struct {
	fw *file.Writer
	bw *bufio.Writer
	// strs holds a column's values for the writers that do not take
	// offsets (dictionary encoding).
	strs []parquet.ByteArray
}

func newFlatWriter(bw *bufio.Writer, schema *arrow.Schema, codec compress.Compression, rowGroupRows int) (*flatWriter, error) {
	props, arrowProps, err := parquetProps(schema, codec, rowGroupRows)
	if err != nil {
		return nil, err
	}
	pq, err := pqarrow.ToParquet(schema, props, arrowProps)
	if err != nil {
		return nil, err
	}
	md := schema.Metadata()
	meta := make(metadata.KeyValueMetadata, 0, md.Len()+1)
	for i, k := range md.Keys() {
		meta.Append(k, md.Values()[i])
	}
	// The Arrow schema as Arrow's writer stores it: an IPC stream of the
	// schema alone, in base64.
	var ipcSchema bytes.Buffer
	if err := ipc.NewWriter(&ipcSchema, ipc.WithSchema(schema), ipc.WithAllocator(memAlloc)).Close(); err != nil {
		return nil, err
	}
	meta.Append("ARROW:schema", base64.StdEncoding.EncodeToString(ipcSchema.Bytes()))
	fw, err := file.NewParquetWriterWithError(bw, pq.Root(), file.WithWriterProps(props), file.WithWriteMetadata(meta))
	if err != nil {
		return nil, err
	}
	return &flatWriter{fw: fw, bw: bw}, nil
}

// writeGroup writes cols, the columns of the schema in order, as a row
// group.
func (w *flatWriter) writeGroup(cols []flatCol) error {
	rgw, err := w.fw.AppendRowGroupChecked()
	if err != nil {
		return err
	}
	for i := range cols {
		cw, err := rgw.NextColumn()
		if err != nil {
			return err
		}
		if err := w.writeColumn(cw, &cols[i]); err != nil {
			return fmt.Errorf("column %s: %w", cw.Descr().Path(), err)
		}
		if err := cw.Close(); err != nil {
			return err
		}
	}
	return rgw.Close()
}

func (w *flatWriter) writeColumn(cw file.ColumnChunkWriter, c *flatCol) error {
	var err error
	switch cw := cw.(type) {
	case *file.BooleanColumnChunkWriter:
		_, err = cw.WriteBatch(c.bools, nil, nil)
	case *file.Int32ColumnChunkWriter:
		_, err = cw.WriteBatch(c.i32, nil, nil)
	case *file.Int64ColumnChunkWriter:
		_, err = cw.WriteBatch(c.i64, nil, nil)
	case *file.Float32ColumnChunkWriter:
		_, err = cw.WriteBatch(c.f32, nil, nil)
	case *file.Float64ColumnChunkWriter:
		_, err = cw.WriteBatch(c.f64, nil, nil)
	case *file.ByteArrayColumnChunkWriter:
		if cw.SupportsArrowOffsets() {
			_, err = cw.WriteBatchArrow(c.data, c.offs, nil, nil)
			break
		}
		w.strs = w.strs[:0]
		for i := range len(c.offs) - 1 {
			w.strs = append(w.strs, c.data[c.offs[i]:c.offs[i+1]:c.offs[i+1]])
		}
		_, err = cw.WriteBatch(w.strs, nil, nil)
	default:
		err = fmt.Errorf("no flat values for a %T", cw)
	}
	return err
}

func (w *flatWriter) close() error {
	if err := w.fw.Close(); err != nil {
		return err
	}
	return w.bw.Flush()
}
