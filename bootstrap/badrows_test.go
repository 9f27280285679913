package bootstrap_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/stateproc/stateproc/bootstrap"
	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
)

const profile = `{"type":"record","name":"Profile","fields":[{"name":"name","type":"string"},{"name":"age","type":"int"},
 {"name":"tier","type":{"type":"enum","name":"Tier","symbols":["GOLD","SILVER"]}}]}`

// accountsJob is a small job to load bad rows into: accounts keyed by an
// int64, a value, an Avro record, a map, a list and timers; a source with
// operator state and broadcast state.
func accountsJob() savepoint.Manifest {
	return savepoint.NewManifest("accounts", []savepoint.Operator{
		{UID: "acct", Name: "Accounts", Parallelism: 2, MaxParallelism: 128, KeyHash: keygroup.Murmur3, Key: i64,
			States: []savepoint.KeyedState{
				{Name: "balance", Kind: savepoint.Value, Namespace: void, Value: i64},
				{Name: "profile", Kind: savepoint.Value, Namespace: void, Value: avroSnap(profile)},
				{Name: "tags", Kind: savepoint.Map, Namespace: void, MapKey: str, Value: str},
				{Name: "log", Kind: savepoint.List, Namespace: void, Value: str},
			},
			Timers: []savepoint.TimerService{{Name: "expiry", Namespace: void}}},
		{UID: "src", Name: "Source", Parallelism: 2, MaxParallelism: 128,
			OperatorStates:  []savepoint.OperatorState{{Name: "offsets", Distribution: savepoint.EvenSplit, Element: i64}},
			BroadcastStates: []savepoint.BroadcastState{{Name: "rules", Key: str, Value: str}}},
	})
}

// writeFiles writes files (name → content) under a new datasets directory.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "datasets")
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// duckParquet writes the result of query to a Parquet file under dir.
func duckParquet(t *testing.T, dir, name, query string) {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet)", query, p)); err != nil {
		t.Fatal(err)
	}
}

// badLoad loads dir into a new target, expects it to fail with bad rows,
// and checks that nothing was left beside the target.
func badLoad(t *testing.T, dir string) *bootstrap.BadRows {
	t.Helper()
	parent := t.TempDir()
	out := filepath.Join(parent, "out")
	_, err := load(t, accountsJob(), dir, bootstrap.Options{Out: out, Now: testNow})
	var bad *bootstrap.BadRows
	if !errors.As(err, &bad) || !errors.Is(err, bootstrap.ErrBadData) {
		t.Fatalf("load = %v, want bad rows", err)
	}
	left, _ := os.ReadDir(parent)
	if len(left) != 0 {
		t.Fatalf("a failed bootstrap left %v beside its target", left)
	}
	return bad
}

// wantRow checks one reported row.
func wantRow(t *testing.T, r *bootstrap.RowError, file string, row int64, column, msg string) {
	t.Helper()
	if !strings.HasSuffix(r.Source, file) || r.Row != row || r.Column != column || !strings.Contains(r.Err.Error(), msg) {
		t.Errorf("bad row %s: row %d: column %s: %v\nwant    ...%s: row %d: column %s: ...%s...", r.Source, r.Row, r.Column, r.Err, file, row, column, msg)
	}
}

