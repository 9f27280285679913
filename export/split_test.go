package export_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// listSavepoint has a list state whose lists are long enough to be split
// across files: ten users with 1 to 10 elements each.
func listSavepoint(t *testing.T) string {
	b := newBuilder(savepoint.Operator{
		UID: "op", Name: "Op", Parallelism: 1, MaxParallelism: 4, KeyHash: keygroup.Murmur3, Key: snap(serializers.KindString),
		States: []savepoint.KeyedState{{Name: "items", Kind: savepoint.List, Namespace: void, Value: snap(serializers.KindInt64)}},
	})
	for u := range 10 {
		for i := range u + 1 {
			b.add(0, 0, savepoint.Entry{Key: fmt.Appendf(nil, "user-%d", u), Value: i64(int64(100*u + i))})
		}
	}
	return b.write(t)
}

// TestMaxRowsPerFile cuts a list state into files of 7 rows: the files,
// in name order, hold the same rows as one file does, list indexes
// continuing across files, and row groups hold at most RowGroupRows rows.
func TestMaxRowsPerFile(t *testing.T) {
	sp := listSavepoint(t)
	whole, _ := exportTo(t, sp, export.Options{MaxRowsPerFile: -1})
	split, s := exportTo(t, sp, export.Options{MaxRowsPerFile: 7, RowGroupRows: 3})
	if d := s.Datasets[0]; d.Rows != 55 || d.Files != 8 {
		t.Errorf("summary %+v, want 55 rows in 8 files", d)
	}
	files, _ := filepath.Glob(filepath.Join(split, "op/items/*.parquet"))
	for i, f := range files {
		r, err := file.OpenParquetFile(f, false)
		if err != nil {
			t.Fatal(err)
		}
		want := int64(min(7, 55-7*i))
		if got := r.NumRows(); got != want {
			t.Errorf("%s: %d rows, want %d", filepath.Base(f), got, want)
		}
		for g := range r.NumRowGroups() {
			if n := r.MetaData().RowGroup(g).NumRows(); n > 3 {
				t.Errorf("%s: row group of %d rows", filepath.Base(f), n)
			}
		}
		r.Close()
	}
	q := "SELECT key_group, key, index, value FROM read_parquet('%s', filename = true, file_row_number = true) ORDER BY filename, file_row_number"
	a := openDuck(t, whole).rows(fmt.Sprintf(q, filepath.Join(whole, "op/items/*.parquet")))
	b := openDuck(t, split).rows(fmt.Sprintf(q, filepath.Join(split, "op/items/*.parquet")))
	if !slices.EqualFunc(a, b, slices.Equal) {
		t.Errorf("split rows differ from whole:\n%v\n%v", b, a)
	}
	for _, r := range a {
		if want := fmt.Sprint(100*atoi(t, strings.TrimPrefix(r[1], "user-")) + atoi(t, r[2])); r[3] != want {
			t.Errorf("%v: index does not match the element", r)
		}
	}
}

func TestFilters(t *testing.T) {
	sp := typesSavepoint(t)
	// One state.
	out, s := exportTo(t, sp, export.Options{Operator: "types", State: "events"})
	if got := fileNames(t, out); !slices.Equal(got, []string{"types/events/part-00000.parquet"}) {
		t.Errorf("--state: files %v", got)
	}
	if len(s.Datasets) != 1 || s.Datasets[0].Rows != 4 || s.Datasets[0].Kind != "list" {
		t.Errorf("--state: summary %+v", s.Datasets)
	}
	// Key groups: the keyed data of those key groups, no operator or
	// broadcast state.
	kg := keygroup.Of([]byte("alice"), 128)
	out, s = exportTo(t, sp, export.Options{KeyGroups: &keygroup.Range{Start: kg, End: kg}})
	d := openDuck(t, out)
	if got := d.one("SELECT string_agg(DISTINCT key, ',') FROM {types/events}"); got != "alice" {
		t.Errorf("key groups: keys %s", got)
	}
	for _, ds := range s.Datasets {
		if ds.Kind == export.KindOperator || ds.Kind == export.KindBroadcast {
			t.Errorf("key groups: exported %s", ds.Dir)
		}
	}
}

// TestNames: uids and state names become one safe directory name each.
func TestNames(t *testing.T) {
	b := newBuilder(savepoint.Operator{
		UID: "../up/a=b", Name: "Op", Parallelism: 1, MaxParallelism: 128, KeyHash: keygroup.Murmur3, Key: snap(serializers.KindString),
		States: []savepoint.KeyedState{
			{Name: ".hidden", Kind: savepoint.Value, Namespace: void, Value: snap(serializers.KindInt64)},
			{Name: "_meta état", Kind: savepoint.Value, Namespace: void, Value: snap(serializers.KindInt64)},
		},
	})
	b.add(0, 0, savepoint.Entry{Key: []byte("k"), Value: i64(1)})
	out, _ := exportTo(t, b.write(t), export.Options{})
	want := []string{"%2E.%2Fup%2Fa%3Db/%2Ehidden/part-00000.parquet", "%2E.%2Fup%2Fa%3Db/%5Fmeta%20%C3%A9tat/part-00000.parquet"}
	if got := fileNames(t, out); !slices.Equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
}

