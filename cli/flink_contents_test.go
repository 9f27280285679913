package cli_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/stateproc/stateproc/cli"
	"github.com/stateproc/stateproc/internal/jsonvalue"
)

// The job of Flink's StatefulJobSnapshotMigrationITCase (fixtures
// new-stateful-udf-migration-itcase-*): a source emits (i, i) for i in
// 0..3, keyed by field 0, a Tuple1<Long>. Two keyed operators set
// ValueState<Long> "state-name" to f1; two TimelyStatefulOperators keep it
// under namespace f0 and register per key an event-time timer at
// Long.MIN_VALUE+10 (no watermark yet) and a processing-time timer, in
// namespace f0. Each of the two sources keeps four strings in list state
// "source-state". max parallelism 4, parallelism 4.
const (
	statefulJob        = "flink-tests/src/test/resources/new-stateful-udf-migration-itcase-flink1.18-"
	statefulHeap       = statefulJob + "hashmap-savepoint-native"
	statefulCanonical  = statefulJob + "rocksdb-savepoint"
	statefulNative     = statefulJob + "rocksdb-savepoint-native"
	statefulSnappy     = "flink-tests/src/test/resources/new-stateful-udf-migration-itcase-flink1.19-rocksdb-savepoint"
	statefulValueState = "state-name"
)

var dragons = []string{"Here be dragons!", "Here be more dragons!", "Here be yet more dragons!", "Here be the mostest dragons!"}

// statefulOperators returns the IDs of the operators of a fixture of the
// job that hold state-name, with whether they keep it in a namespace.
func statefulOperators(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := statefulOperatorsOf(t, dir)
	if len(out) != 4 {
		t.Fatalf("%d operators hold %s, want 4", len(out), statefulValueState)
	}
	return out
}

