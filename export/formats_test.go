package export_test

import (
	"context"
	"encoding/json"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// readParquet reads every file of a dataset back through Arrow.
func readParquet(t *testing.T, dir string) arrow.Table {
	t.Helper()
	var tables []arrow.Table
	files, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	for _, f := range files {
		r, err := file.OpenParquetFile(f, false)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		tables = append(tables, tbl)
	}
	return concat(t, tables)
}

func readIPC(t *testing.T, dir string) arrow.Table {
	t.Helper()
	var tables []arrow.Table
	files, _ := filepath.Glob(filepath.Join(dir, "*.arrow"))
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ipc.NewFileReader(f)
		if err != nil {
			t.Fatal(err)
		}
		var recs []arrow.RecordBatch
		for i := range r.NumRecords() {
			rec, err := r.RecordBatch(i)
			if err != nil {
				t.Fatal(err)
			}
			rec.Retain()
			recs = append(recs, rec)
		}
		tables = append(tables, array.NewTableFromRecords(r.Schema(), recs))
		r.Close()
		f.Close()
	}
	return concat(t, tables)
}

// readJSONL parses JSON lines with the schema of the same dataset's
// Parquet files, as Arrow's JSON reader does.
// readLines reads the JSON lines files of a dataset in name order, each
// line an object.
func readLines(t *testing.T, dir string) []map[string]json.RawMessage {
	t.Helper()
	var out []map[string]json.RawMessage
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if line == "" {
				continue
			}
			var row map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out = append(out, row)
		}
	}
	return out
}

// canonicalJSON re-encodes JSON with its objects' members sorted, so that
// two encodings of the same value compare equal.
func canonicalJSON(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// concat joins tables of one schema into one, chunks and all.
func concat(t *testing.T, tables []arrow.Table) arrow.Table {
	t.Helper()
	if len(tables) == 0 {
		t.Fatal("no files")
	}
	schema := tables[0].Schema()
	cols := make([]arrow.Column, schema.NumFields())
	for i := range cols {
		var chunks []arrow.Array
		for _, tbl := range tables {
			chunks = append(chunks, tbl.Column(i).Data().Chunks()...)
		}
		ch := arrow.NewChunked(schema.Field(i).Type, chunks)
		cols[i] = *arrow.NewColumn(schema.Field(i), ch)
	}
	return array.NewTable(schema, cols, -1)
}

// sameRows compares two tables column by column: the types, and the
// values as Arrow renders them as JSON, so that dictionaries with other
// orders, or the children of null structs, do not count.
func sameRows(t *testing.T, what string, want, got arrow.Table) {
	t.Helper()
	if want.NumRows() != got.NumRows() || want.NumCols() != got.NumCols() {
		t.Errorf("%s: %d rows, %d columns; want %d, %d", what, got.NumRows(), got.NumCols(), want.NumRows(), want.NumCols())
		return
	}
	for i := range int(want.NumCols()) {
		name := want.Schema().Field(i).Name
		w, g := want.Column(i), got.Column(i)
		if !arrow.TypeEqual(w.DataType(), g.DataType()) {
			t.Errorf("%s: column %s is %s, want %s", what, name, g.DataType(), w.DataType())
			continue
		}
		if wv, gv := values(t, w.Data()), values(t, g.Data()); !slices.Equal(wv, gv) {
			t.Errorf("%s: column %s differs:\n got %v\nwant %v", what, name, gv, wv)
		}
	}
}

func values(t *testing.T, c *arrow.Chunked) []string {
	var out []string
	for _, ch := range c.Chunks() {
		for i := range ch.Len() {
			b, err := json.Marshal(ch.GetOneForMarshal(i))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
	}
	return out
}

// TestFormatsAgree exports the same savepoint as Parquet, Arrow IPC and
// JSON lines, with files of two rows, and reads every dataset back: the
// rows and their Arrow types are the same in Parquet and Arrow, and the
// JSON lines hold the same rows, every value written as dump writes it.
func TestFormatsAgree(t *testing.T) {
	sp := typesSavepoint(t)
	now := int64(testNow)
	o := export.Options{Now: &now, MaxRowsPerFile: 2}
	o.Format = export.Parquet
	pq, s := exportTo(t, sp, o)
	o.Format = export.Arrow
	ar, _ := exportTo(t, sp, o)
	o.Format = export.JSONL
	js, _ := exportTo(t, sp, o)
	for _, d := range s.Datasets {
		want := readParquet(t, filepath.Join(pq, d.Dir))
		sameRows(t, d.Dir+" arrow", want, readIPC(t, filepath.Join(ar, d.Dir)))
		if lines := readLines(t, filepath.Join(js, d.Dir)); int64(len(lines)) != want.NumRows() {
			t.Errorf("%s jsonl: %d rows, want %d", d.Dir, len(lines), want.NumRows())
		}
	}
	r := openReader(t, sp)
	m := r.Metadata()
	for _, ref := range m.Refs(0) {
		ks := m.KeyedState(ref)
		if ks == nil {
			continue
		}
		dec, err := savepoint.NewDecoder(&m.Operators[0], ks)
		if err != nil {
			t.Fatal(err)
		}
		render := jsonvalue.For(ks.Value)
		lines := readLines(t, filepath.Join(js, "types", ks.Name))
		entries := sptest.EntriesOf(t, r, ref)
		if len(lines) != len(entries) {
			t.Fatalf("%s: %d lines, %d entries", ks.Name, len(lines), len(entries))
		}
		for i := range entries {
			d, err := dec.Decode(&entries[i])
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(render(d.Value))
			if err != nil {
				t.Fatal(err)
			}
			if got := canonicalJSON(t, lines[i]["value"]); got != canonicalJSON(t, want) {
				t.Errorf("%s entry %d: JSON lines value %s, dump's %s", ks.Name, i, got, want)
			}
		}
	}
	// The decimal of 40 digits that DuckDB cannot read is whole in Arrow.
	tbl := readParquet(t, filepath.Join(pq, "types/everything"))
	value := tbl.Column(2).Data().Chunk(0).(*array.Struct)
	idx, _ := value.DataType().(*arrow.StructType).FieldIdx("big")
	bigs := value.Field(idx).(*array.Decimal256)
	keys := tbl.Column(1).Data().Chunk(0).(*array.String)
	want := map[string]decimal256.Num{
		"full":   decimal256.FromBigInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(36), nil)),
		"sparse": decimal256.FromI64(-1),
	}
	for i := range keys.Len() {
		if got := bigs.Value(i); got != want[keys.Value(i)] {
			t.Errorf("%s: big is %v unscaled, want %v", keys.Value(i), got.BigInt(), want[keys.Value(i)].BigInt())
		}
	}
}

