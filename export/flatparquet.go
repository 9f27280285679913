package export

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
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
	// schema, codec, rowGroupRows and dictKey are for the file, which
	// is begun with its first row group: whether map_key has a
	// dictionary is what the map keys of that row group say.
	schema       *arrow.Schema
	codec        compress.Compression
	rowGroupRows int
	dictKey      bool
	// strs holds a column's values for the writers that do not take
	// offsets (dictionary encoding).
	strs []parquet.ByteArray
}

func newFlatWriter(bw *bufio.Writer, schema *arrow.Schema, codec compress.Compression, rowGroupRows int, dictKey bool) *flatWriter {
	return &flatWriter{bw: bw, schema: schema, codec: codec, rowGroupRows: rowGroupRows, dictKey: dictKey}
}

// begin begins the file, with a dictionary for map_key if dictMapKey.
func (w *flatWriter) begin(dictMapKey bool) error {
	schema := w.schema
	props, arrowProps, err := parquetProps(schema, w.codec, w.rowGroupRows, dictColumns{key: w.dictKey, mapKey: dictMapKey})
	if err != nil {
		return err
	}
	pq, err := pqarrow.ToParquet(schema, props, arrowProps)
	if err != nil {
		return err
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
		return err
	}
	meta.Append("ARROW:schema", base64.StdEncoding.EncodeToString(ipcSchema.Bytes()))
	w.fw, err = file.NewParquetWriterWithError(w.bw, pq.Root(), file.WithWriterProps(props), file.WithWriteMetadata(meta))
	return err
}

// writeGroup writes the columns of rows, those of the schema in order, as
// a row group. The first begins the file: map_key has a dictionary if it
// still has one after the first row group's rows. Otherwise its later
// row groups are not looked up at all.
func (w *flatWriter) writeGroup(rows *flatRows) error {
	if w.fw == nil {
		mk := rows.mapKey
		dict := mk != nil && mk.dict
		if err := w.begin(dict); err != nil {
			return err
		}
		if mk != nil && !dict {
			mk.ids = nil
		}
	}
	rgw, err := w.fw.AppendRowGroupChecked()
	if err != nil {
		return err
	}
	cols := rows.cols
	for i := range cols {
		cw, err := rgw.NextColumn()
		if err != nil {
			return err
		}
		if d := cw.Descr().MaxDefinitionLevel(); d != cols[i].maxDef {
			return fmt.Errorf("column %s: definition level %d, flat values of %d", cw.Descr().Path(), d, cols[i].maxDef)
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
	var defs []int16
	if c.maxDef > 0 {
		defs = c.defs
	}
	var err error
	switch cw := cw.(type) {
	case *file.BooleanColumnChunkWriter:
		_, err = cw.WriteBatch(c.bools, defs, nil)
	case *file.Int32ColumnChunkWriter:
		_, err = cw.WriteBatch(c.i32, defs, nil)
	case *file.Int64ColumnChunkWriter:
		_, err = cw.WriteBatch(c.i64, defs, nil)
	case *file.Float32ColumnChunkWriter:
		_, err = cw.WriteBatch(c.f32, defs, nil)
	case *file.Float64ColumnChunkWriter:
		_, err = cw.WriteBatch(c.f64, defs, nil)
	case *file.ByteArrayColumnChunkWriter:
		switch {
		case c.dict:
			err = w.writeDict(cw, c, defs)
		case c.ids != nil:
			// A map_key row group of too many distinct values in a file
			// whose map keys have a dictionary.
			cw.FallbackToPlain()
			err = w.writeStrings(cw, c, defs)
		case cw.SupportsArrowOffsets():
			_, err = cw.WriteBatchArrow(c.data, c.offs, defs, nil)
		default:
			err = w.writeStrings(cw, c, defs)
		}
	default:
		err = fmt.Errorf("no flat values for a %T", cw)
	}
	return err
}

// writeStrings writes the values of c one by one, for the encoders that
// do not take offsets.
func (w *flatWriter) writeStrings(cw *file.ByteArrayColumnChunkWriter, c *flatCol, defs []int16) error {
	w.strs = w.strs[:0]
	if c.dict {
		for _, i := range c.idx {
			w.strs = append(w.strs, c.data[c.offs[i]:c.offs[i+1]:c.offs[i+1]])
		}
	} else {
		for i := range len(c.offs) - 1 {
			w.strs = append(w.strs, c.data[c.offs[i]:c.offs[i+1]:c.offs[i+1]])
		}
	}
	_, err := cw.WriteBatch(w.strs, defs, nil)
	return err
}

// dictPutter is the dictionary encoder of a column chunk writer, which
// takes a dictionary of distinct values whole.
type dictPutter interface {
	PutDictionary(values arrow.Array) error
	NumEntries() int
}

// writeDict writes a key column whose runs of equal keys c holds once
// each: they are the dictionary, in order, and the rows' runs its indices,
// so that the encoder hashes each key once per row group rather than once
// per row. Runs out of order may repeat a key, and a null has no index:
// those rows are hashed one by one.
func (w *flatWriter) writeDict(cw *file.ByteArrayColumnChunkWriter, c *flatCol, defs []int16) error {
	enc, ok := cw.CurrentEncoder().(dictPutter)
	if !ok || c.unsorted || c.nulls > 0 {
		return w.writeStrings(cw, c, defs)
	}
	dict := array.NewBinaryData(array.NewData(arrow.BinaryTypes.Binary, len(c.offs)-1,
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(c.offs)), memory.NewBufferBytes(c.data)}, nil, 0, 0))
	defer dict.Release()
	if err := enc.PutDictionary(dict); err != nil {
		return err
	}
	if enc.NumEntries() != dict.Len() {
		// A key in runs of two key groups: the savepoint is corrupt, which
		// the reader reports; the rows are written as they are meanwhile.
		cw.FallbackToPlain()
		return w.writeStrings(cw, c, defs)
	}
	if st := cw.PageStatistics(); st != nil {
		st.IncNumValues(int64(len(c.idx)))
		if err := st.UpdateFromArrow(dict, false); err != nil {
			return err
		}
	}
	idx := array.NewInt32Data(array.NewData(arrow.PrimitiveTypes.Int32, len(c.idx),
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(c.idx))}, nil, 0, 0))
	defer idx.Release()
	return cw.WriteDictIndices(idx, defs, nil)
}

func (w *flatWriter) close() error {
	if w.fw == nil {
		if err := w.begin(false); err != nil {
			return err
		}
	}
	if err := w.fw.Close(); err != nil {
		return err
	}
	return w.bw.Flush()
}
