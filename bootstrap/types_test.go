package bootstrap_test

import (
	"bytes"
	"context"
	"iter"
	"math"
	"math/big"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/stateproc/stateproc/bootstrap"
	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// everything has a field of every Avro type and logical type, and every
// form of union, that export maps.
const everything = `{"type":"record","name":"Everything","namespace":"t","fields":[
 {"name":"s","type":"string"},
 {"name":"i","type":"int"},
 {"name":"l","type":"long"},
 {"name":"f","type":"float"},
 {"name":"d","type":"double"},
 {"name":"b","type":"boolean"},
 {"name":"raw","type":"bytes"},
 {"name":"fx","type":{"type":"fixed","name":"Four","size":4}},
 {"name":"color","type":{"type":"enum","name":"Color","symbols":["RED","GREEN","BLUE"]}},
 {"name":"nums","type":{"type":"array","items":"long"}},
 {"name":"attrs","type":{"type":"map","values":"string"}},
 {"name":"opt","type":["null","string"]},
 {"name":"late","type":["string","null"]},
 {"name":"alone","type":["long"]},
 {"name":"nothing","type":["null"]},
 {"name":"either","type":["string","long"]},
 {"name":"maybe","type":["null","string","Color"]},
 {"name":"twins","type":["null",{"type":"record","name":"A","namespace":"x","fields":[{"name":"v","type":"int"}]},
   {"type":"record","name":"A","namespace":"y","fields":[{"name":"w","type":"string"}]}]},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"tsu","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"local","type":{"type":"long","logicalType":"local-timestamp-millis"}},
 {"name":"localu","type":{"type":"long","logicalType":"local-timestamp-micros"}},
 {"name":"day","type":{"type":"int","logicalType":"date"}},
 {"name":"tm","type":{"type":"int","logicalType":"time-millis"}},
 {"name":"tmu","type":{"type":"long","logicalType":"time-micros"}},
 {"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
 {"name":"big","type":{"type":"fixed","name":"Big","size":20,"logicalType":"decimal","precision":40,"scale":5}},
 {"name":"tiny","type":{"type":"fixed","name":"One","size":1,"logicalType":"decimal","precision":2,"scale":0}},
 {"name":"id","type":{"type":"string","logicalType":"uuid"}},
 {"name":"wait","type":{"type":"fixed","name":"Wait","size":12,"logicalType":"duration"}},
 {"name":"inner","type":{"type":"record","name":"Inner","fields":[{"name":"x","type":"int"},{"name":"tags","type":{"type":"array","items":"string"}}]}},
 {"name":"optInner","type":["null","Inner"]},
 {"name":"points","type":{"type":"array","items":{"type":"record","name":"Point","fields":[{"name":"x","type":"double"},{"name":"y","type":"double"}]}}},
 {"name":"nested","type":{"type":"map","values":{"type":"array","items":"Inner"}}},
 {"name":"counts","type":{"type":"map","values":{"type":"map","values":"long"}}}
]}`

const (
	tenantKey = `{"type":"record","name":"TenantKey","fields":[{"name":"tenant","type":"string"},{"name":"shard","type":"int"}]}`
	split     = `{"type":"record","name":"Split","fields":[{"name":"split","type":"int"},{"name":"offset","type":"long"}]}`
	rule      = `{"type":"record","name":"Rule","fields":[{"name":"limit","type":"long"},{"name":"mode","type":{"type":"enum","name":"Mode","symbols":["SOFT","HARD"]}}]}`
)

// testNow is the fixtures' time: 2023-11-14T22:13:20Z.
const testNow = 1_700_000_000_000

const (
	hour = int64(time.Hour / time.Millisecond)
	day  = 24 * hour
)

func snap(k serializers.Kind, args ...serializers.Snapshot) serializers.Snapshot {
	return serializers.Snapshot{Kind: k, Args: args}
}

func avroSnap(schema string) serializers.Snapshot {
	return serializers.Snapshot{Kind: serializers.KindAvro, Schema: schema}
}

var (
	void   = snap(serializers.KindVoid)
	str    = snap(serializers.KindString)
	i64    = snap(serializers.KindInt64)
	window = snap(serializers.KindWindow)
)

// typesJob has a state of every shape and serializer kind.
func typesJob() savepoint.Manifest {
	oneDay, week := ttl.New(24*time.Hour), ttl.New(7*24*time.Hour)
	keyed := func(uid string, key serializers.Snapshot, states []savepoint.KeyedState, timers ...savepoint.TimerService) savepoint.Operator {
		return savepoint.Operator{UID: uid, Name: uid, Parallelism: 2, MaxParallelism: 128, KeyHash: keygroup.Murmur3, Key: key, States: states, Timers: timers}
	}
	value := func(name string, v serializers.Snapshot) savepoint.KeyedState {
		return savepoint.KeyedState{Name: name, Kind: savepoint.Value, Namespace: void, Value: v}
	}
	everythingState := value("everything", avroSnap(everything))
	everythingState.TTL = &oneDay
	return savepoint.NewManifest("types", []savepoint.Operator{
		keyed("types", str, []savepoint.KeyedState{
			everythingState,
			value("flags", snap(serializers.KindBool)),
			value("small", snap(serializers.KindInt32)),
			value("ratio", snap(serializers.KindFloat32)),
			value("share", snap(serializers.KindFloat64)),
			value("blob", snap(serializers.KindBytes)),
			value("seen", snap(serializers.KindTimestamp)),
			value("maybe", snap(serializers.KindNullable, str)),
			value("scores", snap(serializers.KindList, i64)),
			value("labels", snap(serializers.KindMap, str, snap(serializers.KindInt32))),
			value("stamped", snap(serializers.KindList, snap(serializers.KindTTL, str))),
			value("spans", snap(serializers.KindMap, i64, window)),
			{Name: "events", Kind: savepoint.List, Namespace: void, Value: str},
			{Name: "clicks", Kind: savepoint.Reducing, Namespace: window, Value: i64},
			{Name: "sums", Kind: savepoint.Aggregating, Namespace: i64, Value: i64},
			{Name: "counts", Kind: savepoint.Map, Namespace: void, MapKey: str, Value: i64, TTL: &week},
		}, savepoint.TimerService{Name: "fire", Namespace: void}, savepoint.TimerService{Name: "window-end", Namespace: window}),
		keyed("byrecord", avroSnap(tenantKey), []savepoint.KeyedState{value("total", i64)}),
		keyed("byid", i64, []savepoint.KeyedState{{Name: "names", Kind: savepoint.Value, Namespace: str, Value: str}}),
		{
			UID: "source", Name: "Source", Parallelism: 2, MaxParallelism: 128,
			OperatorStates: []savepoint.OperatorState{
				{Name: "offsets", Distribution: savepoint.EvenSplit, Element: avroSnap(split)},
				{Name: "seen", Distribution: savepoint.Union, Element: str},
			},
			BroadcastStates: []savepoint.BroadcastState{{Name: "rules", Key: str, Value: avroSnap(rule)}},
		},
	})
}

// seq yields entries.
func seq(es ...bootstrap.Entry) iter.Seq2[bootstrap.Entry, error] {
	return func(yield func(bootstrap.Entry, error) bool) {
		for _, e := range es {
			if !yield(e, nil) {
				return
			}
		}
	}
}

func winNS(start, end int64) serializers.TimeWindow {
	return serializers.TimeWindow{Start: start, End: end}
}

// addTypes adds the entries of the types job to b, from Go values.
func addTypes(t *testing.T, b *bootstrap.Builder) {
	t.Helper()
	ctx := context.Background()
	ts := time.UnixMilli(testNow).UTC()
	full := map[string]any{
		"s": "héllo", "i": int32(-7), "l": int64(1) << 40, "f": float32(1.5), "d": -2.25, "b": true,
		"raw": []byte{0, 255}, "fx": [4]byte{1, 2, 3, 4}, "color": "GREEN",
		"nums": []any{int64(1), int64(-2), int64(3)}, "attrs": map[string]any{"b": "2", "a": "1"},
		"opt": "here", "late": nil, "alone": int64(5), "nothing": nil, "either": "text", "maybe": map[string]any{"t.Color": "BLUE"},
		"twins": map[string]any{"y.A": map[string]any{"w": "why"}},
		"ts":    ts, "tsu": ts.Add(123 * time.Microsecond), "local": ts, "localu": ts.Add(7 * time.Microsecond),
		"day": time.Date(2023, 11, 14, 0, 0, 0, 0, time.UTC),
		"tm":  90 * time.Minute, "tmu": 90*time.Minute + 5*time.Microsecond,
		"price": big.NewRat(-12345, 100), "big": new(big.Rat).SetFrac(new(big.Int).Exp(big.NewInt(10), big.NewInt(36), nil), big.NewInt(100000)),
		"tiny": big.NewRat(-99, 1),
		"id":   "0b7f8a9e-3f0c-4d5e-9a1b-2c3d4e5f6a7b", "wait": avro.LogicalDuration{Months: 1, Days: 2, Milliseconds: 3},
		"inner": map[string]any{"x": int32(5), "tags": []any{"a", "b"}}, "optInner": map[string]any{"t.Inner": map[string]any{"x": int32(6), "tags": []any{}}},
		"points": []any{map[string]any{"x": 0.5, "y": -0.5}},
		"nested": map[string]any{"k": []any{map[string]any{"x": int32(1), "tags": []any{"z"}}}},
		"counts": map[string]any{"outer": map[string]any{"b": int64(2), "a": int64(1)}},
	}
	sparse := map[string]any{
		"s": "", "i": int32(0), "l": int64(0), "f": float32(math.Inf(-1)), "d": math.NaN(), "b": false,
		"raw": []byte{}, "fx": [4]byte{}, "color": "RED", "nums": []any{}, "attrs": map[string]any{},
		"opt": nil, "late": "late", "alone": int64(-1), "nothing": nil, "either": int64(42), "maybe": nil,
		"twins": map[string]any{"x.A": map[string]any{"v": int32(-1)}},
		"ts":    time.UnixMilli(-86_400_000).UTC(), "tsu": time.UnixMilli(0).UTC(), "local": time.UnixMilli(0).UTC(), "localu": time.UnixMilli(0).UTC(),
		"day": time.Date(1969, 7, 20, 0, 0, 0, 0, time.UTC),
		"tm":  time.Duration(0), "tmu": time.Duration(0), "price": big.NewRat(-128, 100), "big": big.NewRat(-1, 100000), "tiny": big.NewRat(0, 1),
		"id": "", "wait": avro.LogicalDuration{}, "inner": map[string]any{"x": int32(0), "tags": []any{}}, "optInner": nil, "points": []any{},
		"nested": map[string]any{}, "counts": map[string]any{},
	}
	add := func(uid, name string, es ...bootstrap.Entry) {
		t.Helper()
		if err := b.Add(ctx, uid, name, seq(es...)); err != nil {
			t.Fatalf("%s/%s: %v", uid, name, err)
		}
	}
	add("types", "everything",
		bootstrap.Entry{Key: "full", Value: full, LastModified: testNow - 2*hour, HasLastModified: true},
		bootstrap.Entry{Key: "sparse", Value: sparse})
	add("types", "flags", bootstrap.Entry{Key: "a", Value: true}, bootstrap.Entry{Key: "b", Value: false})
	add("types", "small", bootstrap.Entry{Key: "a", Value: int32(-2)}, bootstrap.Entry{Key: "b", Value: int32(math.MaxInt32)})
	add("types", "ratio", bootstrap.Entry{Key: "a", Value: float32(0.25)}, bootstrap.Entry{Key: "nan", Value: float32(math.NaN())})
	add("types", "share", bootstrap.Entry{Key: "a", Value: 1e100}, bootstrap.Entry{Key: "inf", Value: math.Inf(1)})
	add("types", "blob", bootstrap.Entry{Key: "a", Value: []byte{0xde, 0xad}}, bootstrap.Entry{Key: "empty", Value: []byte{}})
	add("types", "seen", bootstrap.Entry{Key: "a", Value: time.UnixMilli(testNow).UTC()})
	add("types", "maybe", bootstrap.Entry{Key: "a", Value: "x"}, bootstrap.Entry{Key: "b", Value: nil})
	add("types", "scores", bootstrap.Entry{Key: "a", Value: []any{int64(3), int64(1)}}, bootstrap.Entry{Key: "b", Value: []any{}})
	add("types", "labels", bootstrap.Entry{Key: "a", Value: []serializers.MapEntry{{Key: "y", Value: int32(2)}, {Key: "x", Value: int32(1)}}})
	add("types", "stamped", bootstrap.Entry{Key: "a", Value: []any{serializers.TTLValue[any]{LastModified: testNow, Value: "v"}}})
	add("types", "spans", bootstrap.Entry{Key: "a", Value: []serializers.MapEntry{{Key: int64(-3), Value: winNS(0, 10)}, {Key: int64(9), Value: winNS(5, 6)}}})
	add("types", "events",
		bootstrap.Entry{Key: "alice", Value: "login"}, bootstrap.Entry{Key: "bob", Value: "login"},
		bootstrap.Entry{Key: "alice", Value: "view"}, bootstrap.Entry{Key: "alice", Value: "buy"})
	add("types", "clicks",
		bootstrap.Entry{Key: "alice", Namespace: winNS(60_000, 120_000), Value: int64(7)},
		bootstrap.Entry{Key: "alice", Namespace: winNS(0, 60_000), Value: int64(5)})
	add("types", "sums", bootstrap.Entry{Key: "alice", Namespace: int64(-1), Value: int64(1)}, bootstrap.Entry{Key: "alice", Namespace: int64(1), Value: int64(2)})
	for i, c := range []string{"music", "books", "games"} {
		add("types", "counts", bootstrap.Entry{Key: "alice", MapKey: c, Value: int64(i + 1), LastModified: testNow - int64(i+6)*day, HasLastModified: true})
	}
	add("types", "fire", bootstrap.Entry{Key: "alice", Timestamp: testNow + hour}, bootstrap.Entry{Key: "alice", Timestamp: testNow - hour})
	add("types", "window-end", bootstrap.Entry{Key: "alice", Namespace: winNS(0, 60_000), Timestamp: 59_999})
	add("byrecord", "total", bootstrap.Entry{Key: map[string]any{"tenant": "acme", "shard": int32(3)}, Value: int64(1500)})
	add("byid", "names", bootstrap.Entry{Key: int64(42), Namespace: "ns", Value: "answer"}, bootstrap.Entry{Key: int64(-42), Namespace: "", Value: ""})
	add("source", "offsets",
		bootstrap.Entry{Subtask: 0, Value: map[string]any{"split": int32(0), "offset": int64(100)}},
		bootstrap.Entry{Subtask: 1, Value: map[string]any{"split": int32(1), "offset": int64(201)}},
		bootstrap.Entry{Subtask: 0, Value: map[string]any{"split": int32(2), "offset": int64(102)}})
	add("source", "seen", bootstrap.Entry{Subtask: 0, Value: "x"}, bootstrap.Entry{Subtask: 1, Value: "x"})
	add("source", "rules",
		bootstrap.Entry{Key: "us", Value: map[string]any{"limit": int64(50), "mode": "SOFT"}},
		bootstrap.Entry{Key: "eu", Value: map[string]any{"limit": int64(100), "mode": "HARD"}})
}

// typesSavepoint writes the savepoint of the types job from Go values.
func typesSavepoint(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "types")
	b, err := bootstrap.New(typesJob(), bootstrap.Options{Out: out, Now: testNow, ID: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	addTypes(t, b)
	if _, err := b.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

// equalOperatorState fails unless two savepoints hold the same operator
// state, subtask by subtask.
func equalOperatorState(t *testing.T, a, b savepoint.Source) {
	t.Helper()
	for i, op := range a.Metadata().Operators {
		other := b.Metadata().Operators[i]
		for j, s := range op.OperatorStates {
			if !slices.EqualFunc(s.Subtasks, other.OperatorStates[j].Subtasks, func(x, y [][]byte) bool { return slices.EqualFunc(x, y, bytes.Equal) }) {
				t.Errorf("%s: operator state %s differs: %q and %q", op.UID, s.Name, s.Subtasks, other.OperatorStates[j].Subtasks)
			}
		}
	}
}

// The savepoint built from Go values holds what the values encode to, in
// the order the format gives: checked by decoding it back.
func TestGoValues(t *testing.T) {
	sp := sptest.Open(t, typesSavepoint(t))
	m := sp.Metadata()
	decoded := func(uid, name string) []savepoint.Decoded {
		t.Helper()
		op, _ := m.Operator(uid)
		st, _ := op.State(name)
		d, err := savepoint.NewDecoder(op, st)
		if err != nil {
			t.Fatal(err)
		}
		var out []savepoint.Decoded
		for _, e := range sptest.Entries(t, sp, uid, name) {
			v, err := d.Decode(&e)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		return out
	}
	var events []string
	for _, d := range decoded("types", "events") {
		events = append(events, d.Key.(string)+":"+d.Value.(string))
	}
	// alice's elements keep the order they were added in, bob's are apart.
	if want := []string{"alice:login", "alice:view", "alice:buy", "bob:login"}; !slices.Equal(events, want) && !slices.Equal(events, append(want[3:], want[:3]...)) {
		t.Errorf("events: %v", events)
	}
	counts := decoded("types", "counts")
	if len(counts) != 3 || counts[0].MapKey != "books" || counts[0].Value != int64(2) || counts[0].LastModified != testNow-7*day {
		t.Errorf("counts: %+v", counts)
	}
	every := map[any]savepoint.Decoded{}
	for _, d := range decoded("types", "everything") {
		every[d.Key] = d
	}
	if len(every) != 2 || every["full"].LastModified != testNow-2*hour || every["sparse"].LastModified != testNow {
		t.Errorf("everything's TTL times: %+v", every)
	}
	if rec := every["full"].Value.(map[string]any); rec["s"] != "héllo" || rec["color"] != "GREEN" {
		t.Errorf("everything[full] = %v", rec)
	}
	clicks := decoded("types", "clicks")
	if len(clicks) != 2 || clicks[0].Namespace != winNS(0, 60_000) || clicks[0].Value != int64(5) {
		t.Errorf("clicks: %+v", clicks)
	}
	timers := sptest.Timers(t, sp, "types", "fire")
	if len(timers) != 2 || timers[0].Timestamp != testNow-hour || timers[1].Timestamp != testNow+hour {
		t.Errorf("timers: %+v", timers)
	}
	src, _ := m.Operator("source")
	if got := src.OperatorStates[0].Subtasks; len(got) != 2 || len(got[0]) != 2 || len(got[1]) != 1 {
		t.Errorf("offsets by subtask: %d", len(got))
	}
	if rules := src.BroadcastStates[0].Entries; len(rules) != 2 || string(rules[0].Key) != "eu" {
		t.Errorf("rules: %q", rules)
	}
}

// Every mapping of export comes back: exporting the types savepoint in
// each format and loading it gives the same keyed, operator and broadcast
// state, byte for byte.
func TestTypesRoundTrip(t *testing.T) {
	sp := typesSavepoint(t)
	orig := sptest.Open(t, sp)
	for _, f := range []export.Format{export.Parquet, export.Arrow, export.JSONL} {
		t.Run(string(f), func(t *testing.T) {
			dir := exportTo(t, sp, export.Options{Format: f, Now: ptr(int64(testNow))})
			out := filepath.Join(t.TempDir(), "loaded")
			sum, err := load(t, typesJob(), dir, bootstrap.Options{Out: out, Now: 1, ID: 7})
			if err != nil {
				t.Fatal(err)
			}
			got := sptest.Open(t, out)
			sptest.EqualKeyedState(t, orig, got)
			equalOperatorState(t, orig, got)
			if sum.Rows == 0 {
				t.Fatal("no rows")
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