// TestMetadata checks what every Parquet file records about its rows.
func TestMetadata(t *testing.T) {
	now := int64(testNow)
	out, _ := exportTo(t, typesSavepoint(t), export.Options{Now: &now})
	r, err := file.OpenParquetFile(filepath.Join(out, "types/counts/part-00000.parquet"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	kv := r.MetaData().KeyValueMetadata()
	for k, want := range map[string]string{
		"stateproc.savepoint_id": "7",
		"stateproc.operator":     "types",
		"stateproc.state":        "counts",
		"stateproc.kind":         "map",
		"stateproc.now":          "1700000000000",
		"stateproc.serializers":  `{"key":{"kind":"string"},"mapKey":{"kind":"string"},"namespace":{"kind":"void"},"ttlMillis":604800000,"value":{"kind":"int64"}}`,
	} {
		if got := kv.FindValue(k); got == nil || *got != want {
			t.Errorf("%s = %v, want %s", k, got, want)
		}
	}
	if kv.FindValue("ARROW:schema") == nil {
		t.Error("no stored Arrow schema")
	}
}

// Times outside the years 0000 to 9999, which RFC 3339 cannot write, go
// into JSON lines as integers in the column's unit, which bootstrap reads:
// a timer at Long.MAX_VALUE (Flink's global windows) or Long.MIN_VALUE+10
// (Flink's own test savepoints), a timestamp value as far out. Times in
// range stay RFC 3339.
func TestJSONLinesTimesOutsideRFC3339(t *testing.T) {
	str := snap(serializers.KindString)
	b := newBuilder(savepoint.Operator{
		UID: "far", Name: "Far", Parallelism: 1, MaxParallelism: 128, KeyHash: keygroup.Murmur3, Key: str,
		States: []savepoint.KeyedState{{Name: "seen", Kind: savepoint.Value, Namespace: void, Value: snap(serializers.KindTimestamp)}},
		Timers: []savepoint.TimerService{{Name: "fire", Namespace: void}},
	})
	b.add(0, 0, savepoint.Entry{Key: []byte("a"), Value: i64(math.MaxInt64)})
	b.add(0, 0, savepoint.Entry{Key: []byte("b"), Value: i64(testNow)})
	b.add(0, 0, savepoint.Entry{Key: []byte("c"), Value: i64(-62167219200001)}) // a millisecond before year 0
	b.add(0, 1, savepoint.Entry{Key: []byte("a"), Timestamp: math.MinInt64 + 10})
	b.add(0, 1, savepoint.Entry{Key: []byte("b"), Timestamp: testNow})
	b.add(0, 1, savepoint.Entry{Key: []byte("c"), Timestamp: math.MaxInt64})
	out, _ := exportTo(t, b.write(t), export.Options{Format: export.JSONL})
	for _, c := range []struct {
		dir, column string
		want        map[string]string
	}{
		{"far/seen", "value", map[string]string{`"a"`: "9223372036854775807", `"b"`: `"` + time.UnixMilli(testNow).UTC().Format(time.RFC3339) + `"`, `"c"`: "-62167219200001"}},
		{"far/fire", "timestamp", map[string]string{`"a"`: "-9223372036854775798", `"b"`: `"` + time.UnixMilli(testNow).UTC().Format(time.RFC3339) + `"`, `"c"`: "9223372036854775807"}},
	} {
		rows := readLines(t, filepath.Join(out, c.dir))
		if len(rows) != len(c.want) {
			t.Fatalf("%s: %d rows", c.dir, len(rows))
		}
		for _, row := range rows {
			if got, want := string(row[c.column]), c.want[string(row["key"])]; got != want {
				t.Errorf("%s: key %s: %s %s, want %s", c.dir, row["key"], c.column, got, want)
			}
		}
	}
}
