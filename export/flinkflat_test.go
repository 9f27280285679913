package export_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/flinksource"
	"github.com/stateproc/stateproc/internal/flinkgen"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/storage"
)

// exportSource exports src into a new directory under dir.
func exportSource(src savepoint.Source, o export.Options, dir string) (string, error) {
	ctx := context.Background()
	out := filepath.Join(dir, "out")
	staging, err := storage.Stage(out, false)
	if err != nil {
		return "", err
	}
	if _, err := export.Run(ctx, src, staging, o); err != nil {
		staging.Abort()
		return "", err
	}
	return out, staging.Publish(ctx)
}

// writeSessions writes the sessions savepoint of the benchmark with c's
// users and compression, and returns its directory.
func writeSessions(t *testing.T, users int, compressed bool) string {
	t.Helper()
	ctx := context.Background()
	c := flinkgen.SessionsLarge()
	c.Users, c.Compressed = users, compressed
	sp := filepath.Join(t.TempDir(), "sp")
	if _, err := flinkgen.WriteDir(ctx, sp, false, c); err != nil {
		t.Fatal(err)
	}
	return sp
}

// exportFlink exports the Flink savepoint at sp into a new directory, or
// returns the error of opening or exporting it.
func exportFlink(t *testing.T, sp string, o export.Options) (string, error) {
	t.Helper()
	ctx := context.Background()
	src, err := flinksource.Open(ctx, storage.LocalDir(sp), flinkfmt.Options{})
	if err != nil {
		return "", err
	}
	defer src.Close()
	out := filepath.Join(t.TempDir(), "out")
	staging, err := storage.Stage(out, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := export.Run(ctx, src, staging, o); err != nil {
		staging.Abort()
		return "", err
	}
	return out, staging.Publish(ctx)
}

// flatFlink is export.FlatDatasets of the Flink savepoint at sp, or nil
// where it does not open or map.
func flatFlink(t *testing.T, sp string) map[string]bool {
	t.Helper()
	src, err := flinksource.Open(context.Background(), storage.LocalDir(sp), flinkfmt.Options{})
	if err != nil {
		return nil
	}
	defer src.Close()
	flat, _ := export.FlatDatasets(src, export.Options{})
	return flat
}

// TestFlinkFlat exports Flink savepoints from flat columns and through
// builders, and wants the same files as sameAsBuilders compares them: the
// sessions savepoint of the benchmark at a small scale, plain and with
// Snappy-compressed key groups (a map state of String keys and map keys
// and TTL Long values, and timers, both flat; an Avro value state, not
// flat), and Flink's own savepoints where they are at hand.
func TestFlinkFlat(t *testing.T) {
	for _, compressed := range []bool{false, true} {
		sp := writeSessions(t, 400, compressed)
		// Datasets by state: Flink records the operator's id, not its uid.
		flat := map[string]bool{}
		for ds, dict := range flatFlink(t, sp) {
			_, state, _ := strings.Cut(ds, "/")
			flat[state] = dict
		}
		for ds, dict := range map[string]bool{flinkgen.CountsState: true, "%5Ftimer_state%2Fevent_user-timers": false} {
			if got, ok := flat[ds]; !ok || got != dict {
				t.Errorf("%s: flat %v, dictionary key %v; want flat, dictionary key %v", ds, ok, got, dict)
			}
		}
		if _, ok := flat[flinkgen.SessionState]; ok {
			t.Errorf("%s is flat", flinkgen.SessionState)
		}
		o := export.Options{RowGroupRows: 1000}
		a, err := exportFlink(t, sp, o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := exportFlink(t, sp, export.WithBuilders(o))
		if err != nil {
			t.Fatal(err)
		}
		if sameAsBuilders(t, a, b, fmt.Sprintf("sessions, compressed %v", compressed)) == 0 {
			t.Error("no file has a dictionary key or map key")
		}
	}

	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "shared", "flink-savepoints")
	inv, err := os.ReadFile(filepath.Join(root, "inventory.tsv"))
	if err != nil {
		t.Logf("Flink's savepoints not found at %s: %v", root, err)
		return
	}
	flats := 0
	for i, line := range strings.Split(strings.TrimSpace(string(inv)), "\n") {
		if i == 0 {
			continue
		}
		sp := filepath.Join(root, strings.TrimSuffix(strings.SplitN(line, "\t", 2)[0], "/_metadata"))
		flat := flatFlink(t, sp)
		if len(flat) == 0 {
			continue
		}
		flats += len(flat)
		a, err := exportFlink(t, sp, export.Options{})
		b, berr := exportFlink(t, sp, export.WithBuilders(export.Options{}))
		switch {
		case err != nil || berr != nil:
			// A value that does not decode fails both the same way.
			if err == nil || berr == nil || err.Error() != berr.Error() {
				t.Errorf("%s: %v; with builders: %v", sp, err, berr)
			}
		default:
			sameAsBuilders(t, a, b, sp)
		}
	}
	if flats == 0 {
		t.Error("none of Flink's savepoints has a flat dataset")
	}
	t.Logf("%d flat datasets in Flink's savepoints", flats)
}

// flinkString is a String as Flink's StringSerializer writes it (ASCII
// only), or null.
func flinkString(s *string) []byte {
	if s == nil {
		return []byte{0}
	}
	return append([]byte{byte(len(*s) + 1)}, *s...)
}

// TestFlinkFlatNulls: the nulls a Flink map state may hold, a null map
// value (its null flag set), a null map key and a null key, are the rows
// the builders write; the other keys of a null key's row group still have
// a dictionary.
// flinkCounts is the sessions savepoint of the benchmark with the entries
// of its map state category-counts (String keys and map keys, TTL Long
// values) given by key group.
func flinkCounts(t *testing.T, entries map[int][]savepoint.Entry) savepoint.Source {
	t.Helper()
	r, err := flinksource.Open(context.Background(), storage.LocalDir(writeSessions(t, 10, false)), flinkfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	for _, ref := range r.Metadata().Refs(0) {
		if ks := r.Metadata().KeyedState(ref); ks != nil && ks.Name == flinkgen.CountsState {
			return &handSource{Source: r, ref: ref, entries: entries}
		}
	}
	t.Fatal("no state " + flinkgen.CountsState)
	return nil
}

// flinkValue is a map value of category-counts: the null flag, the last
// access time and the count.
func flinkValue(lastAccess, v int64) []byte {
	return append(append([]byte{0}, i64(lastAccess)...), i64(v)...)
}

func flinkEntry(key, mapKey *string, v []byte) savepoint.Entry {
	return savepoint.Entry{Key: flinkString(key), Namespace: []byte{0}, MapKey: flinkString(mapKey), Value: v}
}

func TestFlinkFlatNulls(t *testing.T) {
	alice, bob, a, b := "alice", "bob", "a", "b"
	src := flinkCounts(t, map[int][]savepoint.Entry{
		3: {flinkEntry(&alice, &a, flinkValue(testNow, 1)), flinkEntry(&alice, &b, []byte{1}), flinkEntry(&alice, nil, flinkValue(testNow, 2)),
			flinkEntry(&bob, &a, flinkValue(testNow, 3))},
		5: {flinkEntry(nil, &a, flinkValue(testNow, 4)), flinkEntry(&bob, &b, flinkValue(testNow, 5))},
	})
	flat, err := exportSource(src, export.Options{}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	built, err := exportSource(src, export.WithBuilders(export.Options{}), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sameAsBuilders(t, flat, built, "nulls")
	d := openDuck(t, flat)
	var got []string
	for _, r := range d.rows("SELECT coalesce(key, 'NULL') || ' ' || coalesce(map_key, 'NULL') || ' ' || coalesce(CAST(value.value AS VARCHAR), 'NULL') FROM {*/" + flinkgen.CountsState + "} ORDER BY file_row_number") {
		got = append(got, r[0])
	}
	want := []string{"alice a 1", "alice b NULL", "alice NULL 2", "bob a 3", "NULL a 4", "bob b 5"}
	if !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
	if enc := d.one("SELECT string_agg(encodings, ';') FROM parquet_metadata('" + filepath.Join(flat, "*", flinkgen.CountsState, "*.parquet") + "') WHERE path_in_schema = 'key'"); !strings.Contains(enc, "RLE_DICTIONARY") {
		t.Errorf("key encodings %s, want a dictionary", enc)
	}
}

// TestFlinkFlatErrors wants the errors of Flink values that do not decode
// to be the same from flat columns as through builders.
func TestFlinkFlatErrors(t *testing.T) {
	alice, a := "alice", "a"
	for name, v := range map[string][]byte{
		"no null flag":           {},
		"null followed by bytes": {1, 0},
		"truncated":              flinkValue(testNow, 1)[:12],
		"bytes after the value":  append(flinkValue(testNow, 1), 0),
	} {
		t.Run(name, func(t *testing.T) {
			src := flinkCounts(t, map[int][]savepoint.Entry{3: {flinkEntry(&alice, &a, flinkValue(testNow, 1)), flinkEntry(&alice, &alice, v)}})
			_, flatErr := exportSource(src, export.Options{}, t.TempDir())
			_, buildErr := exportSource(src, export.WithBuilders(export.Options{}), t.TempDir())
			if !errors.Is(flatErr, serializers.ErrDecode) || buildErr == nil || flatErr.Error() != buildErr.Error() {
				t.Errorf("flat: %v\nbuilders: %v", flatErr, buildErr)
			}
		})
	}
}
