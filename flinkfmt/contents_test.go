package flinkfmt

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/typeser"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

// readable opens the fixtures whose directory name starts with prefix and
// whose keyed and operator state this reader reads (not the changelog
// layout), and reports how many it skipped.
func readable(t *testing.T, prefix string) (map[string]*Reader, int) {
	root, rows := inventory(t)
	out := map[string]*Reader{}
	skipped := 0
	for _, row := range rows {
		name := filepath.Base(row.dir)
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		r, err := Open(context.Background(), storage.LocalDir(filepath.Join(root, row.dir)), Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ok := true
		for _, op := range r.Metadata().Operators {
			if k, err := r.Keyed(context.Background(), op); err != nil && !errors.Is(err, ErrNotKeyed) || err == nil && k.Layouts[LayoutChangelog] > 0 {
				ok = false
			}
			if _, _, err := r.OperatorStates(context.Background(), op); errors.Is(err, ErrUnsupported) {
				ok = false
			}
		}
		if !ok {
			skipped++
			continue
		}
		out[name] = r
	}
	if len(out) == 0 {
		t.Fatalf("no readable fixture starts with %s", prefix)
	}
	return out, skipped
}

// decoded is a state's entries, decoded.
type decoded struct {
	key, ns, value any
	ts             int64
}

func stateEntries(t *testing.T, k *Keyed, name string) []decoded {
	t.Helper()
	i := k.State(name)
	if i < 0 {
		return nil
	}
	m := k.States[i]
	var out []decoded
	it := k.Entries(context.Background(), i, keygroup.All(k.Operator.MaxParallelism))
	for it.Next() {
		e := it.Entry()
		d := decoded{ts: e.Timestamp}
		d.key = mustDecode(t, k.Key, e.Key)
		d.ns = mustDecode(t, m.Namespace, e.Namespace)
		if m.Kind != Timers {
			d.value = mustDecode(t, m.Stored, e.Value)
		}
		out = append(out, d)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustDecode(t *testing.T, s *typeser.Serializer, b []byte) any {
	t.Helper()
	v, err := s.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// tuple1 returns the field of a Tuple1 key.
func tuple1(t *testing.T, v any) int64 {
	t.Helper()
	r, ok := v.(typeser.RecordValue)
	if !ok || r.Class != "org.apache.flink.api.java.tuple.Tuple1" || len(r.Fields) != 1 {
		t.Fatalf("key %#v is not a Tuple1", v)
	}
	f, ok := r.Fields[0].Value.(int64)
	if !ok {
		t.Fatalf("Tuple1 field %#v is not a long", r.Fields[0].Value)
	}
	return f
}

// The job of StatefulJobSnapshotMigrationITCase (fixtures
// new-stateful-udf-migration-itcase-*): a source emits (i, i) for i in
// 0..3, keyed by field 0 (a Tuple1<Long> key). KeyedStateSettingFlatMap
// and the other keyed operators set ValueState<Long> "state-name" to f1;
// TimelyStatefulOperator keeps it under namespace f0 and registers per key
// an event-time timer at currentWatermark()+10, with no watermark yet
// Long.MIN_VALUE+10, and a processing-time timer, both in namespace f0
// (two such operators, so four timer services; before Flink 1.10 they are
// legacy raw keyed timers).
// The sources keep "Here be dragons!" and three more strings in list
// state "source-state".
func TestStatefulJobSnapshotMigrationContents(t *testing.T) {
	readers, skipped := readable(t, "new-stateful-udf-migration-itcase-")
	wantStrings := []string{"Here be dragons!", "Here be more dragons!", "Here be yet more dragons!", "Here be the mostest dragons!"}
	for name, r := range readers {
		var valueStates, timerServices, sources int
		for _, op := range r.Metadata().Operators {
			k, err := r.Keyed(context.Background(), op)
			if err == nil {
				for _, d := range stateEntries(t, k, "state-name") {
					f0 := tuple1(t, d.key)
					if d.value != f0 {
						t.Errorf("%s: state-name of key %d is %v", name, f0, d.value)
					}
					if ns, ok := d.ns.(int64); ok && ns != f0 {
						t.Errorf("%s: state-name of key %d in namespace %d", name, f0, ns)
					}
				}
				if es := stateEntries(t, k, "state-name"); es != nil {
					valueStates++
					if keys := distinctKeys(t, es); keys != "0,1,2,3" {
						t.Errorf("%s: state-name keys %s", name, keys)
					}
				}
				for _, svc := range []string{"_timer_state/event_timer", "_timer_state/processing_timer"} {
					es := stateEntries(t, k, svc)
					if es == nil {
						continue
					}
					timerServices++
					if keys := distinctKeys(t, es); keys != "0,1,2,3" || len(es) != 4 {
						t.Errorf("%s: %s: %d timers of keys %s", name, svc, len(es), keys)
					}
					for _, d := range es {
						if d.ns != tuple1(t, d.key) {
							t.Errorf("%s: %s timer of key %v in namespace %v", name, svc, d.key, d.ns)
						}
						if strings.Contains(svc, "event") && d.ts != math.MinInt64+10 {
							t.Errorf("%s: event timer at %d, want Long.MIN_VALUE+10", name, d.ts)
						}
					}
				}
			}
			states, _, err := r.OperatorStates(context.Background(), op)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, s := range states {
				if s.Name != "source-state" {
					continue
				}
				sources++
				var got []string
				for _, sub := range s.Subtasks {
					for _, e := range sub.Elements {
						got = append(got, mustDecode(t, s.Element, e).(string))
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(wantStrings) {
					t.Errorf("%s: source-state %q", name, got)
				}
			}
		}
		if valueStates == 0 || sources != 2 {
			t.Errorf("%s: %d operators with state-name, %d sources with source-state", name, valueStates, sources)
		}
		// Before Flink 1.10 heap timers (RocksDB's too, by default) are raw
		// keyed state; they are listed under the same names.
		if timerServices != 4 {
			t.Errorf("%s: %d timer services, want 4", name, timerServices)
		}
	}
	t.Logf("%d fixtures checked, %d skipped (changelog layout)", len(readers), skipped)
}

func distinctKeys(t *testing.T, es []decoded) string {
	seen := map[int64]bool{}
	for _, d := range es {
		seen[tuple1(t, d.key)] = true
	}
	var ks []string
	for k := range seen {
		ks = append(ks, fmt.Sprint(k))
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

// TypeSerializerSnapshotMigrationITCase: the source emits (i, i) for i in
// 0..3 at parallelism 1, keyed by field 0; TestMapFunction sets
// ValueState "testState", written by the test's own serializer (a
// LongSerializer), to f1.
func TestTypeSerializerSnapshotMigrationContents(t *testing.T) {
	readers, skipped := readable(t, "type-serializer-snapshot-migration-itcase-")
	for name, r := range readers {
		found := 0
		for _, op := range r.Metadata().Operators {
			k, err := r.Keyed(context.Background(), op)
			if err != nil {
				continue
			}
			es := stateEntries(t, k, "testState")
			if es == nil {
				continue
			}
			found++
			if len(es) != 4 || distinctKeys(t, es) != "0,1,2,3" {
				t.Errorf("%s: %d testState entries, keys %s", name, len(es), distinctKeys(t, es))
			}
			for _, d := range es {
				if d.value != tuple1(t, d.key) {
					t.Errorf("%s: testState of %v is %v", name, d.key, d.value)
				}
			}
		}
		if found != 1 {
			t.Errorf("%s: %d operators with testState", name, found)
		}
	}
	t.Logf("%d fixtures checked, %d skipped", len(readers), skipped)
}

// StatefulJobWBroadcastStateMigrationITCase (fixtures
// new-stateful-broadcast-udf-migration-itcase-*): the broadcast side puts
// (i, i) for i in 0..3 into broadcast states "broadcast-state-1" and
// "broadcast-state-2" of one operator and "broadcast-state-3" of another
// (Long keys and values; the second keyed by the key's string form).
func TestBroadcastStateMigrationContents(t *testing.T) {
	readers, skipped := readable(t, "new-stateful-broadcast-udf-migration-itcase-")
	for name, r := range readers {
		got := map[string]string{}
		for _, op := range r.Metadata().Operators {
			states, _, err := r.OperatorStates(context.Background(), op)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, s := range states {
				if s.Mode != Broadcast {
					continue
				}
				var kv []string
				for _, e := range s.Entries {
					k, v := mustDecode(t, s.Key, e.Key), mustDecode(t, s.Value, e.Value)
					if fmt.Sprint(k) != fmt.Sprint(v) {
						t.Errorf("%s: %s maps %v to %v", name, s.Name, k, v)
					}
					kv = append(kv, fmt.Sprint(k))
				}
				sort.Strings(kv)
				got[s.Name] = strings.Join(kv, ",")
			}
		}
		for _, s := range []string{"broadcast-state-1", "broadcast-state-2", "broadcast-state-3"} {
			if got[s] != "0,1,2,3" {
				t.Errorf("%s: %s holds keys %q", name, s, got[s])
			}
		}
	}
	t.Logf("%d fixtures checked, %d skipped", len(readers), skipped)
}

// listStates returns, per operator, its list states' decoded elements by
// subtask.
func listStates(t *testing.T, r *Reader) []map[string][][]any {
	var out []map[string][][]any
	for _, op := range r.Metadata().Operators {
		states, _, err := r.OperatorStates(context.Background(), op)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string][][]any{}
		for _, s := range states {
			if s.Mode == Broadcast {
				continue
			}
			subs := make([][]any, op.Parallelism)
			for _, sub := range s.Subtasks {
				for _, e := range sub.Elements {
					if sub.Index < len(subs) {
						subs[sub.Index] = append(subs[sub.Index], mustDecode(t, s.Element, e))
					}
				}
			}
			m[s.Name] = subs
		}
		out = append(out, m)
	}
	return out
}

// stringStoringMaps finds the operators whose "_default_" list state holds,
// on subtask i, just prefix+i: the ListCheckpointed StatefulStringStoringMap
// of Flink's operator restore tests. It returns the prefixes found.
func stringStoringMaps(t *testing.T, name string, r *Reader) []string {
	var found []string
	for _, m := range listStates(t, r) {
		subs, ok := m["_default_"]
		if !ok || len(subs) == 0 || len(subs[0]) != 1 {
			continue
		}
		first, _ := subs[0][0].(string)
		prefix := strings.TrimSuffix(first, "0")
		for i, els := range subs {
			if len(els) != 1 || els[0] != fmt.Sprintf("%s%d", prefix, i) {
				t.Errorf("%s: %s map: subtask %d holds %v", name, prefix, i, els)
			}
		}
		found = append(found, prefix)
	}
	sort.Strings(found)
	return found
}

// NonKeyedJob of AbstractNonKeyedOperatorRestoreTestBase (fixtures
// operatorstate/nonKeyed-*): three StatefulStringStoringMaps at
// parallelism 4 keep "first"+i, "second"+i and "third"+i on subtask i, in
// ListCheckpointed state (Java-serialized strings).
func TestNonKeyedOperatorRestoreContents(t *testing.T) {
	readers, skipped := readable(t, "nonKeyed-")
	for name, r := range readers {
		if got := strings.Join(stringStoringMaps(t, name, r), ","); got != "first,second,third" {
			t.Errorf("%s: string-storing maps %q", name, got)
		}
	}
	t.Logf("%d fixtures checked, %d skipped", len(readers), skipped)
}

// KeyedJob of AbstractKeyedOperatorRestoreTestBase (fixtures
// operatorstate/complexKeyed-*): (x, x) for x in 0..9, keyed by field 0
// into a count window whose function adds f1 to ListState "values"; then
// two StatefulStringStoringMaps, "first" and "second".
func TestKeyedOperatorRestoreContents(t *testing.T) {
	readers, skipped := readable(t, "complexKeyed-")
	for name, r := range readers {
		if got := strings.Join(stringStoringMaps(t, name, r), ","); got != "first,second" {
			t.Errorf("%s: string-storing maps %q", name, got)
		}
		windows := 0
		for _, op := range r.Metadata().Operators {
			k, err := r.Keyed(context.Background(), op)
			if err != nil {
				continue
			}
			es := stateEntries(t, k, "values")
			if es == nil {
				continue
			}
			windows++
			seen := map[int32]bool{}
			for _, d := range es {
				key, ok := d.key.(typeser.RecordValue)
				if !ok || len(key.Fields) != 1 {
					t.Fatalf("%s: key %v", name, d.key)
				}
				x := key.Fields[0].Value.(int32)
				if d.value != x || seen[x] {
					t.Errorf("%s: values of key %d: %v", name, x, d.value)
				}
				seen[x] = true
			}
			if len(seen) != 10 {
				t.Errorf("%s: %d keys in values, want 0..9", name, len(seen))
			}
		}
		if windows != 1 {
			t.Errorf("%s: %d window operators", name, windows)
		}
	}
	t.Logf("%d fixtures checked, %d skipped", len(readers), skipped)
}

// caseClass checks a CustomCaseClass(s, n) of the Scala migration tests and
// returns its fields.
func caseClass(t *testing.T, v any) (string, int64) {
	t.Helper()
	r, ok := v.(typeser.RecordValue)
	if !ok || r.Class != "org.apache.flink.api.scala.migration.CustomCaseClass" || len(r.Fields) != 2 {
		t.Fatalf("%#v is not a CustomCaseClass", v)
	}
	s, _ := r.Fields[0].Value.(string)
	n, _ := r.Fields[1].Value.(int64)
	return s, n
}

// The Scala StatefulJobSavepointMigrationITCase and
// StatefulJobWBroadcastStateMigrationITCase (fixtures
// stateful-scala-*): keys i in 0..3 (Scala Longs, Kryo-serialized); per key
// caseClassState = CustomCaseClass(i.toString, 2i), the same nested in
// caseClassWithNestingState and in the one-element collectionState,
// tryState = Success(CustomCaseClass(i.toString, 5i)), tryFailureState a
// Failure, optionState Some, optionNoneState None, eitherLeftState Left and
// eitherRightState Right((3i).toString), enumOneState THREE (it is set to
// ONE, then THREE); the source keeps CustomCaseClass("Here be dragons!",
// 123). The broadcast variant adds broadcast states of (i, i). The keys
// are Kryo-serialized boxed Longs, which decode and hash by value; the
// Failure's RuntimeException is Java-serialized inside Kryo, opaque but
// framed, so the heap layout is walked too.
func TestScalaMigrationContents(t *testing.T) {
	readers, skipped := readable(t, "stateful-scala-")
	for name, r := range readers {
		sources := 0
		for _, m := range listStates(t, r) {
			if subs, ok := m["sourceState"]; ok {
				sources++
				s, n := caseClass(t, subs[0][0])
				if s != "Here be dragons!" || n != 123 {
					t.Errorf("%s: sourceState %q %d", name, s, n)
				}
			}
		}
		// The broadcast variant has a second source of the same kind.
		if sources == 0 {
			t.Errorf("%s: no source state", name)
		}
		for _, op := range r.Metadata().Operators {
			k, err := r.Keyed(context.Background(), op)
			if err != nil || k.State("caseClassState") < 0 {
				continue
			}
			it := k.Entries(context.Background(), -1, keygroup.All(op.MaxParallelism))
			byKey := map[string]map[string]any{}
			for it.Next() {
				e := it.Entry()
				m := k.States[e.State]
				if m.Kind == Timers {
					continue
				}
				id := string(e.Key)
				if byKey[id] == nil {
					byKey[id] = map[string]any{}
				}
				byKey[id][m.Name] = mustDecode(t, m.Stored, e.Value)
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			if w := it.Warnings(); len(w) > 0 {
				t.Errorf("%s: parts not walked: %v", name, w)
				continue
			}
			var is []string
			for _, states := range byKey {
				s, n := caseClass(t, states["caseClassState"])
				is = append(is, s)
				if fmt.Sprint(n/2) != s || n%2 != 0 {
					t.Errorf("%s: caseClassState (%s, %d)", name, s, n)
				}
				nest := states["caseClassWithNestingState"].(typeser.RecordValue)
				if ns, nn := caseClass(t, nest.Fields[1].Value); fmt.Sprint(nest.Fields[0].Value) != s || ns != s || nn != n {
					t.Errorf("%s: caseClassWithNestingState %v", name, nest)
				}
				if coll := states["collectionState"].([]any); len(coll) != 1 {
					t.Errorf("%s: collectionState %v", name, coll)
				} else if cs, cn := caseClass(t, coll[0]); cs != s || cn != n {
					t.Errorf("%s: collectionState %v", name, coll)
				}
				if try := states["tryState"].(typeser.EitherValue); try.Left {
					t.Errorf("%s: tryState is a failure", name)
				} else if ts, tn := caseClass(t, try.Value); ts != s || tn != 5*(n/2) {
					t.Errorf("%s: tryState (%s, %d)", name, ts, tn)
				}
				if fail := states["tryFailureState"].(typeser.EitherValue); !fail.Left {
					t.Errorf("%s: tryFailureState is a success", name)
				}
				if os, on := caseClass(t, states["optionState"]); os != s || on != n {
					t.Errorf("%s: optionState (%s, %d)", name, os, on)
				}
				if v, ok := states["optionNoneState"]; !ok || v != nil {
					t.Errorf("%s: optionNoneState %v", name, v)
				}
				if left := states["eitherLeftState"].(typeser.EitherValue); !left.Left {
					t.Errorf("%s: eitherLeftState is right", name)
				}
				var i int64
				fmt.Sscan(s, &i)
				if right := states["eitherRightState"].(typeser.EitherValue); right.Left || right.Value != fmt.Sprint(3*i) {
					t.Errorf("%s: eitherRightState %v", name, right)
				}
				if states["enumOneState"] != "THREE" {
					t.Errorf("%s: enumOneState %v", name, states["enumOneState"])
				}
				if _, ok := states["enumThreeState"]; ok {
					t.Errorf("%s: enumThreeState was never set", name)
				}
			}
			sort.Strings(is)
			if strings.Join(is, ",") != "0,1,2,3" {
				t.Errorf("%s: keys %v", name, is)
			}
		}
	}
	t.Logf("%d fixtures checked, %d skipped", len(readers), skipped)
}

// UnifiedSinkMigrationITCase (fixture unified-sink-migration-test): a
// Sink V1 with uid 1c4ec0f9-… whose writer keeps WRITER_STATE 1, whose
// committers keep COMMITTER_STATE 2 and the global committable "3", fed
// by env.fromSequence(1, Long.MAX_VALUE).
func TestUnifiedSinkMigrationContents(t *testing.T) {
	readers, _ := readable(t, "savepoint-7bd90b")
	r := readers["savepoint-7bd90b-3a2cda6957cb"]
	writer, err := r.Operator("1c4ec0f9-2d96-46e9-99ea-45e8c3df5202")
	if err != nil {
		t.Fatal(err)
	}
	states, _, err := r.OperatorStates(context.Background(), writer)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range states {
		if s.Name != "writer_raw_states" {
			continue
		}
		found = true
		v, p, err := DecodeVersioned(mustDecode(t, s.Element, s.Subtasks[0].Elements[0]).([]byte))
		if err != nil || v != 0 || fmt.Sprintf("%x", p) != "00000001" {
			t.Errorf("writer state: version %d, % x, %v", v, p, err)
		}
	}
	if !found {
		t.Errorf("the operator of the sink's uid has no writer state")
	}
	var splits []SourceSplit
	for _, op := range r.Metadata().Operators {
		states, _, err := r.OperatorStates(context.Background(), op)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range states {
			if s.Name != SourceReaderState {
				continue
			}
			splits = append(splits, s.Subtasks[0].Splits...)
		}
	}
	if len(splits) != 1 || splits[0].NumberSequence == nil || splits[0].NumberSequence.To != math.MaxInt64 || splits[0].NumberSequence.From < 1 {
		t.Errorf("source splits %+v", splits)
	} else {
		t.Logf("the sequence source had reached %d", splits[0].NumberSequence.From)
	}
}

// StatefulStreamingJob of flink-end-to-end-tests/flink-state-evolution-test
// (fixtures savepoints/1.6 and 1.7): every record is keyed to 0, and the
// map with uid "my-map" keeps an Avro Address {555, "555 W 42nd St", "New
// York", "NY", "10036"} in "test-state", Tuple2("19", 19) in
// "tuple-state" and Left("255") in "either-state"; an address that has the
// field appno must have the job's expected default "123".
func TestStateEvolutionContents(t *testing.T) {
	root, _ := inventory(t)
	for _, v := range []string{"1.6", "1.7"} {
		r, err := Open(context.Background(), storage.LocalDir(filepath.Join(root, "flink-end-to-end-tests/flink-state-evolution-test/savepoints", v)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		op, err := r.Operator("my-map")
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		k, err := r.Keyed(context.Background(), op)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		got := map[string]string{}
		for _, name := range []string{"test-state", "tuple-state", "either-state"} {
			es := stateEntries(t, k, name)
			if len(es) != 1 || es[0].key != int32(0) {
				t.Fatalf("%s: %s: %d entries %v", v, name, len(es), es)
			}
			if addr, ok := es[0].value.(map[string]any); ok {
				// The 1.6 savepoint's schema already has the field the job
				// evolves to, appno, with its default "123".
				if appno, ok := addr["appno"]; ok && appno != "123" {
					t.Errorf("%s: appno %v", v, appno)
				}
				delete(addr, "appno")
			}
			got[name] = fmt.Sprint(es[0].value)
		}
		want := map[string]string{
			"test-state":   "map[city:New York num:555 state:NY street:555 W 42nd St zip:10036]",
			"tuple-state":  "{org.apache.flink.api.java.tuple.Tuple2  [{f0 19} {f1 19}]}",
			"either-state": "{true 255}",
		}
		for name, w := range want {
			if got[name] != w {
				t.Errorf("%s: %s = %s, want %s", v, name, got[name], w)
			}
		}
	}
}

// TimersSavepointITCase (fixture legacy-raw-state-heap-timers-rocks-db-1.12):
// the key 0 registers an event-time timer at 2 in RocksDB's timer state;
// the source keeps its emittedCount, 1, in list state.
func TestTimersSavepointContents(t *testing.T) {
	root, _ := inventory(t)
	r, err := Open(context.Background(), storage.LocalDir(filepath.Join(root, "flink-tests/src/test/resources/legacy-raw-state-heap-timers-rocks-db-1.12")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var timers []decoded
	var counts []any
	for _, op := range r.Metadata().Operators {
		if k, err := r.Keyed(context.Background(), op); err == nil {
			timers = append(timers, stateEntries(t, k, "_timer_state/event_user-timers")...)
			if es := stateEntries(t, k, "_timer_state/processing_user-timers"); len(es) != 0 {
				t.Errorf("processing timers %v", es)
			}
		}
	}
	for _, m := range listStates(t, r) {
		for _, sub := range m["emittedCount"] {
			counts = append(counts, sub...)
		}
	}
	if len(timers) != 1 || timers[0].key != int32(0) || timers[0].ts != 2 || timers[0].ns != (typeser.VoidNamespace{}) {
		t.Errorf("event timers %+v", timers)
	}
	if fmt.Sprint(counts) != fmt.Sprint([]any{int32(1)}) {
		t.Errorf("emittedCount %v", counts)
	}
}

// LegacyStatefulJobSavepointMigrationITCase (fixtures
// stateful-udf-migration-itcase-flink1.4-*): the earlier form of the job of
// TestStatefulJobSnapshotMigrationContents, with one TimelyStatefulOperator
// whose timer service "timer" holds, per key, an event timer at
// currentWatermark()+10 (no watermark yet: Long.MIN_VALUE+10) and a
// processing-time timer, in the key's namespace.
func TestLegacyStatefulJobContents(t *testing.T) {
	readers, skipped := readable(t, "stateful-udf-migration-itcase-")
	for name, r := range readers {
		valueStates, timers := 0, 0
		for _, op := range r.Metadata().Operators {
			k, err := r.Keyed(context.Background(), op)
			if err != nil {
				continue
			}
			if es := stateEntries(t, k, "state-name"); es != nil {
				valueStates++
				if keys := distinctKeys(t, es); keys != "0,1,2,3" {
					t.Errorf("%s: state-name keys %s", name, keys)
				}
				for _, d := range es {
					if d.value != tuple1(t, d.key) {
						t.Errorf("%s: state-name of %v is %v", name, d.key, d.value)
					}
				}
			}
			for _, svc := range rawTimerNames("timer") {
				es := stateEntries(t, k, svc)
				if es == nil {
					continue
				}
				timers++
				if len(es) != 4 || distinctKeys(t, es) != "0,1,2,3" {
					t.Errorf("%s: %s: %d timers", name, svc, len(es))
				}
				for _, d := range es {
					if d.ns != tuple1(t, d.key) || strings.Contains(svc, "event") && d.ts != math.MinInt64+10 {
						t.Errorf("%s: %s timer %+v", name, svc, d)
					}
				}
			}
		}
		if valueStates < 3 || timers != 2 {
			t.Errorf("%s: %d operators with state-name, %d timer services", name, valueStates, timers)
		}
	}
	t.Logf("%d fixtures checked, %d skipped", len(readers), skipped)
}
