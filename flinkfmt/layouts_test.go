package flinkfmt

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

// fixtureName splits the name of a migration test's fixture into its
// test class, Flink version and form (backend and kind).
var fixtureName = regexp.MustCompile(`^(.*)-flink(\d+\.\d+)-(hashmap|rocksdb)-(savepoint-native|savepoint|checkpoint)$`)

// stateMultiset is everything a savepoint holds, one line per keyed entry,
// operator list element and broadcast entry, sorted. A processing-time
// timer's timestamp is the wall clock of the run that wrote it, so only
// its presence counts.
func stateMultiset(t *testing.T, r *Reader) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, op := range r.Metadata().Operators {
		k, err := r.Keyed(ctx, op)
		switch {
		case errors.Is(err, ErrNotKeyed):
		case err != nil:
			t.Fatal(err)
		default:
			it := k.Entries(ctx, -1, keygroup.All(op.MaxParallelism))
			for it.Next() {
				e := it.Entry()
				m := k.States[e.State]
				ts := fmt.Sprint(e.Timestamp)
				if strings.HasPrefix(m.Name, "_timer_state/processing_") {
					if e.Timestamp < 1_500_000_000_000 {
						t.Errorf("%s: processing-time timer at %d", m.Name, e.Timestamp)
					}
					ts = "wall clock"
				}
				out = append(out, fmt.Sprintf("%s keyed %s kg %d key %x ns %x map key %x null %v value %x ts %s",
					op.ID, m.Name, e.KeyGroup, e.Key, e.Namespace, e.MapKey, e.Null, e.Value, ts))
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			if len(it.Warnings()) > 0 {
				t.Fatalf("parts not walked: %v", it.Warnings())
			}
		}
		states, _, err := r.OperatorStates(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range states {
			for _, sub := range s.Subtasks {
				for _, e := range sub.Elements {
					out = append(out, fmt.Sprintf("%s operator %s %s subtask %d element %x", op.ID, s.Name, s.Mode, sub.Index, e))
				}
			}
			for _, e := range s.Entries {
				out = append(out, fmt.Sprintf("%s broadcast %s key %x value %x", op.ID, s.Name, e.Key, e.Value))
			}
		}
	}
	sort.Strings(out)
	return out
}

// Flink's migration tests write one job's state in every form the
// fixtures keep: canonical savepoints of both backends, native savepoints
// (the heap layout, or RocksDB's tables) and checkpoints (heap, or
// RocksDB's incremental tables). Read without a JVM, every form of one
// test class and Flink version must hold the same entries, byte for byte,
// as its canonical RocksDB savepoint: the strongest check there is that
// the native and incremental layouts are read right, since the canonical
// layout's own content tests assert the values those jobs wrote.
func TestEveryLayoutHoldsTheSameState(t *testing.T) {
	root, rows := inventory(t)
	type group struct {
		forms map[string]string // form → directory
	}
	groups := map[string]*group{}
	for _, row := range rows {
		m := fixtureName.FindStringSubmatch(filepath.Base(row.dir))
		if m == nil {
			continue
		}
		id := m[1] + " " + m[2]
		if groups[id] == nil {
			groups[id] = &group{forms: map[string]string{}}
		}
		groups[id].forms[m[3]+"-"+m[4]] = filepath.Join(root, row.dir)
	}
	var ids []string
	for id := range groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	compared, native := 0, 0
	perClass := map[string]int{}
	for _, id := range ids {
		g := groups[id]
		refDir, ok := g.forms["rocksdb-savepoint"]
		if !ok {
			continue
		}
		// open reports whether the fixture has native RocksDB handles, and
		// returns no reader for one of the changelog layout.
		open := func(dir string) (r *Reader, isNative bool) {
			r, err := Open(context.Background(), storage.LocalDir(dir), Options{})
			if err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			for _, op := range r.Metadata().Operators {
				if k, err := r.Keyed(context.Background(), op); err == nil {
					if k.Layouts[LayoutChangelog] > 0 {
						return nil, false
					}
					isNative = isNative || k.Layouts[LayoutRocksDBNative] > 0
				}
			}
			return r, isNative
		}
		ref, _ := open(refDir)
		want := stateMultiset(t, ref)
		class := strings.Fields(id)[0]
		keyed := 0
		for _, l := range want {
			if strings.Contains(l, " keyed ") {
				keyed++
			}
		}
		if n, seen := perClass[class]; seen && n != keyed {
			t.Errorf("%s: %d keyed entries, %d in another version", id, keyed, n)
		}
		perClass[class] = keyed
		var forms []string
		for f := range g.forms {
			forms = append(forms, f)
		}
		sort.Strings(forms)
		for _, form := range forms {
			if form == "rocksdb-savepoint" {
				continue
			}
			r, isNative := open(g.forms[form])
			if r == nil {
				t.Logf("%s %s: changelog layout, not compared", id, form)
				continue
			}
			got := stateMultiset(t, r)
			compared++
			if isNative {
				native++
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s differs from the canonical RocksDB savepoint:\n%s", id, form, diffLines(got, want))
			}
		}
	}
	t.Logf("%d fixtures compared with their canonical RocksDB savepoint, %d of them native RocksDB; keyed entries per test class: %v", compared, native, perClass)
	// The jobs' keys 0 to 3: StatefulJobSnapshotMigrationITCase keeps
	// state-name in two operators and four timer services, the Scala test
	// nine value states and the Failure, TypeSerializerSnapshotMigrationITCase
	// testState; the broadcast job keeps broadcast state only.
	wantKeyed := map[string]int{
		"new-stateful-udf-migration-itcase":                  32,
		"stateful-scala-udf-migration-itcase":                40,
		"stateful-scala-with-broadcast-udf-migration-itcase": 40,
		"type-serializer-snapshot-migration-itcase":          4,
		"new-stateful-broadcast-udf-migration-itcase":        0,
	}
	for class, n := range wantKeyed {
		if perClass[class] != n {
			t.Errorf("%s: %d keyed entries, want %d", class, perClass[class], n)
		}
	}
	if native != 44 {
		t.Errorf("%d native RocksDB fixtures compared, want all 44", native)
	}
}

// diffLines lists the lines only one side has.
func diffLines(got, want []string) string {
	count := map[string]int{}
	for _, s := range want {
		count[s]++
	}
	for _, s := range got {
		count[s]--
	}
	var b strings.Builder
	for s, n := range count {
		switch {
		case n > 0:
			fmt.Fprintf(&b, "  missing %d× %s\n", n, s)
		case n < 0:
			fmt.Fprintf(&b, "  extra %d× %s\n", -n, s)
		}
	}
	return b.String()
}

// The changelog checkpoints are refused with what they hold and why: the
// reference fixtures were taken before any materialization, so no keyed
// header records their key serializer.
func TestChangelogRefusal(t *testing.T) {
	root, rows := inventory(t)
	n := 0
	for _, row := range rows {
		if !strings.Contains(row.dir, "-checkpoint") {
			continue
		}
		r, err := Open(context.Background(), storage.LocalDir(filepath.Join(root, row.dir)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range r.Metadata().Operators {
			k, err := r.Keyed(context.Background(), op)
			if err != nil || k.Layouts[LayoutChangelog] == 0 {
				continue
			}
			n++
			it := k.Entries(context.Background(), -1, keygroup.All(op.MaxParallelism))
			if it.Next() {
				t.Errorf("%s: an entry of a changelog handle", row.dir)
			}
			err = it.Err()
			var e *Error
			if !errors.Is(err, ErrUnsupported) || !errors.As(err, &e) || e.Operator != op.ID.String() ||
				!strings.Contains(err.Error(), "CHANGELOG_HANDLE_V2") || !strings.Contains(err.Error(), ": 0 materialized handles") || !strings.Contains(err.Error(), "key serializer") {
				t.Errorf("%s: %v", row.dir, err)
			}
		}
	}
	if n == 0 {
		t.Error("no changelog handle found")
	}
}
