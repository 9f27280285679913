package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// runQuery runs SQL statements in an in-memory DuckDB, the way the README
// queries an export, and prints the last one's rows as a table.
func runQuery(ctx context.Context, args []string, out io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: exportbench query 'SQL'")
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, args[0])
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	// Column names as DuckDB gives them, not upper-cased.
	t := tablewriter.NewTable(out, tablewriter.WithHeaderAutoFormat(tw.Off))
	header := make([]any, len(cols))
	for i, c := range cols {
		header[i] = c
	}
	t.Header(header...)
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		cells := make([]any, len(cols))
		for i, v := range vals {
			cells[i] = cellText(v)
		}
		if err := t.Append(cells...); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return t.Render()
}

func cellText(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return fmt.Sprintf("%x", v)
	case string:
		return v
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	}
	return strings.TrimSpace(fmt.Sprint(v))
}

// runRows prints each dataset of the export in dir, in name order, with
// the rows DuckDB reads from it and their multiset checksum.
func runRows(ctx context.Context, args []string, out io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: exportbench rows EXPORT")
	}
	files, err := filepath.Glob(filepath.Join(args[0], "*", "*", "*.parquet"))
	if err != nil {
		return err
	}
	var dirs []string
	for _, f := range files {
		if d := filepath.Dir(f); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		return fmt.Errorf("rows: no Parquet datasets under %s", args[0])
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	for _, d := range dirs {
		var n int64
		var sum string
		q := fmt.Sprintf("SELECT count(*), coalesce(sum(hash(t)), 0)::VARCHAR FROM read_parquet('%s') t", filepath.Join(d, "*.parquet"))
		if err := db.QueryRowContext(ctx, q).Scan(&n, &sum); err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
		rel, _ := filepath.Rel(args[0], d)
		fmt.Fprintf(out, "%s\t%d rows\tchecksum %s\n", filepath.ToSlash(rel), n, sum)
	}
	return nil
}