func TestBadRows(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		// parquet files, by name, from DuckDB queries
		parquet map[string]string
		want    []string // file, row, column, message: one per bad row
	}{
		{
			name:  "a key that does not match the key type",
			files: map[string]string{"acct/balance/a.jsonl": `{"key": 1, "value": 10}` + "\n" + `{"key": "two", "value": 20}` + "\n"},
			want:  []string{"acct/balance/a.jsonl", "2", "key", `want an integer, got a string`},
		},
		{
			name:    "a null key in Parquet",
			parquet: map[string]string{"acct/balance/a.parquet": "SELECT * FROM (VALUES (1::BIGINT, 10::BIGINT), (NULL, 20)) t(key, value)"},
			want:    []string{"acct/balance/a.parquet", "2", "key", "null, and int64 cannot be null"},
		},
		{
			name: "a value that does not match the schema",
			files: map[string]string{"acct/profile/a.jsonl": `{"key": 1, "value": {"name": "ann", "age": 41, "tier": "GOLD"}}
{"key": 2, "value": {"name": "bob", "age": "old", "tier": "GOLD"}}
{"key": 3, "value": {"name": "cy", "age": 12}}
{"key": 4, "value": {"name": "dee", "age": 9, "tier": "GOLD", "pet": "cat"}}
`},
			want: []string{
				"acct/profile/a.jsonl", "2", "value.age", "want an integer, got a string",
				"acct/profile/a.jsonl", "3", "value", "no member tier",
				"acct/profile/a.jsonl", "4", "value", "a member pet",
			},
		},
		{
			name:    "an enum symbol the schema lacks, in Parquet",
			parquet: map[string]string{"acct/profile/a.parquet": "SELECT 5::BIGINT AS key, {'name': 'eve', 'age': 30, 'tier': 'PLATINUM'} AS value"},
			want:    []string{"acct/profile/a.parquet", "1", "value.tier", `"PLATINUM" is not a symbol of enum Tier`},
		},
		{
			name:    "an int out of range, in Parquet",
			parquet: map[string]string{"acct/profile/a.parquet": "SELECT 5::BIGINT AS key, {'name': 'eve', 'age': 3000000000::BIGINT, 'tier': 'GOLD'} AS value"},
			want:    []string{"acct/profile/a.parquet", "1", "value.age", "3000000000 is out of the range of int"},
		},
		{
			name: "a duplicate key for a value state, across files",
			files: map[string]string{
				"acct/balance/part-0.jsonl": `{"key": 7, "value": 1}` + "\n" + `{"key": 8, "value": 1}` + "\n",
				"acct/balance/part-1.jsonl": `{"key": 9, "value": 1}` + "\n" + `{"key": 7, "value": 2}` + "\n",
			},
			want: []string{"acct/balance/part-1.jsonl", "2", "key", "a second value for key 7: " + "DIR/acct/balance/part-0.jsonl row 1 has the same"},
		},
		{
			name:  "a duplicate map key",
			files: map[string]string{"acct/tags/a.jsonl": `{"key": 7, "map_key": "x", "value": "1"}` + "\n" + `{"key": 7, "map_key": "x", "value": "2"}` + "\n"},
			want:  []string{"acct/tags/a.jsonl", "2", "map_key", `a second entry for map key "x" of key 7`},
		},
		{
			name:  "a duplicate list index",
			files: map[string]string{"acct/log/a.jsonl": `{"key": 7, "index": 0, "value": "a"}` + "\n" + `{"key": 7, "index": 0, "value": "b"}` + "\n"},
			want:  []string{"acct/log/a.jsonl", "2", "index", "a second element at index 0 for key 7"},
		},
		{
			name:  "a duplicate timer",
			files: map[string]string{"acct/expiry/a.jsonl": `{"key": 7, "timestamp": "2023-11-14T22:13:20Z"}` + "\n" + `{"key": 7, "timestamp": 1700000000000}` + "\n"},
			want:  []string{"acct/expiry/a.jsonl", "2", "timestamp", "a second timer at 2023-11-14T22:13:20Z for key 7"},
		},
		{
			name:  "a duplicate broadcast key",
			files: map[string]string{"src/rules/a.jsonl": `{"key": "eu", "value": "1"}` + "\n" + `{"key": "eu", "value": "2"}` + "\n"},
			want:  []string{"src/rules/a.jsonl", "2", "key", `a second value for key "eu"`},
		},
		{
			name:  "a duplicate operator state index",
			files: map[string]string{"src/offsets/a.jsonl": `{"subtask": 1, "index": 0, "value": 5}` + "\n" + `{"subtask": 1, "index": 0, "value": 6}` + "\n"},
			want:  []string{"src/offsets/a.jsonl", "2", "index", "a second element at index 0 of subtask 1"},
		},
		{
			name:  "a negative index",
			files: map[string]string{"acct/log/a.jsonl": `{"key": 7, "index": -1, "value": "a"}` + "\n"},
			want:  []string{"acct/log/a.jsonl", "1", "index", "index -1 is out of range"},
		},
		{
			name:  "a timestamp finer than milliseconds",
			files: map[string]string{"acct/expiry/a.jsonl": `{"key": 7, "timestamp": "2023-11-14T22:13:20.0001Z"}` + "\n"},
			want:  []string{"acct/expiry/a.jsonl", "1", "timestamp", "not a whole number of milliseconds"},
		},
		{
			name:  "an unknown column",
			files: map[string]string{"acct/balance/a.jsonl": `{"key": 7, "vaule": 1}` + "\n"},
			want:  []string{"acct/balance/a.jsonl", "1", "vaule", "no such column in a dataset of value state acct/balance"},
		},
		{
			name:  "a line that is not JSON, and one that is not UTF-8",
			files: map[string]string{"acct/balance/a.jsonl": "{\"key\": 7,\n" + "{\"key\": 8, \"value\": \"\xff\"}\n"},
			want: []string{
				"acct/balance/a.jsonl", "1", "", "not a JSON object",
				"acct/balance/a.jsonl", "2", "", "not valid UTF-8",
			},
		},
		{
			name:    "a column whose type cannot hold the values",
			parquet: map[string]string{"acct/balance/a.parquet": "SELECT 1::BIGINT AS key, 'ten' AS value"},
			want:    []string{"acct/balance/a.parquet", "0", "value", "a column of utf8 cannot hold int64 values"},
		},
		{
			name:    "a missing column",
			parquet: map[string]string{"acct/tags/a.parquet": "SELECT 1::BIGINT AS key, 'v' AS value"},
			want:    []string{"acct/tags/a.parquet", "0", "map_key", "the column is missing"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writeFiles(t, c.files)
			for name, q := range c.parquet {
				duckParquet(t, dir, name, q)
			}
			bad := badLoad(t, dir)
			if len(bad.Rows) != len(c.want)/4 || bad.More != 0 {
				t.Fatalf("%d bad rows (%d more), want %d: %v", len(bad.Rows), bad.More, len(c.want)/4, bad)
			}
			for i, r := range bad.Rows {
				w := c.want[4*i : 4*i+4]
				var row int64
				fmt.Sscan(w[1], &row)
				wantRow(t, r, w[0], row, w[2], strings.ReplaceAll(w[3], "DIR", dir))
			}
		})
	}
}

