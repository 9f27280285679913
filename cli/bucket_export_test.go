package cli_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/stateproc/stateproc/cli"
	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/storage"
)

// export --out into a bucket writes the same Parquet bytes as into a
// local directory, each part under its name with its content's digits,
// and _SUCCESS last, listing exactly the parts; DuckDB reads the
// downloaded parts with the rows of every dataset. A finished export is
// refused without --force and replaced with it.
func TestExportToABucket(t *testing.T) {
	f := newBucketFixture(t)
	local := filepath.Join(f.dir, "export-disk")
	if _, stderr, code := runCLI(t, "export", f.sp, "--out", local); code != 0 {
		t.Fatalf("export to disk: exit %d: %s", code, stderr)
	}
	stdout, stderr, code := runCLI(t, "export", f.url("in/sp"), "--out", f.url("exported"), "-o", "json")
	if code != 0 {
		t.Fatalf("export to the bucket: exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "endpoint=") {
		t.Errorf("the output shows the URL's parameters: %s", stdout)
	}
	objs := f.objects(t, "exported")
	var marker export.MarkerContent
	if err := json.Unmarshal(objs[export.Marker], &marker); err != nil {
		t.Fatalf("%s: %v", export.Marker, err)
	}
	want := walkFiles(t, local)
	if len(want) == 0 || len(marker.Files) != len(want) || len(objs) != len(want)+1 {
		t.Fatalf("%d parts on disk, %d listed in %s, %d objects in the bucket", len(want), len(marker.Files), export.Marker, len(objs))
	}
	listed := map[string]bool{}
	for _, mf := range marker.Files {
		listed[mf.Name] = true
		if int64(len(objs[mf.Name])) != mf.Bytes {
			t.Errorf("%s: %d bytes in the bucket, %d listed", mf.Name, len(objs[mf.Name]), mf.Bytes)
		}
	}
	for name, b := range want {
		ext := path.Ext(name)
		named := storage.NameByContent(strings.TrimSuffix(name, ext), storage.ContentSum(b), ext)
		if !listed[named] || !bytes.Equal(objs[named], b) {
			t.Errorf("%s of the local export is not %s in the bucket with the same bytes", name, named)
		}
	}

	down := filepath.Join(f.dir, "downloaded")
	for _, mf := range marker.Files {
		p := filepath.Join(down, filepath.FromSlash(mf.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, objs[mf.Name], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows int64
	for _, ds := range marker.Summary.Datasets {
		var n int64
		q := fmt.Sprintf("SELECT count(*) FROM read_parquet('%s')", filepath.Join(down, filepath.FromSlash(ds.Dir), "*.parquet"))
		if err := db.QueryRow(q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", ds.Dir, err)
		}
		if n != ds.Rows {
			t.Errorf("%s: DuckDB reads %d rows, the export wrote %d", ds.Dir, n, ds.Rows)
		}
		rows += n
	}
	if rows == 0 || rows != marker.Summary.Rows {
		t.Errorf("DuckDB reads %d rows in all, the export wrote %d", rows, marker.Summary.Rows)
	}

	if _, stderr, code := runCLI(t, "export", f.url("in/sp"), "--out", f.url("exported")); code != cli.ExitUsage || !strings.Contains(stderr, export.Marker) {
		t.Errorf("export onto a finished one: exit %d, %q; want %d naming %s", code, stderr, cli.ExitUsage, export.Marker)
	}
	if _, stderr, code := runCLI(t, "export", f.url("in/sp"), "--out", f.url("exported"), "--force", "--format", "jsonl"); code != 0 {
		t.Fatalf("export --force: exit %d: %s", code, stderr)
	}
	again := f.objects(t, "exported")
	var replaced export.MarkerContent
	if err := json.Unmarshal(again[export.Marker], &replaced); err != nil {
		t.Fatal(err)
	}
	if len(again) != len(replaced.Files)+1 {
		t.Errorf("after --force %d objects, %d listed: the replaced export's parts are left", len(again), len(replaced.Files))
	}
	for _, mf := range replaced.Files {
		if !strings.HasSuffix(mf.Name, ".jsonl") {
			t.Errorf("after --force, %s is no JSON lines part", mf.Name)
		}
	}
}
