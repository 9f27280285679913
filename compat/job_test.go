package compat

import (
	"strings"
	"testing"
	"time"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

func snap(k serializers.Kind, args ...serializers.Snapshot) serializers.Snapshot {
	return serializers.Snapshot{Kind: k, Args: args}
}

// savedJob is a keyed operator with a state and a timer service, and a
// non-keyed one with operator and broadcast state.
func savedJob() *savepoint.Metadata {
	void := snap(serializers.KindVoid)
	week := ttl.New(7 * 24 * time.Hour)
	return &savepoint.Metadata{Operators: []savepoint.Operator{
		{UID: "keyed", Parallelism: 2, MaxParallelism: 128, KeyHash: keygroup.Murmur3, Key: snap(serializers.KindString),
			States: []savepoint.KeyedState{{Name: "counts", Kind: savepoint.Map, Namespace: void, MapKey: snap(serializers.KindString), Value: snap(serializers.KindInt64), TTL: &week}},
			Timers: []savepoint.TimerService{{Name: "timers", Namespace: void}}},
		{UID: "plain", Parallelism: 2, MaxParallelism: 128,
			OperatorStates:  []savepoint.OperatorState{{Name: "offsets", Distribution: savepoint.EvenSplit, Element: snap(serializers.KindInt64)}},
			BroadcastStates: []savepoint.BroadcastState{{Name: "rules", Key: snap(serializers.KindString), Value: snap(serializers.KindString)}}},
	}}
}

// declare is the saved job as a job declares it, changed by change.
func declare(change func(ops []Declared)) []Declared {
	m := savedJob()
	ops := make([]Declared, len(m.Operators))
	for i, op := range m.Operators {
		ops[i] = Declared{Operator: op}
	}
	change(ops)
	return ops
}

func TestCheckJob(t *testing.T) {
	for _, c := range []struct {
		name    string
		change  func(ops []Declared)
		allow   bool
		where   string // Finding.Where of the finding that is not as is
		verdict Verdict
		reason  string
	}{
		{"key hash", func(ops []Declared) { ops[0].KeyHash = 9 }, false, `operator "keyed"`, Incompatible, "the savepoint's keys are hashed with"},
		{"no longer keyed", func(ops []Declared) { ops[0].Key = serializers.Snapshot{} }, false, `operator "keyed"`, Incompatible, "keyed in the savepoint but not in the job"},
		{"now keyed", func(ops []Declared) { ops[1].Key, ops[1].KeyHash = snap(serializers.KindString), keygroup.Murmur3 }, false, "", 0, ""},
		{"map key changed", func(ops []Declared) { ops[0].States[0].MapKey = snap(serializers.KindBytes) }, false, `operator "keyed" state "counts"`, Incompatible, "map key serializer changed: serializer changed from string to bytes"},
		{"TTL turned off", func(ops []Declared) { ops[0].States[0].TTL = nil }, false, `operator "keyed" state "counts"`, AfterMigration, "TTL turned off"},
		{"TTL changed", func(ops []Declared) { c := ttl.New(time.Hour); ops[0].States[0].TTL = &c }, false, "", 0, ""},
		{"timer namespace", func(ops []Declared) { ops[0].Timers[0].Namespace = snap(serializers.KindWindow) }, false, `operator "keyed" timer service "timers"`, Incompatible, "namespace serializer changed"},
		{"timer service gone", func(ops []Declared) { ops[0].Timers = nil }, false, `operator "keyed" timer service "timers"`, Incompatible, "no longer in the job"},
		{"timer service gone, allowed", func(ops []Declared) { ops[0].Timers = nil }, true, `operator "keyed" timer service "timers"`, Dropped, "not restored"},
		{"operator state element", func(ops []Declared) { ops[1].OperatorStates[0].Element = snap(serializers.KindInt32) }, false, `operator "plain" operator state "offsets"`, Incompatible, "element serializer changed: serializer changed from int64 to int32"},
		{"operator state distribution", func(ops []Declared) { ops[1].OperatorStates[0].Distribution = savepoint.Union }, false, "", 0, ""},
		{"operator state gone", func(ops []Declared) { ops[1].OperatorStates = nil }, false, `operator "plain" operator state "offsets"`, Incompatible, "no longer in the job"},
		{"broadcast key", func(ops []Declared) { ops[1].BroadcastStates[0].Key = snap(serializers.KindBytes) }, false, `operator "plain" broadcast state "rules"`, Incompatible, "key serializer changed"},
		{"broadcast value", func(ops []Declared) { ops[1].BroadcastStates[0].Value = snap(serializers.KindBytes) }, false, `operator "plain" broadcast state "rules"`, Incompatible, "value serializer changed"},
		{"broadcast added", func(ops []Declared) {
			ops[1].BroadcastStates = append(ops[1].BroadcastStates, savepoint.BroadcastState{Name: "more", Key: snap(serializers.KindString), Value: snap(serializers.KindString)})
		}, false, `operator "plain" broadcast state "more"`, New, ""},
		{"operator added", func(ops []Declared) { ops[1].UID = "other" }, true, `operator "plain"`, Dropped, "not restored"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := CheckJob(savedJob(), declare(c.change), Options{AllowNonRestoredState: c.allow})
			var changed []Finding
			for _, f := range fs {
				if f.Verdict != AsIs {
					changed = append(changed, f)
				}
			}
			if c.where == "" {
				if len(changed) > 0 {
					t.Fatalf("want everything as is, got %v", changed)
				}
				return
			}
			if len(changed) == 0 {
				t.Fatal("nothing changed")
			}
			f := changed[0]
			if f.Where() != c.where || f.Verdict != c.verdict || !strings.Contains(f.Reason, c.reason) {
				t.Fatalf("got %s, want %s: %v: %s", &f, c.where, c.verdict, c.reason)
			}
		})
	}
}

// The decision on one state is the serializers' on its stored value, with
// the reason about the values alone when TTL stays.
func TestCheckStateReason(t *testing.T) {
	avro := func(schema string) serializers.Snapshot {
		return serializers.Snapshot{Kind: serializers.KindAvro, Schema: schema}
	}
	week := ttl.New(7 * 24 * time.Hour)
	old := savepoint.KeyedState{Name: "s", Kind: savepoint.Value, Namespace: snap(serializers.KindVoid), Value: avro(`"int"`), TTL: &week}
	new := old
	new.Value = avro(`"long"`)
	if c := CheckState(&old, &new); c.Verdict != serializers.CompatibleAfterMigration || c.Reason != "int promoted to long" {
		t.Fatalf("%v", c)
	}
	new.TTL = nil
	if c := CheckState(&old, &new); c.Verdict != serializers.CompatibleAfterMigration || c.Reason != "TTL turned off; int promoted to long" {
		t.Fatalf("%v", c)
	}
	conv, err := Converter(&old, &new, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, err := conv(nil, []byte{0, 0, 0, 0, 0, 0, 0, 9, 0x0a})
	if err != nil || string(out) != "\x0a" {
		t.Fatalf("converted to %x, %v", out, err)
	}
}

func TestVerdictNames(t *testing.T) {
	for v, want := range map[Verdict]string{AsIs: "compatible as is", AfterMigration: "compatible after migration", Incompatible: "incompatible", New: "new", Dropped: "dropped", 0: "Verdict(0)"} {
		if got, _ := v.MarshalText(); string(got) != want {
			t.Errorf("%d: %q", v, got)
		}
	}
}
