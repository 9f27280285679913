package export_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
	"github.com/stateproc/stateproc/ttl"
)

// mapOperator has flat map states of string keys and map keys.
func mapOperator(maxParallelism int, states ...string) savepoint.Operator {
	op := savepoint.Operator{UID: "op", Name: "Op", Parallelism: 1, MaxParallelism: maxParallelism, KeyHash: keygroup.Murmur3, Key: snap(serializers.KindString)}
	for _, s := range states {
		op.States = append(op.States, savepoint.KeyedState{Name: s, Kind: savepoint.Map, Namespace: void, MapKey: snap(serializers.KindString), Value: snap(serializers.KindInt64)})
	}
	return op
}

// chunkEncodings lists the encodings of column col in each row group of
// the one file of dataset ds under out.
func chunkEncodings(d *duck, out, ds, col string) []string {
	d.t.Helper()
	var encs []string
	for _, r := range d.rows("SELECT encodings FROM parquet_metadata('" + filepath.Join(out, ds, "part-00000.parquet") +
		"') WHERE path_in_schema = '" + col + "' ORDER BY row_group_id") {
		encs = append(encs, r[0])
	}
	return encs
}

// TestMapKeyDictionary: a flat map state's map_key has a dictionary of
// its distinct values where they are few, in every row group; none where
// the first row group has many; and a row group of many in a file of few
// falls back to plain values. DuckDB reads the rows that the export
// through Arrow builders writes, in order, and two exports are the same
// bytes.
func TestMapKeyDictionary(t *testing.T) {
	b := newBuilder(mapOperator(1, "few", "many", "mixed"))
	for u := range 800 {
		for c := range 5 {
			b.add(0, 0, savepoint.Entry{Key: fmt.Appendf(nil, "user-%04d", u), MapKey: fmt.Appendf(nil, "cat-%d", c), Value: i64(int64(u * c))})
			b.add(0, 1, savepoint.Entry{Key: fmt.Appendf(nil, "user-%04d", u), MapKey: fmt.Appendf(nil, "item-%d-%d", u, c), Value: i64(int64(u + c))})
			// The 400 users of "a" fill the first row group of 2,000 rows
			// with 5 map keys, those of "b" the second with 2,000.
			if u < 400 {
				b.add(0, 2, savepoint.Entry{Key: fmt.Appendf(nil, "a-%04d", u), MapKey: fmt.Appendf(nil, "cat-%d", c), Value: i64(int64(c))})
			} else {
				b.add(0, 2, savepoint.Entry{Key: fmt.Appendf(nil, "b-%04d", u), MapKey: fmt.Appendf(nil, "item-%d-%d", u, c), Value: i64(int64(c))})
			}
		}
	}
	sp := b.write(t)
	o := export.Options{RowGroupRows: 2000}
	out, _ := exportTo(t, sp, o)
	again, _ := exportTo(t, sp, export.Options{RowGroupRows: 2000, Workers: 1})
	built, _ := exportTo(t, sp, export.WithBuilders(o))
	d := openDuck(t, "")

	for ds, want := range map[string][]string{
		"op/few":   {"RLE_DICTIONARY", "RLE_DICTIONARY"},
		"op/many":  {"DELTA_BYTE_ARRAY", "DELTA_BYTE_ARRAY"},
		"op/mixed": {"RLE_DICTIONARY", "PLAIN"},
	} {
		encs := chunkEncodings(d, out, ds, "map_key")
		if len(encs) != len(want) {
			t.Fatalf("%s: map_key chunks %v, want %d", ds, encs, len(want))
		}
		for i, e := range encs {
			if !strings.Contains(e, want[i]) || want[i] != "RLE_DICTIONARY" && strings.Contains(e, "RLE_DICTIONARY") {
				t.Errorf("%s: row group %d: map_key encodings %s, want %s", ds, i, e, want[i])
			}
		}
		q := "SELECT key, map_key, value FROM read_parquet('%s') ORDER BY file_row_number"
		got, wantRows := d.rows(fmt.Sprintf(q, filepath.Join(out, ds, "*.parquet"))), d.rows(fmt.Sprintf(q, filepath.Join(built, ds, "*.parquet")))
		if len(got) != 4000 || !slices.EqualFunc(got, wantRows, slices.Equal) {
			t.Errorf("%s: %d rows, through builders %d, or they differ", ds, len(got), len(wantRows))
		}
		p := filepath.Join(ds, "part-00000.parquet")
		if a, b := readFile(t, filepath.Join(out, p)), readFile(t, filepath.Join(again, p)); !bytes.Equal(a, b) {
			t.Errorf("%s: two exports differ", p)
		}
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// handSource gives the entries of one state, key group by key group, as
// they are, in place of what the savepoint holds: entries that a reader
// of the format would reject, or that only another layout's order gives.
type handSource struct {
	savepoint.Source
	ref     savepoint.StateRef
	entries map[int][]savepoint.Entry
}

func (s *handSource) Segments(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) ([]savepoint.Segment, error) {
	if ref != s.ref {
		return s.Source.Segments(ctx, ref, kgs)
	}
	var out []savepoint.Segment
	for kg := kgs.Start; kg <= kgs.End; kg++ {
		if n := len(s.entries[kg]); n > 0 {
			out = append(out, savepoint.Segment{Ref: ref, Stats: savepoint.Stats{KeyGroup: kg, Entries: uint64(n)}})
		}
	}
	return out, nil
}

func (s *handSource) Entries(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) savepoint.EntryIterator {
	if ref != s.ref {
		return s.Source.Entries(ctx, ref, kgs)
	}
	var es []savepoint.Entry
	for kg := kgs.Start; kg <= kgs.End; kg++ {
		es = append(es, s.entries[kg]...)
	}
	return sptest.Iter(es)
}

// exportHand exports state "counts" of mapOperator with the entries given
// by key group, and returns the rows DuckDB reads as "key map_key value"
// and the encodings of the key column.
func exportHand(t *testing.T, entries map[int][]savepoint.Entry) (rows []string, keyEncodings string) {
	t.Helper()
	ctx := context.Background()
	r, err := snapshotfmt.Open(ctx, storage.LocalDir(newBuilder(mapOperator(4, "counts")).write(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src := &handSource{Source: r, ref: r.Metadata().Refs(0)[0], entries: entries}
	out := filepath.Join(t.TempDir(), "out")
	staging, err := storage.Stage(out, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := export.Run(ctx, src, staging, export.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := staging.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	d := openDuck(t, out)
	for _, r := range d.rows("SELECT key || ' ' || map_key || ' ' || value FROM {op/counts} ORDER BY file_row_number") {
		rows = append(rows, r[0])
	}
	return rows, strings.Join(chunkEncodings(d, out, "op/counts", "key"), ";")
}

func mapEntry(key, mapKey string, v int64) savepoint.Entry {
	return savepoint.Entry{Key: []byte(key), MapKey: []byte(mapKey), Value: i64(v)}
}

// TestKeyDictionaryRunsOutOfOrder: where the keys of a key group do not
// ascend, as in a layout that keeps a window's keys together, a key comes
// back after another: its runs cannot be the dictionary as they are, and
// the keys are hashed row by row into one, still a dictionary.
func TestKeyDictionaryRunsOutOfOrder(t *testing.T) {
	rows, enc := exportHand(t, map[int][]savepoint.Entry{
		1: {mapEntry("bob", "a", 1), mapEntry("bob", "b", 2), mapEntry("alice", "a", 3), mapEntry("bob", "c", 4), mapEntry("carol", "a", 5)},
	})
	want := []string{"bob a 1", "bob b 2", "alice a 3", "bob c 4", "carol a 5"}
	if !slices.Equal(rows, want) {
		t.Errorf("rows %q, want %q", rows, want)
	}
	if !strings.Contains(enc, "RLE_DICTIONARY") {
		t.Errorf("key encodings %s, want a dictionary", enc)
	}
}

// TestKeyDictionaryKeyInTwoKeyGroups: a key in runs of two key groups,
// which a corrupt savepoint may hold, would be in the dictionary of runs
// twice; the rows are written as they are, plain.
func TestKeyDictionaryKeyInTwoKeyGroups(t *testing.T) {
	rows, _ := exportHand(t, map[int][]savepoint.Entry{
		1: {mapEntry("alice", "a", 1), mapEntry("bob", "a", 2)},
		2: {mapEntry("alice", "b", 3), mapEntry("carol", "a", 4)},
	})
	want := []string{"alice a 1", "bob a 2", "alice b 3", "carol a 4"}
	if !slices.Equal(rows, want) {
		t.Errorf("rows %q, want %q", rows, want)
	}
}

// TestTimestampsUncompressed: the bit-packed deltas of timestamps are
// stored uncompressed, those of other integers and strings with zstd, and
// nothing with --compression none.
func TestTimestampsUncompressed(t *testing.T) {
	op := mapOperator(1, "counts")
	week := ttl.New(7 * 24 * time.Hour)
	op.States[0].TTL = &week
	b := newBuilder(op)
	for u := range 50 {
		for c := range 4 {
			b.add(0, 0, savepoint.Entry{Key: fmt.Appendf(nil, "user-%02d", u), MapKey: fmt.Appendf(nil, "cat-%d", c), Value: withTTL(testNow-int64(u*c*1000), i64(int64(u+c)))})
		}
	}
	sp := b.write(t)
	for _, o := range []export.Options{{}, {Compression: export.Uncompressed}} {
		out, _ := exportTo(t, sp, o)
		d := openDuck(t, "")
		got := strings.Join(slices.Concat(d.rows("SELECT path_in_schema || ' ' || string_agg(DISTINCT compression, ',') FROM parquet_metadata('"+
			filepath.Join(out, "op/counts/*.parquet")+"') GROUP BY path_in_schema ORDER BY path_in_schema")...), "; ")
		want := "key ZSTD; key_group ZSTD; map_key ZSTD; ttl_last_modified UNCOMPRESSED; value ZSTD"
		if o.Compression == export.Uncompressed {
			want = "key UNCOMPRESSED; key_group UNCOMPRESSED; map_key UNCOMPRESSED; ttl_last_modified UNCOMPRESSED; value UNCOMPRESSED"
		}
		if got != want {
			t.Errorf("%+v: compression %s, want %s", o, got, want)
		}
	}
}
