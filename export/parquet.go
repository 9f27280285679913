package export

import (
	"bufio"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"
)

// zstdLevel is zstd's fastest level. Level 3, the library's default, took
// a third more time for files no smaller on state data.
const zstdLevel = 1

type parquetWriter struct {
	fw *pqarrow.FileWriter
	bw *bufio.Writer
}

// parquetProps are the writer properties of every Parquet file: those of
// Arrow's writer, which stores the Arrow schema, and of Parquet's.
func parquetProps(schema *arrow.Schema, codec compress.Compression, rowGroupRows int, dict dictColumns) (*parquet.WriterProperties, pqarrow.ArrowWriterProperties, error) {
	// The stored Arrow schema keeps what Parquet's types lose (enums as
	// dictionaries, time zones) for readers that use it.
	arrowProps := pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(memAlloc), pqarrow.WithStoreSchema())
	props := []parquet.WriterProperty{
		parquet.WithAllocator(memAlloc),
		parquet.WithCompression(codec),
		parquet.WithCompressionLevel(zstdLevel),
		parquet.WithMaxRowGroupLength(int64(rowGroupRows)),
		parquet.WithCreatedBy("stateproc"),
		parquet.WithDictionaryDefault(false),
	}
	enc, err := encodings(schema, arrowProps, dict)
	if err != nil {
		return nil, arrowProps, err
	}
	return parquet.NewWriterProperties(append(props, enc...)...), arrowProps, nil
}

func newParquetWriter(bw *bufio.Writer, schema *arrow.Schema, codec compress.Compression, rowGroupRows int) (*parquetWriter, error) {
	props, arrowProps, err := parquetProps(schema, codec, rowGroupRows, dictColumns{})
	if err != nil {
		return nil, err
	}
	fw, err := pqarrow.NewFileWriter(schema, bw, props, arrowProps)
	if err != nil {
		return nil, err
	}
	return &parquetWriter{fw: fw, bw: bw}, nil
}

// dictColumns says which of the key columns of a flat dataset's file have
// a dictionary (see flat.go); Arrow's writer gives them none.
type dictColumns struct {
	key, mapKey bool
}

// encodings chooses each column's encoding (and where it compresses) for
// what state data looks like, so that zstd gets little to do:
//
//   - key and map_key are sorted (keys within a key group, map keys within a
//     key) and repeat (a key per element of its list or map): incremental
//     encoding stores each as the length of the prefix it shares with the
//     one before and the rest. With dict.key (a flat state whose keys
//     repeat, see flat.go), key has a dictionary instead: of its runs, each
//     key once, and the rows' runs as run-length encoded indices, which
//     cost a fifth of what prefix deltas of every row do. With dict.mapKey
//     (a flat map state whose map keys are few, the same in the maps of
//     many keys), map_key has a dictionary too: its distinct values, whose
//     bit-packed indices cost a fraction of prefix deltas to write, and
//     take less room.
//   - Other strings and bytes (Avro fields, enums) repeat in any order: a
//     dictionary.
//   - Integers and timestamps (key groups, counters, TTL times) change by
//     little from row to row or repeat: delta encoding bit-packs the
//     differences. Hashing them for a dictionary cost more than the rest of
//     the export. Those of timestamps (TTL times, timers) are not
//     compressed: their low bits are noise, which zstd did not shrink at
//     all on state data, for about 6% of the export's CPU.
//   - Anything else is written plain.
//
// map_key has no statistics: a row group holds the maps of many keys, so
// its minimum and maximum span about every map key and let a reader skip
// nothing, while keeping them cost a fifth of the writer's time (two byte
// comparisons per row). key keeps them: sorted, it is what they prune by.
func encodings(schema *arrow.Schema, props pqarrow.ArrowWriterProperties, dict dictColumns) ([]parquet.WriterProperty, error) {
	pq, err := pqarrow.ToParquet(schema, nil, props)
	if err != nil {
		return nil, err
	}
	var out []parquet.WriterProperty
	for i := range pq.NumColumns() {
		c := pq.Column(i)
		path := c.ColumnPath()
		switch c.PhysicalType() {
		case parquet.Types.ByteArray:
			p := path.String()
			switch {
			case p == colKey && dict.key, p == colMapKey && dict.mapKey:
				out = append(out, parquet.WithDictionaryPath(path, true))
			case p == colKey || p == colMapKey:
				out = append(out, parquet.WithEncodingPath(path, parquet.Encodings.DeltaByteArray))
			default:
				out = append(out, parquet.WithDictionaryPath(path, true))
			}
			if p == colMapKey {
				out = append(out, parquet.WithStatsPath(path, false))
			}
		case parquet.Types.Int32, parquet.Types.Int64:
			out = append(out, parquet.WithEncodingPath(path, parquet.Encodings.DeltaBinaryPacked))
			if _, ok := c.LogicalType().(pqschema.TimestampLogicalType); ok {
				out = append(out, parquet.WithCompressionPath(path, compress.Codecs.Uncompressed))
			}
		}
	}
	return out, nil
}

func (w *parquetWriter) write(rec arrow.RecordBatch) error { return w.fw.Write(rec) }

func (w *parquetWriter) close() error {
	if err := w.fw.Close(); err != nil {
		return err
	}
	return w.bw.Flush()
}
