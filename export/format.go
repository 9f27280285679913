package export

import (
	"bufio"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// Format is an output file format. All three take their columns from the
// same mapping.
type Format string

const (
	// Parquet files, for DuckDB, Spark, pandas and pyarrow.
	Parquet Format = "parquet"
	// Arrow IPC files (Feather v2).
	Arrow Format = "arrow"
	// JSONL is one JSON object a row, with the columns in order.
	JSONL Format = "jsonl"
)

// Compression is the codec of Parquet pages and Arrow IPC buffers.
type Compression string

const (
	Zstd         Compression = "zstd"
	Uncompressed Compression = "none"
)

// memAlloc is Go's allocator: builders and writers allocate as Go does,
// so memory is returned to the runtime and counted by its GC.
var memAlloc = memory.DefaultAllocator

// extension is the file name extension of f.
func (f Format) extension() string {
	if f == Arrow {
		return "arrow"
	}
	return string(f)
}

func (f Format) valid() bool { return f == Parquet || f == Arrow || f == JSONL }

// fileWriter writes the record batches of one file. close finishes the
// file (a Parquet or IPC footer) and flushes it, but does not close w.
type fileWriter interface {
	write(rec arrow.RecordBatch) error
	close() error
}

// writerOptions are what every file of an export shares.
type writerOptions struct {
	format       Format
	compression  Compression
	rowGroupRows int
	builders     bool
}

// flat reports whether the files of ds are written from flatCols.
func (o writerOptions) flat(ds *dataset) bool {
	return o.format == Parquet && !o.builders && ds.opState == nil && ds.broadcast == nil && ds.layout.flat()
}

func (o writerOptions) newFileWriter(w io.Writer, schema *arrow.Schema) (fileWriter, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	switch o.format {
	case Parquet:
		return newParquetWriter(bw, schema, o.codec(), o.rowGroupRows)
	case Arrow:
		opts := []ipc.Option{ipc.WithSchema(schema), ipc.WithAllocator(memAlloc)}
		if o.compression != Uncompressed {
			opts = append(opts, ipc.WithZstd())
		}
		fw, err := ipc.NewFileWriter(bw, opts...)
		if err != nil {
			return nil, err
		}
		return &ipcWriter{fw: fw, bw: bw}, nil
	case JSONL:
		return newJSONLWriter(bw, schema), nil
	}
	return nil, fmt.Errorf("export: unknown format %q", o.format)
}

// newFlatWriter is the Parquet writer of a flat dataset's files.
func (o writerOptions) newFlatWriter(w io.Writer, schema *arrow.Schema, dictKey bool) *flatWriter {
	return newFlatWriter(bufio.NewWriterSize(w, 1<<20), schema, o.codec(), o.rowGroupRows, dictKey)
}

func (o writerOptions) codec() compress.Compression {
	if o.compression == Uncompressed {
		return compress.Codecs.Uncompressed
	}
	return compress.Codecs.Zstd
}

type ipcWriter struct {
	fw *ipc.FileWriter
	bw *bufio.Writer
}

func (w *ipcWriter) write(rec arrow.RecordBatch) error { return w.fw.Write(rec) }

func (w *ipcWriter) close() error {
	if err := w.fw.Close(); err != nil {
		return err
	}
	return w.bw.Flush()
}
