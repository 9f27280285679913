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

// What a restore accepts as it is, it still names: a check that says
// nothing about a TTL of another length hides a change of behaviour.
func TestAcceptedChangesAreNamed(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(ops []Declared)
		where  string
		reason string
	}{
		{"TTL length", func(ops []Declared) { c := ttl.New(2 * time.Hour); ops[0].States[0].TTL = &c }, `operator "keyed" state "counts"`, "TTL changed from 168h to 2h"},
		{"TTL rules", func(ops []Declared) {
			c := ttl.New(7 * 24 * time.Hour)
			c.Update, c.Visibility, c.CleanupFullSnapshot, c.CleanupIncremental, c.SweepBudget = ttl.OnReadAndWrite, ttl.ReturnExpiredIfNotCleanedUp, true, 10, 1000
			ops[0].States[0].TTL = &c
		}, `operator "keyed" state "counts"`, "TTL update type changed from OnCreateAndWrite to OnReadAndWrite; TTL visibility changed from NeverReturnExpired to ReturnExpiredIfNotCleanedUp; " +
			"TTL cleanup in full snapshots turned on; TTL incremental cleanup changed from 0 to 10 entries per access; TTL sweep budget changed from 0 to 1000 entries per step"},
		{"parallelism", func(ops []Declared) { ops[0].Parallelism = 4 }, `operator "keyed"`, "parallelism changed from 2 to 4"},
		{"redistribution", func(ops []Declared) { ops[1].OperatorStates[0].Distribution = savepoint.Union }, `operator "plain" operator state "offsets"`, "redistribution changed from even-split to union"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []Finding
			for _, f := range CheckJob(savedJob(), declare(c.change), Options{}) {
				if f.Reason != "" {
					got = append(got, f)
				}
			}
			if len(got) != 1 || got[0].Where() != c.where || got[0].Verdict != AsIs || got[0].Reason != c.reason {
				t.Fatalf("got %v, want %s: compatible as is: %s", got, c.where, c.reason)
			}
		})
	}
}

// Every incompatibility of a state is named, not only the first.
func TestEveryIncompatibilityIsNamed(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(ops []Declared)
		where  string
		reason string
	}{
		{"map key and value", func(ops []Declared) {
			ops[0].States[0].MapKey, ops[0].States[0].Value = snap(serializers.KindBytes), snap(serializers.KindString)
		}, `operator "keyed" state "counts"`, "map key serializer changed: serializer changed from string to bytes; serializer changed from int64 to string"},
		{"namespace and value", func(ops []Declared) {
			ops[0].States[0].Namespace, ops[0].States[0].Value = snap(serializers.KindWindow), snap(serializers.KindString)
		}, `operator "keyed" state "counts"`, "namespace serializer changed: serializer changed from void to window; serializer changed from int64 to string"},
		{"kind and namespace", func(ops []Declared) {
			ops[0].States[0].Kind, ops[0].States[0].Namespace = savepoint.List, snap(serializers.KindWindow)
		}, `operator "keyed" state "counts"`, "state kind changed from map to list; namespace serializer changed: serializer changed from void to window"},
		{"broadcast key and value", func(ops []Declared) {
			ops[1].BroadcastStates[0].Key, ops[1].BroadcastStates[0].Value = snap(serializers.KindBytes), snap(serializers.KindInt64)
		}, `operator "plain" broadcast state "rules"`, "key serializer changed: serializer changed from string to bytes; value serializer changed: serializer changed from string to int64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []Finding
			for _, f := range CheckJob(savedJob(), declare(c.change), Options{}) {
				if f.Verdict != AsIs {
					got = append(got, f)
				}
			}
			if len(got) != 1 || got[0].Where() != c.where || got[0].Verdict != Incompatible || got[0].Reason != c.reason {
				t.Fatalf("got %v, want %s: incompatible: %s", got, c.where, c.reason)
			}
		})
	}
}