// countingSource counts the entries an export reads.
type countingSource struct {
	savepoint.Source
	read *atomic.Int64
}

func (c countingSource) Entries(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) savepoint.EntryIterator {
	return countingEntries{c.Source.Entries(ctx, ref, kgs), c.read}
}

type countingEntries struct {
	savepoint.EntryIterator
	read *atomic.Int64
}

func (c countingEntries) Next() bool {
	ok := c.EntryIterator.Next()
	if ok {
		c.read.Add(1)
	}
	return ok
}

// TestOneKeyManyFiles: one key whose list fills many files is read once,
// not once per file up to where each file starts; the files hold the list
// in order with its indexes running on.
func TestOneKeyManyFiles(t *testing.T) {
	const n, perFile = 20_000, 500
	b := newBuilder(savepoint.Operator{
		UID: "op", Name: "Op", Parallelism: 1, MaxParallelism: 4, KeyHash: keygroup.Murmur3, Key: snap(serializers.KindString),
		States: []savepoint.KeyedState{{Name: "items", Kind: savepoint.List, Namespace: void, Value: snap(serializers.KindInt64)}},
	})
	for i := range n {
		b.add(0, 0, savepoint.Entry{Key: []byte("one-key"), Value: i64(int64(i))})
	}
	sp := b.write(t)
	ctx := context.Background()
	r, err := snapshotfmt.Open(ctx, storage.LocalDir(sp))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := filepath.Join(t.TempDir(), "out")
	staging, err := storage.Stage(out, false)
	if err != nil {
		t.Fatal(err)
	}
	var read atomic.Int64
	s, err := export.Run(ctx, countingSource{r, &read}, staging, export.Options{MaxRowsPerFile: perFile, Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := staging.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if d := s.Datasets[0]; d.Rows != n || d.Files != n/perFile {
		t.Fatalf("summary %+v, want %d rows in %d files", d, n, n/perFile)
	}
	if got := read.Load(); got != n {
		t.Errorf("the export read %d entries for %d rows", got, n)
	}
	d := openDuck(t, out)
	got := d.one("SELECT count(*) FILTER (WHERE index = value AND index = file_row_number + " + itoa(perFile) +
		" * CAST(regexp_extract(filename, 'part-(\\d+)', 1) AS INTEGER)) FROM read_parquet('" +
		filepath.Join(out, "op/items/*.parquet") + "', filename = true, file_row_number = true)")
	if got != itoa(n) {
		t.Errorf("%s of %d rows have their list index and their place in the files", got, n)
	}
}

// TestColumnStatistics wants minimum and maximum statistics in every
// column chunk but map_key's, and key's to bound the keys of its row group.
func TestColumnStatistics(t *testing.T) {
	b := newBuilder(savepoint.Operator{
		UID: "op", Name: "Op", Parallelism: 1, MaxParallelism: 4, KeyHash: keygroup.Murmur3, Key: snap(serializers.KindString),
		States: []savepoint.KeyedState{{Name: "counts", Kind: savepoint.Map, Namespace: void, MapKey: snap(serializers.KindString), Value: snap(serializers.KindInt64)}},
	})
	for u := range 6 {
		for c := range 3 {
			b.add(0, 0, savepoint.Entry{Key: fmt.Appendf(nil, "user-%d", u), MapKey: fmt.Appendf(nil, "cat-%d", c), Value: i64(int64(u + c))})
		}
	}
	out, _ := exportTo(t, b.write(t), export.Options{})
	files, _ := filepath.Glob(filepath.Join(out, "op/counts/*.parquet"))
	if len(files) == 0 {
		t.Fatal("no Parquet file for the map state")
	}
	seen := map[string]bool{}
	for _, f := range files {
		r, err := file.OpenParquetFile(f, false)
		if err != nil {
			t.Fatal(err)
		}
		for g := range r.NumRowGroups() {
			rg := r.MetaData().RowGroup(g)
			for c := range rg.NumColumns() {
				cc, err := rg.ColumnChunk(c)
				if err != nil {
					t.Fatal(err)
				}
				name := cc.PathInSchema().String()
				seen[name] = true
				st, err := cc.Statistics()
				if err != nil {
					t.Fatal(err)
				}
				has := st != nil && st.HasMinMax()
				if want := name != "map_key"; has != want {
					t.Errorf("%s: column %s has min and max: %v, want %v", filepath.Base(f), name, has, want)
				}
				if name == "key" && has {
					if lo, hi := string(st.EncodeMin()), string(st.EncodeMax()); lo < "user-0" || hi > "user-5" || lo > hi {
						t.Errorf("%s: key statistics %q to %q, outside the keys written", filepath.Base(f), lo, hi)
					}
				}
			}
		}
		r.Close()
	}
	for _, c := range []string{"key", "map_key", "value"} {
		if !seen[c] {
			t.Errorf("no column %s in %v", c, seen)
		}
	}
}

// TestFilesStartWithinKeyGroups: files of 37 rows over key groups of about
// 60 start inside key groups, and each such file is written by a run of
// its own, which skips the rows of its key group that the file before it
// holds. The files are the same bytes whether one worker writes them or
// three, and hold the rows of one file in order, list indexes running on
// across files; an export reads no more than each file's first key group
// once more.
func TestFilesStartWithinKeyGroups(t *testing.T) {
	const perFile = 37
	b := newBuilder(savepoint.Operator{
		UID: "op", Name: "Op", Parallelism: 1, MaxParallelism: 16, KeyHash: keygroup.Murmur3, Key: snap(serializers.KindString),
		States: []savepoint.KeyedState{{Name: "items", Kind: savepoint.List, Namespace: void, Value: snap(serializers.KindInt64)}},
	})
	rows := 0
	for u := range 200 {
		for i := range u%9 + 1 {
			b.add(0, 0, savepoint.Entry{Key: fmt.Appendf(nil, "user-%d", u), Value: i64(int64(100*u + i))})
			rows++
		}
	}
	sp := b.write(t)
	whole, _ := exportTo(t, sp, export.Options{MaxRowsPerFile: -1})
	one, _ := exportTo(t, sp, export.Options{MaxRowsPerFile: perFile, Workers: 1})

	ctx := context.Background()
	r, err := snapshotfmt.Open(ctx, storage.LocalDir(sp))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	segs, err := r.Segments(ctx, savepoint.StateRef{}, keygroup.All(16))
	if err != nil {
		t.Fatal(err)
	}
	// A file that starts inside a key group reads that key group from its
	// start.
	extra, at := 0, 0
	for _, s := range segs {
		if first := (at + perFile - 1) / perFile * perFile; first > 0 && first-at < int(s.Entries) {
			extra += first - at
		}
		at += int(s.Entries)
	}
	if extra == 0 {
		t.Fatal("no file starts inside a key group")
	}
	three := filepath.Join(t.TempDir(), "out")
	staging, err := storage.Stage(three, false)
	if err != nil {
		t.Fatal(err)
	}
	var read atomic.Int64
	s, err := export.Run(ctx, countingSource{r, &read}, staging, export.Options{MaxRowsPerFile: perFile, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := staging.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if d := s.Datasets[0]; d.Rows != int64(rows) || d.Files != (rows+perFile-1)/perFile {
		t.Fatalf("summary %+v, want %d rows in files of %d", d, rows, perFile)
	}
	if got := read.Load(); got != int64(rows+extra) {
		t.Errorf("the export read %d entries for %d rows, want %d more", got, rows, extra)
	}
	if a, b := fileHashes(t, one), fileHashes(t, three); !maps.Equal(a, b) {
		t.Errorf("one worker wrote\n%v\nthree wrote\n%v", a, b)
	}
	q := "SELECT key_group, key, index, value FROM read_parquet('%s', filename = true, file_row_number = true) ORDER BY filename, file_row_number"
	want := openDuck(t, whole).rows(fmt.Sprintf(q, filepath.Join(whole, "op/items/*.parquet")))
	got := openDuck(t, three).rows(fmt.Sprintf(q, filepath.Join(three, "op/items/*.parquet")))
	if len(got) != rows || !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("%d rows in files of %d differ from the %d of one file", len(got), perFile, len(want))
	}
	for _, r := range got {
		if want := fmt.Sprint(100*atoi(t, strings.TrimPrefix(r[1], "user-")) + atoi(t, r[2])); r[3] != want {
			t.Errorf("%v: index does not match the element", r)
		}
	}
}

// fileHashes maps each file under dir to the SHA-256 of its bytes.
func fileHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range fileNames(t, dir) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = fmt.Sprintf("%x", sha256.Sum256(b))
	}
	return out
}

// TestRepeatedKeysAcrossRowGroups: a key repeated for each entry of its map
// is decoded once and repeated, also into the row group after a cut.
func TestRepeatedKeysAcrossRowGroups(t *testing.T) {
	b := newBuilder(savepoint.Operator{
		UID: "op", Name: "Op", Parallelism: 1, MaxParallelism: 4, KeyHash: keygroup.Murmur3, Key: snap(serializers.KindString),
		States: []savepoint.KeyedState{{Name: "counts", Kind: savepoint.Map, Namespace: void, MapKey: snap(serializers.KindInt32), Value: snap(serializers.KindInt64)}},
	})
	for u := range 7 {
		for c := range 5 {
			b.add(0, 0, savepoint.Entry{Key: fmt.Appendf(nil, "user-%d", u), MapKey: i32(int32(c)), Value: i64(int64(10*u + c))})
		}
	}
	out, s := exportTo(t, b.write(t), export.Options{RowGroupRows: 3})
	if s.Rows != 35 {
		t.Fatalf("%d rows, want 35", s.Rows)
	}
	got := openDuck(t, out).one("SELECT count(*) FILTER (WHERE key = 'user-' || (value // 10) AND map_key = value % 10) FROM {op/counts}")
	if got != "35" {
		t.Errorf("%s of 35 rows have the key and map key of their value", got)
	}
}
