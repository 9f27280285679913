package export

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/hamba/avro/v2"

	"github.com/stateproc/stateproc/internal/avrobin"
	"github.com/stateproc/stateproc/serializers"
)

// jsonlWriter writes each row as a JSON object whose members are the
// columns in schema order, in the JSON conventions every stateproc command
// follows (package internal/jsonvalue) and that dump prints too: struct
// fields in their order, a map as a list of {"key", "value"} objects (keys
// need not be strings), timestamps in RFC 3339, bytes in hex, decimals as
// strings, and a union column, a struct of one field per branch, as the one
// branch that is set, {"long": 42}.
type jsonlWriter struct {
	bw     *bufio.Writer
	schema *arrow.Schema
	// avro holds the Avro schema of each column that holds Avro values, so
	// that its unions are told from its records.
	avro []avro.Schema
	buf  []byte
}

func newJSONLWriter(bw *bufio.Writer, schema *arrow.Schema) *jsonlWriter {
	w := &jsonlWriter{bw: bw, schema: schema, avro: make([]avro.Schema, schema.NumFields())}
	var snaps map[string]serializers.Snapshot
	if md := schema.Metadata(); md.FindKey("stateproc.serializers") >= 0 {
		// The other members of the snapshots are no serializers; they do
		// not decode as one and are left out.
		var raw map[string]json.RawMessage
		if json.Unmarshal([]byte(md.Values()[md.FindKey("stateproc.serializers")]), &raw) == nil {
			snaps = map[string]serializers.Snapshot{}
			for k, v := range raw {
				var s serializers.Snapshot
				if json.Unmarshal(v, &s) == nil {
					snaps[k] = s
				}
			}
		}
	}
	column := map[string]string{"key": "key", "value": "value", "map_key": "mapKey"}
	for i, f := range schema.Fields() {
		snap, ok := snaps[column[f.Name]]
		if f.Name == "value" && !ok {
			snap, ok = snaps["element"]
		}
		if ok && snap.Kind == serializers.KindAvro {
			w.avro[i], _, _ = avrobin.ParseSchema(snap.Schema)
		}
	}
	return w
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
			if b, err = appendJSON(b, col, row, w.avro[i]); err != nil {
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

// appendJSON appends value i of arr, which holds values of the Avro schema
// s when s is not nil.
func appendJSON(b []byte, arr arrow.Array, i int, s avro.Schema) ([]byte, error) {
	if arr.IsNull(i) {
		return append(b, "null"...), nil
	}
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	if u, ok := s.(*avro.UnionSchema); ok {
		// A union of null and one type is that type's column, nullable.
		branches := nonNull(u)
		if len(branches) <= 1 {
			var inner avro.Schema
			if len(branches) == 1 {
				inner = branches[0]
			}
			return appendJSON(b, arr, i, inner)
		}
		if a, ok := arr.(*array.Struct); ok && a.NumField() == len(branches) {
			typ := a.DataType().(*arrow.StructType)
			for f := range a.NumField() {
				if a.Field(f).IsNull(i) {
					continue
				}
				var err error
				if b, err = appendJSONName(append(b, '{'), typ.Field(f).Name); err != nil {
					return b, err
				}
				if b, err = appendJSON(b, a.Field(f), i, branches[f]); err != nil {
					return b, err
				}
				return append(b, '}'), nil
			}
		}
		s = nil
	}
	var err error
	switch a := arr.(type) {
	case *array.Struct:
		typ := a.DataType().(*arrow.StructType)
		var fields []*avro.Field
		if rs, ok := s.(*avro.RecordSchema); ok && len(rs.Fields()) == a.NumField() {
			fields = rs.Fields()
		}
		b = append(b, '{')
		for f := range a.NumField() {
			if f > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSONName(b, typ.Field(f).Name); err != nil {
				return b, err
			}
			var fs avro.Schema
			if fields != nil {
				fs = fields[f].Type()
			}
			if b, err = appendJSON(b, a.Field(f), i, fs); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case *array.Binary:
		return strconv.AppendQuote(b, hex.EncodeToString(a.Value(i))), nil
	case *array.Decimal128:
		return appendDecimal(b, a.Value(i).BigInt(), a.DataType().(*arrow.Decimal128Type).Scale), nil
	case *array.Decimal256:
		return appendDecimal(b, a.Value(i).BigInt(), a.DataType().(*arrow.Decimal256Type).Scale), nil
	case *array.FixedSizeBinary:
		return strconv.AppendQuote(b, hex.EncodeToString(a.Value(i))), nil
	case *array.Map:
		start, end := a.ValueOffsets(i)
		b = append(b, '[')
		for j := start; j < end; j++ {
			if j > start {
				b = append(b, ',')
			}
			var vs avro.Schema
			if ms, ok := s.(*avro.MapSchema); ok {
				vs = ms.Values()
			}
			b = append(b, `{"key":`...)
			if b, err = appendJSON(b, a.Keys(), int(j), nil); err != nil {
				return b, err
			}
			b = append(b, `,"value":`...)
			if b, err = appendJSON(b, a.Items(), int(j), vs); err != nil {
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
			var is avro.Schema
			if as, ok := s.(*avro.ArraySchema); ok {
				is = as.Items()
			}
			if b, err = appendJSON(b, a.ListValues(), int(j), is); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	}
	if n, ok := outsideRFC3339(arr, i); ok {
		return strconv.AppendInt(b, n, 10), nil
	}
	v, err := json.Marshal(arr.GetOneForMarshal(i))
	if err != nil {
		return b, err
	}
	return append(b, v...), nil
}

// outsideRFC3339 returns the count of a timestamp or date that falls
// outside the years 0000 to 9999, which RFC 3339 cannot write: such a value
// goes out as a JSON integer in the column's unit, which bootstrap reads,
// rather than as Arrow's text for it.
func outsideRFC3339(arr arrow.Array, i int) (int64, bool) {
	var n, perSecond int64
	switch a := arr.(type) {
	case *array.Timestamp:
		n, perSecond = int64(a.Value(i)), int64(time.Second/a.DataType().(*arrow.TimestampType).Unit.Multiplier())
	case *array.Date32:
		// Days: a day's seconds are counted below.
		n, perSecond = int64(a.Value(i)), -86400
	case *array.Date64:
		n, perSecond = int64(a.Value(i)), 1000
	default:
		return 0, false
	}
	var sec int64
	if perSecond < 0 {
		sec = n * -perSecond
	} else {
		sec = n / perSecond
		if n%perSecond < 0 {
			sec-- // the floor, for times before 1970
		}
	}
	// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
	const first, last = -62167219200, 253402300799
	return n, sec < first || sec > last
}

// nonNull returns the branches of u other than null, in order: the fields
// of its struct column.
func nonNull(u *avro.UnionSchema) []avro.Schema {
	var out []avro.Schema
	for _, t := range u.Types() {
		if t.Type() != avro.Null {
			out = append(out, t)
		}
	}
	return out
}

// appendDecimal appends the decimal unscaled × 10^-scale as a string with
// scale digits after the point, as dump writes an Avro decimal.
func appendDecimal(b []byte, unscaled *big.Int, scale int32) []byte {
	r := new(big.Rat).SetFrac(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	return strconv.AppendQuote(b, r.FloatString(int(scale)))
}
