package rocksdb_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	. "github.com/stateproc/stateproc/flinkfmt/rocksdb"
	"github.com/stateproc/stateproc/flinkfmt/rocksdb/internal/fixture"
	"github.com/stateproc/stateproc/flinkfmt/rocksdb/sst"
)

// TestFixtureOptions parses the OPTIONS files of Flink 1.20 (FRocksDB
// 6.20.3, bare merge operator name) and Flink 2.0 (RocksDB 8.10.0, the
// operator with its delimiter).
func TestFixtureOptions(t *testing.T) {
	seen := map[string]bool{}
	for _, dir := range fixture.Dirs(t) {
		hs := fixture.Handles(t, dir)
		for _, h := range hs {
			o, err := ReadOptions(openFile(t, h.Options()), h.Options())
			if err != nil {
				t.Fatal(err)
			}
			cf, ok := o.ColumnFamily("default")
			if !ok || cf.Comparator != sst.BytewiseComparator || cf.MergeOperator != StringAppendTESTOperator || cf.FormatVersion != "5" || cf.Compression != "kSnappyCompression" {
				t.Fatalf("%s: default column family %+v", h.Options(), cf)
			}
			switch {
			case strings.Contains(dir, "flink2.0"):
				if o.RocksDBVersion != "8.10.0" || string(cf.Delimiter) != "," || cf.Checksum != "kXXH3" {
					t.Errorf("%s: version %q, %+v", h.Options(), o.RocksDBVersion, cf)
				}
			default:
				if o.RocksDBVersion != "6.20.3" || cf.Delimiter != nil || cf.Checksum != "kCRC32c" {
					t.Errorf("%s: version %q, %+v", h.Options(), o.RocksDBVersion, cf)
				}
			}
			seen[o.RocksDBVersion] = true
		}
	}
	if !seen["6.20.3"] || !seen["8.10.0"] {
		t.Errorf("RocksDB versions %v", seen)
	}
}

func TestParseOptions(t *testing.T) {
	text := `# RocksDB option file.
[Version]
  rocksdb_version=7.1.0
[DBOptions]
  max_open_files=-1
[CFOptions "default"]
  merge_operator=nullptr
  comparator=leveldb.BytewiseComparator
[CFOptions "a\:b\\c"]
  merge_operator={id=StringAppendTESTOperator;delimiter=||;}
[TableOptions/BlockBasedTable "a\:b\\c"]
  checksum=kXXH3
  format_version=5
[CFOptions "semi"]
  merge_operator={delimiter=;;id=StringAppendOperator;}
[CFOptions "empty"]
  merge_operator={id=StringAppendTESTOperator;delimiter=;}
[CFOptions "bare"]
  merge_operator=StringAppendTESTOperator
`
	o, err := ParseOptions([]byte(text), "OPTIONS-000007")
	if err != nil {
		t.Fatal(err)
	}
	want := []ColumnFamilyOptions{
		{Name: "default", Comparator: sst.BytewiseComparator},
		{Name: `a:b\c`, MergeOperator: StringAppendTESTOperator, Delimiter: []byte("||"), Checksum: "kXXH3", FormatVersion: "5"},
		{Name: "semi", MergeOperator: StringAppendOperator, Delimiter: []byte(";")},
		{Name: "empty", MergeOperator: StringAppendTESTOperator, Delimiter: []byte{}},
		{Name: "bare", MergeOperator: StringAppendTESTOperator},
	}
	if o.RocksDBVersion != "7.1.0" || len(o.ColumnFamilies) != len(want) {
		t.Fatalf("parsed %+v", o)
	}
	for i, w := range want {
		g := o.ColumnFamilies[i]
		if g.Name != w.Name || g.MergeOperator != w.MergeOperator || string(g.Delimiter) != string(w.Delimiter) ||
			(g.Delimiter == nil) != (w.Delimiter == nil) || g.Checksum != w.Checksum || g.FormatVersion != w.FormatVersion || g.Comparator != w.Comparator {
			t.Errorf("column family %d: %+v, want %+v", i, g, w)
		}
	}
}

func TestParseOptionsErrors(t *testing.T) {
	for _, c := range []struct{ text, msg string }{
		{"[CFOptions \"x\"]\n[CFOptions \"x\"]\n", `column family "x" twice`},
		{"[CFOptions x]\n", "not quoted"},
		{"[CFOptions \"x\"\n", "without ]"},
		{"[TableOptions/BlockBasedTable \"y\"]\n", "unknown column family"},
		{"[CFOptions \"x\"]\n  comparator\n", "not a name=value"},
		{"comparator=x\n", "not a name=value"},
		{"[CFOptions \"x\"]\n  merge_operator={id=A\n", "closing brace"},
		{"[CFOptions \"x\"]\n  merge_operator={delimiter=,;}\n", "without id"},
		{"[CFOptions \"x\"]\n  merge_operator={id}\n", "not name=value"},
	} {
		_, err := ParseOptions([]byte(c.text), "OPTIONS-1")
		var e *sst.Error
		if !errors.Is(err, sst.ErrCorrupt) || !errors.As(err, &e) || e.File != "OPTIONS-1" || e.Offset < 0 || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: error %v, want a located ErrCorrupt with %q", c.text, err, c.msg)
		}
	}
}

// hugeFile claims a size it would take an allocation to read.
type hugeFile struct{}

func (hugeFile) ReadAt([]byte, int64) (int, error) { return 0, errors.New("must not be read") }
func (hugeFile) Close() error                      { return nil }
func (hugeFile) Size() int64                       { return 1 << 40 }

func TestReadOptionsBounded(t *testing.T) {
	_, err := ReadOptions(hugeFile{}, "OPTIONS-9")
	if !errors.Is(err, sst.ErrCorrupt) || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("error %v", err)
	}
}

// FuzzOptions parses arbitrary bytes as an OPTIONS file, seeded from one of
// Flink 1.20's and one of 2.0's when the fixtures are there.
func FuzzOptions(f *testing.F) {
	f.Add([]byte("[Version]\n  rocksdb_version=8.10.0\n[CFOptions \"a\\:b\"]\n  merge_operator={id=StringAppendTESTOperator;delimiter=,;}\n"))
	if _, err := os.Stat(fixtureInventory()); err == nil {
		for _, dir := range fixture.Dirs(f) {
			if !strings.HasSuffix(dir, "new-stateful-udf-migration-itcase-flink1.20-rocksdb-checkpoint") &&
				!strings.HasSuffix(dir, "new-stateful-udf-migration-itcase-flink2.0-rocksdb-checkpoint") {
				continue
			}
			hs := fixture.Handles(f, dir)
			b, err := os.ReadFile(hs[0].Options())
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := ParseOptions(b, "OPTIONS-f")
		if err != nil {
			var e *sst.Error
			if !errors.Is(err, sst.ErrCorrupt) || !errors.As(err, &e) || e.File != "OPTIONS-f" {
				t.Fatalf("error %v is not a located ErrCorrupt", err)
			}
			return
		}
		names := map[string]bool{}
		for _, cf := range o.ColumnFamilies {
			if names[cf.Name] {
				t.Fatalf("column family %q twice", cf.Name)
			}
			names[cf.Name] = true
		}
	})
}

func fixtureInventory() string { return "../../../shared/flink-savepoints/inventory.tsv" }