// At most MaxBadRows are reported, with a count of the others found.
func TestBadRowsLimit(t *testing.T) {
	var lines strings.Builder
	for i := range 30 {
		fmt.Fprintf(&lines, "{\"key\": %d, \"value\": \"x\"}\n", i)
	}
	dir := writeFiles(t, map[string]string{"acct/balance/a.jsonl": lines.String()})
	_, err := load(t, accountsJob(), dir, bootstrap.Options{Out: filepath.Join(t.TempDir(), "out"), MaxBadRows: 5})
	var bad *bootstrap.BadRows
	if !errors.As(err, &bad) || len(bad.Rows) != 5 || bad.More == 0 {
		t.Fatalf("err = %v", err)
	}
	for i, r := range bad.Rows {
		wantRow(t, r, "acct/balance/a.jsonl", int64(i+1), "value", "want an integer, got a string")
	}
	if !strings.HasPrefix(err.Error(), fmt.Sprintf("%d bad rows or more, the first 5: ", 5+bad.More)) {
		t.Errorf("message: %v", err)
	}
}

// Datasets that match no state of the job, and files outside the layout,
// are refused before anything is read; hidden files are left out.
func TestDatasetLayout(t *testing.T) {
	for _, c := range []struct {
		files map[string]string
		want  string
	}{
		{map[string]string{"acct/balanse/a.jsonl": "{}\n"}, "1 datasets under DIR match no state of the job: acct/balanse"},
		{map[string]string{"nope/balance/a.jsonl": "{}\n"}, "match no state of the job: nope/balance"},
		{map[string]string{"acct/a.jsonl": "{}\n"}, "DIR/acct/a.jsonl lies outside the layout of datasets"},
	} {
		dir := writeFiles(t, c.files)
		_, err := load(t, accountsJob(), dir, bootstrap.Options{Out: filepath.Join(t.TempDir(), "out")})
		if !errors.Is(err, rewrite.ErrRefused) || !strings.Contains(err.Error(), strings.ReplaceAll(c.want, "DIR", dir)) {
			t.Errorf("%v: err = %v, want one saying %q", c.files, err, c.want)
		}
	}
	dir := writeFiles(t, map[string]string{
		"acct/balance/a.jsonl": `{"key": 1, "value": 2}` + "\n", "acct/balance/_SUCCESS": "", "acct/balance/.a.jsonl.crc": "x", "_meta/x": "y",
	})
	sum, err := load(t, accountsJob(), dir, bootstrap.Options{Out: filepath.Join(t.TempDir(), "out")})
	if err != nil || sum.Rows != 1 {
		t.Fatalf("with hidden files: %v, %+v", err, sum)
	}
	dir = writeFiles(t, map[string]string{"acct/balance/a.csv": "key,value\n"})
	if _, err := load(t, accountsJob(), dir, bootstrap.Options{Out: filepath.Join(t.TempDir(), "out")}); !errors.Is(err, bootstrap.ErrBadData) || !strings.Contains(err.Error(), "not a dataset file") {
		t.Errorf("a CSV file: %v", err)
	}
}

// A file that says it holds another state than its directory's is refused.
func TestMetadataMismatch(t *testing.T) {
	ctx := context.Background()
	sp := filepath.Join(t.TempDir(), "sp")
	b, err := bootstrap.New(accountsJob(), bootstrap.Options{Out: sp, Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := bootstrap.Values(ctx, b, "acct", "balance", func(yield func(int64, int64) bool) { yield(1, 2) }); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	exp := exportTo(t, sp, export.Options{})
	if err := os.Rename(filepath.Join(exp, "acct", "balance"), filepath.Join(exp, "acct", "tags2")); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(exp, "acct", "tags"))
	if err := os.Rename(filepath.Join(exp, "acct", "tags2"), filepath.Join(exp, "acct", "tags")); err != nil {
		t.Fatal(err)
	}
	_, err = load(t, accountsJob(), exp, bootstrap.Options{Out: filepath.Join(t.TempDir(), "out")})
	if !errors.Is(err, bootstrap.ErrBadData) || !strings.Contains(err.Error(), `the file says it holds state "balance", its directory is that of state "tags" of operator "acct", a map`) {
		t.Errorf("err = %v", err)
	}
}
