package export_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// builder collects the entries of a savepoint by state and writes it with
// sptest.Write.
type builder struct {
	meta    *savepoint.Metadata
	entries map[savepoint.StateRef][]savepoint.Entry
}

func newBuilder(ops ...savepoint.Operator) *builder {
	return &builder{meta: &savepoint.Metadata{ID: 7, CreatedAt: testNow, Operators: ops}, entries: map[savepoint.StateRef][]savepoint.Entry{}}
}

// add adds an entry of state (or timer service) n of operator op, counting
// its states and then its timer services.
func (b *builder) add(op, n int, e savepoint.Entry) {
	ref := b.meta.Refs(op)[n]
	b.entries[ref] = append(b.entries[ref], e)
}

func (b *builder) write(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sp")
	if err := sptest.Write(dir, b.meta, b.entries, snapshotfmt.Options{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// testNow is the savepoints' creation time: 2023-11-14T22:13:20Z.
const testNow = 1_700_000_000_000

func snap(k serializers.Kind, args ...serializers.Snapshot) serializers.Snapshot {
	return serializers.Snapshot{Kind: k, Args: args}
}

func avroSnap(schema string) serializers.Snapshot {
	return serializers.Snapshot{Kind: serializers.KindAvro, Schema: schema}
}

var void = snap(serializers.KindVoid)

func i64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func i32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

func withTTL(lastModified int64, v []byte) []byte { return append(i64(lastModified), v...) }

// encode encodes v with the serializer that s restores: the same code the
// engine writes savepoints with.
func encode(t testing.TB, s serializers.Snapshot, v any) []byte {
	t.Helper()
	ser, err := serializers.Restore(s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ser.AppendAny(nil, v)
	if err != nil {
		t.Fatalf("encoding %v as %s: %v", v, s, err)
	}
	return b
}

// exportTo exports the savepoint at sp into a new directory and returns it.
func exportTo(t testing.TB, sp string, o export.Options) (string, *export.Summary) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	s, err := runExport(sp, out, o)
	if err != nil {
		t.Fatal(err)
	}
	return out, s
}

// runExport does what the CLI does: stage, run, publish or abort.
func runExport(sp, out string, o export.Options) (*export.Summary, error) {
	ctx := context.Background()
	r, err := snapshotfmt.Open(ctx, storage.LocalDir(sp))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	staging, err := storage.Stage(out, false)
	if err != nil {
		return nil, err
	}
	s, err := export.Run(ctx, r, staging, o)
	if err != nil {
		staging.Abort()
		return nil, err
	}
	return s, staging.Publish(ctx)
}

// duck is an in-memory DuckDB that reads the datasets under dir.
type duck struct {
	t   testing.TB
	db  *sql.DB
	dir string
}

func openDuck(t testing.TB, dir string) *duck {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return &duck{t: t, db: db, dir: dir}
}

// expand replaces each {uid/state} in query with read_parquet of that
// dataset's files ({uid/state:json} for JSON lines).
func (d *duck) expand(query string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(query, '{')
		if i < 0 {
			b.WriteString(query)
			return b.String()
		}
		j := strings.IndexByte(query[i:], '}')
		ds := query[i+1 : i+j]
		b.WriteString(query[:i])
		if name, ok := strings.CutSuffix(ds, ":json"); ok {
			fmt.Fprintf(&b, "read_json('%s')", filepath.Join(d.dir, name, "*.jsonl"))
		} else {
			fmt.Fprintf(&b, "read_parquet('%s')", filepath.Join(d.dir, ds, "*.parquet"))
		}
		query = query[i+j+1:]
	}
}

// rows runs query and returns its rows, each value as text (Go's, for
// what DuckDB does not return as a string: cast in SQL to get DuckDB's),
// NULL as "NULL".
func (d *duck) rows(query string) [][]string {
	d.t.Helper()
	q := d.expand(query)
	rows, err := d.db.Query(q)
	if err != nil {
		d.t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		d.t.Fatal(err)
	}
	var out [][]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			d.t.Fatalf("%s: %v", q, err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			switch v := v.(type) {
			case nil:
				row[i] = "NULL"
			case []byte:
				row[i] = string(v)
			default:
				row[i] = fmt.Sprint(v)
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		d.t.Fatalf("%s: %v", q, err)
	}
	return out
}

// one runs a query of one row and one column.
func (d *duck) one(query string) string {
	d.t.Helper()
	rows := d.rows(query)
	if len(rows) != 1 || len(rows[0]) != 1 {
		d.t.Fatalf("%s: want one value, got %v", query, rows)
	}
	return rows[0][0]
}

// describe returns the columns of a dataset as "name TYPE" lines.
func (d *duck) describe(ds string) []string {
	d.t.Helper()
	var out []string
	for _, r := range d.rows("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {" + ds + "})") {
		out = append(out, r[0]+" "+r[1])
	}
	return out
}

func fileNames(t testing.TB, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

func itoa(n int) string { return strconv.Itoa(n) }

func atoi(t testing.TB, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