// statefulOperatorsOf is statefulOperators of a savepoint that may hold
// fewer of them.
func statefulOperatorsOf(t *testing.T, dir string) map[string]bool {
	t.Helper()
	code, stdout, stderr := inProcess("inspect", "-o", "json", dir)
	if code != cli.ExitOK {
		t.Fatalf("inspect: exit %d: %s", code, stderr)
	}
	var rep struct {
		States []struct {
			Operator, Name string
			NamespaceType  string `json:"namespace_type"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, s := range rep.States {
		if s.Name == statefulValueState {
			out[s.Operator] = s.NamespaceType != "void"
		}
	}
	return out
}

func dumpLines(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	code, stdout, stderr := inProcess(append([]string{"dump"}, args...)...)
	if code != cli.ExitOK {
		t.Fatalf("dump %v: exit %d: %s", args, code, stderr)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("dump %v: %q: %v", args, l, err)
		}
		out = append(out, m)
	}
	return out
}

// What the job wrote, through dump, in every keyed layout: --key goes to
// the Tuple1 key's key group through Flink's hash and finds the key's
// value; the timers and the sources' strings are the job's.
func TestFlinkStatefulJobDump(t *testing.T) {
	root := flinkRoot(t)
	for _, fixture := range []string{statefulHeap, statefulCanonical, statefulNative, statefulSnappy} {
		dir := filepath.Join(root, fixture)
		t.Run(filepath.Base(fixture), func(t *testing.T) {
			for op, windowed := range statefulOperators(t, dir) {
				all := dumpLines(t, dir, "--operator", strings.ToUpper(op), "--state", statefulValueState)
				if len(all) != 4 {
					t.Errorf("operator %s: %d entries of %s, want 4", op, len(all), statefulValueState)
				}
				for k := int64(0); k < 4; k++ {
					got := dumpLines(t, dir, "--operator", op, "--state", statefulValueState, "--key", fmt.Sprintf("[%d]", k))
					if len(got) != 1 {
						t.Fatalf("operator %s: --key [%d] gives %d entries", op, k, len(got))
					}
					if got[0]["value"] != float64(k) || fmt.Sprint(got[0]["key"]) != fmt.Sprintf("map[f0:%d]", k) {
						t.Errorf("operator %s: key %d: %v", op, k, got[0])
					}
					if ns, ok := got[0]["namespace"]; windowed && ns != float64(k) || !windowed && ok {
						t.Errorf("operator %s: key %d in namespace %v", op, k, ns)
					}
				}
				if !windowed {
					continue
				}
				for _, svc := range []string{"_timer_state/event_timer", "_timer_state/processing_timer"} {
					timers := dumpLines(t, dir, "--operator", op, "--state", svc)
					if len(timers) != 4 {
						t.Errorf("operator %s: %d timers in %s, want 4", op, len(timers), svc)
					}
					for _, tm := range timers {
						key := tm["key"].(map[string]any)["f0"]
						if tm["namespace"] != key {
							t.Errorf("operator %s: %s: timer of key %v in namespace %v", op, svc, key, tm["namespace"])
						}
						if strings.Contains(svc, "event") && tm["timestamp"] != jsonvalue.Time(math.MinInt64+10) {
							t.Errorf("operator %s: event timer at %v, want Long.MIN_VALUE+10", op, tm["timestamp"])
						}
					}
				}
			}
			code, stdout, _ := inProcess("inspect", "-o", "json", dir)
			if code != cli.ExitOK {
				t.Fatal(code)
			}
			var rep struct {
				OperatorStates []struct{ Operator, Name string } `json:"operator_states"`
			}
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatal(err)
			}
			sources := 0
			for _, s := range rep.OperatorStates {
				if s.Name != "source-state" {
					continue
				}
				sources++
				var got []string
				for _, l := range dumpLines(t, dir, "--operator", s.Operator, "--state", "source-state") {
					got = append(got, l["value"].(string))
				}
				if !slices.Equal(got, dragons) {
					t.Errorf("source %s: source-state %q", s.Operator, got)
				}
			}
			if sources != 2 {
				t.Errorf("%d sources with source-state, want 2", sources)
			}
		})
	}
}

// Exports of a heap, a canonical, a Snappy-compressed and a native RocksDB
// fixture of the job read back with DuckDB: the rows the job wrote, with
// typed columns (the Tuple1 key as a struct, longs as BIGINT, timers as
// timestamps, the strings as VARCHAR).
func TestFlinkExportsReadByDuckDB(t *testing.T) {
	root := flinkRoot(t)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, fixture := range []string{statefulHeap, statefulCanonical, statefulSnappy, statefulNative} {
		dir := filepath.Join(root, fixture)
		t.Run(filepath.Base(fixture), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			if code, _, stderr := inProcess("export", dir, "--out", out); code != cli.ExitOK {
				t.Fatalf("export: exit %d: %s", code, stderr)
			}
			for op, windowed := range statefulOperators(t, dir) {
				files := fmt.Sprintf("read_parquet('%s')", filepath.Join(out, op, statefulValueState, "*.parquet"))
				wantTypes := "key_group INTEGER, key STRUCT(f0 BIGINT), value BIGINT"
				if windowed {
					wantTypes = "key_group INTEGER, key STRUCT(f0 BIGINT), namespace BIGINT, value BIGINT"
				}
				if got := columnTypes(t, db, files); got != wantTypes {
					t.Errorf("operator %s: columns %s, want %s", op, got, wantTypes)
				}
				var rows, sum, mismatched int64
				q := "SELECT count(*), sum(value), count(*) FILTER (WHERE key.f0 <> value) FROM " + files
				if err := db.QueryRow(q).Scan(&rows, &sum, &mismatched); err != nil {
					t.Fatal(err)
				}
				if rows != 4 || sum != 6 || mismatched != 0 {
					t.Errorf("operator %s: %d rows summing to %d, %d whose value is not their key", op, rows, sum, mismatched)
				}
				if !windowed {
					continue
				}
				timers := fmt.Sprintf("read_parquet('%s')", filepath.Join(out, op, "%5Ftimer_state%2Fprocessing_timer", "*.parquet"))
				if got, want := columnTypes(t, db, timers), "key_group INTEGER, key STRUCT(f0 BIGINT), namespace BIGINT, timestamp TIMESTAMP WITH TIME ZONE"; got != want {
					t.Errorf("operator %s: timer columns %s, want %s", op, got, want)
				}
				if err := db.QueryRow("SELECT count(*) FROM " + timers + " WHERE namespace = key.f0").Scan(&rows); err != nil || rows != 4 {
					t.Errorf("operator %s: %d processing timers in their key's namespace (%v), want 4", op, rows, err)
				}
			}
			sources := fmt.Sprintf("read_parquet('%s')", filepath.Join(out, "*", "source-state", "*.parquet"))
			if got, want := columnTypes(t, db, sources), "subtask INTEGER, index INTEGER, value VARCHAR"; got != want {
				t.Errorf("source-state columns %s, want %s", got, want)
			}
			var n, distinct int64
			if err := db.QueryRow("SELECT count(*), count(DISTINCT value) FROM "+sources).Scan(&n, &distinct); err != nil || n != 8 || distinct != 4 {
				t.Errorf("source-state: %d rows of %d strings (%v), want 8 of 4", n, distinct, err)
			}
		})
	}
}

// columnTypes is "name TYPE, ..." of what DuckDB reads from files.
func columnTypes(t *testing.T, db *sql.DB, files string) string {
	t.Helper()
	rows, err := db.Query("DESCRIBE SELECT * FROM " + files)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var name, typ string
		var null, key, def, extra sql.NullString
		if err := rows.Scan(&name, &typ, &null, &key, &def, &extra); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, name+" "+typ)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(cols, ", ")
}

// Every command that takes --operator takes a uid that a Flink 1.18
// savepoint does not record, through Flink's uid hash: the job names its
// first keyed flat map CheckpointingKeyedStateFlatMap1.
func TestFlinkOperatorByUID(t *testing.T) {
	dir := filepath.Join(flinkRoot(t), statefulHeap)
	const uid, id = "CheckpointingKeyedStateFlatMap1", "d5c8b168c6cbfe8c507a10f88b325243"
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := inProcess("export", dir, "--operator", uid, "--out", out, "-o", "json")
	if code != cli.ExitOK {
		t.Fatalf("export --operator %s: exit %d: %s", uid, code, stderr)
	}
	var sum struct {
		Datasets []struct {
			Operator, State string
			Rows            int
		}
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Datasets) != 1 || sum.Datasets[0].Operator != id || sum.Datasets[0].State != statefulValueState || sum.Datasets[0].Rows != 4 {
		t.Errorf("export --operator %s: %+v", uid, sum.Datasets)
	}
	code, stdout, stderr = inProcess("size", dir, "--operator", uid, "-o", "json")
	if code != cli.ExitOK {
		t.Fatalf("size --operator %s: exit %d: %s", uid, code, stderr)
	}
	var rep struct {
		Basis     string
		Operators []struct{ UID string }
		Total     struct{ Savepoint, Pebble float64 }
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	// 4 entries of a Tuple1<Long> key, the void namespace's byte and a
	// long: 17 bytes each.
	if len(rep.Operators) != 1 || rep.Operators[0].UID != id || rep.Total.Pebble != 68 || !strings.Contains(rep.Basis, "seeds' arithmetic") {
		t.Errorf("size --operator %s: %+v", uid, rep)
	}
}
