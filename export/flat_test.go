package export_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// TestFlatSameBytes writes the datasets whose columns are all flat both
// from flat columns and through Arrow builders, and wants the same files,
// byte for byte, except where a flat key or map_key column has a
// dictionary: there DuckDB must read the same rows, in the same order, of
// the same types.
func TestFlatSameBytes(t *testing.T) {
	sp := typesSavepoint(t)
	now := testNow + 12*hour
	r, err := snapshotfmt.Open(context.Background(), storage.LocalDir(sp))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	flat, err := export.FlatDatasets(r, export.Options{Now: &now})
	if err != nil {
		t.Fatal(err)
	}
	// Every kind of flat column: each primitive value, a list's index, a
	// window namespace, TTL with expired, timers, a string namespace and
	// an int64 key.
	for ds, dict := range map[string]bool{"types/flags": false, "types/small": false, "types/ratio": false, "types/share": false,
		"types/blob": false, "types/seen": false, "types/events": true, "types/clicks": true, "types/counts": true,
		"types/fire": false, "types/window-end": false, "byid/names": false} {
		if got, ok := flat[ds]; !ok || got != dict {
			t.Errorf("%s: flat %v, dictionary key %v; want flat, dictionary key %v", ds, ok, got, dict)
		}
	}
	for _, ds := range []string{"types/everything", "types/maybe", "types/scores", "types/labels", "byrecord/total", "source/offsets", "source/rules"} {
		if _, ok := flat[ds]; ok {
			t.Errorf("%s is flat", ds)
		}
	}
	if f, _ := export.FlatDatasets(r, export.WithBuilders(export.Options{})); len(f) != 0 {
		t.Errorf("flat with builders: %v", f)
	}

	type run struct {
		sp string
		o  export.Options
	}
	runs := []run{{sp, export.Options{}}, {sp, export.Options{Now: &now}}, {sp, export.Options{Compression: export.Uncompressed, RowGroupRows: 3, MaxRowsPerFile: 10}}}
	for _, sp := range checkedIn(t) {
		runs = append(runs, run{sp, export.Options{Now: &now, RowGroupRows: 1000}})
	}
	dicts := 0
	for _, c := range runs {
		a, _ := exportTo(t, c.sp, c.o)
		b, _ := exportTo(t, c.sp, export.WithBuilders(c.o))
		dicts += sameAsBuilders(t, a, b, fmt.Sprintf("%s %+v", filepath.Base(c.sp), c.o))
	}
	if dicts == 0 {
		t.Error("no file has a dictionary key or map key")
	}
}

// sameAsBuilders compares the files of export a, from flat columns, with
// those of b, through builders: the same bytes, except where a flat key
// or map_key column has a dictionary, whose file must give DuckDB the same
// rows, in the same order, of the same types. It returns how many files
// differ so.
func sameAsBuilders(t *testing.T, a, b, label string) (dicts int) {
	t.Helper()
	names := fileNames(t, a)
	if got := fileNames(t, b); !slices.Equal(names, got) {
		t.Fatalf("%s: files %v, with builders %v", label, names, got)
	}
	d := openDuck(t, "")
	for _, n := range names {
		pa, pb := filepath.Join(a, n), filepath.Join(b, n)
		if fa, fb := readFile(t, pa), readFile(t, pb); bytes.Equal(fa, fb) || !strings.HasSuffix(n, ".parquet") {
			if !bytes.Equal(fa, fb) {
				t.Errorf("%s: %s differs from the one written with builders", label, n)
			}
			continue
		}
		// Only a dictionary key or map key makes a difference.
		enc := d.one("SELECT string_agg(DISTINCT encodings, ',') FROM parquet_metadata('" + pa + "') WHERE path_in_schema IN ('key', 'map_key')")
		if !strings.Contains(enc, "RLE_DICTIONARY") {
			t.Errorf("%s: %s differs from the one written with builders, and its key and map key are %s", label, n, enc)
			continue
		}
		dicts++
		q := "SELECT * FROM read_parquet('%s')"
		if ra, rb := d.rows(fmt.Sprintf(q, pa)), d.rows(fmt.Sprintf(q, pb)); !slices.EqualFunc(ra, rb, slices.Equal) || len(ra) == 0 {
			t.Errorf("%s: %s: %d rows, with builders %d, or they differ", label, n, len(ra), len(rb))
		}
		q = "SELECT column_name || ' ' || column_type FROM (DESCRIBE SELECT * FROM read_parquet('%s'))"
		if ta, tb := d.rows(fmt.Sprintf(q, pa)), d.rows(fmt.Sprintf(q, pb)); !slices.EqualFunc(ta, tb, slices.Equal) {
			t.Errorf("%s: %s: types %v, with builders %v", label, n, ta, tb)
		}
	}
	return dicts
}

// TestFlatErrors wants the errors of values that do not decode to be the
// same from flat columns as through builders.
func TestFlatErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		value serializers.Snapshot
		bytes []byte
	}{
		{"bool 02", snap(serializers.KindBool), []byte{2}},
		{"int32 of 5 bytes", snap(serializers.KindInt32), []byte{1, 2, 3, 4, 5}},
		{"int64 of 3 bytes", snap(serializers.KindInt64), []byte{1, 2, 3}},
		{"float32 of 2 bytes", snap(serializers.KindFloat32), []byte{1, 2}},
		{"float64 of 9 bytes", snap(serializers.KindFloat64), make([]byte, 9)},
		{"timestamp of 7 bytes", snap(serializers.KindTimestamp), make([]byte, 7)},
		{"string not UTF-8", snap(serializers.KindString), []byte{'a', 0xff}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := oneState(t, c.value, []byte{0, 0, 0, 0}, c.bytes)
			_, flatErr := runExport(sp, filepath.Join(t.TempDir(), "out"), export.Options{})
			_, buildErr := runExport(sp, filepath.Join(t.TempDir(), "out"), export.WithBuilders(export.Options{}))
			if !errors.Is(flatErr, serializers.ErrDecode) || buildErr == nil || flatErr.Error() != buildErr.Error() {
				t.Errorf("flat: %v\nbuilders: %v", flatErr, buildErr)
			}
		})
	}
}
