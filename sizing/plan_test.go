package sizing

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// gb renders bytes as the seeds write them: decimal gigabytes to a tenth.
func gb(b float64) string { return fmt.Sprintf("%.1f GB", b/1e9) }

// TestSessionFeaturesPlan sizes the seeds' example and gets their figures:
// 40 GB of category maps, 4 GB of sessions, 44 GB in all, about 1.4 GB per
// subtask at parallelism 32, and 4.1 to 6.9 GB per slot on the heap at an
// overhead of three to five times.
func TestSessionFeaturesPlan(t *testing.T) {
	plan, err := ReadPlan("testdata/sessionfeatures.yaml")
	must(t, err)
	job, err := plan.Job()
	must(t, err)
	rep, err := Project(job, Options{GOGC: 100, MemoryPerSlot: 8e9, FullCheckpointLimit: 1e9, ChangeRate: 0.01})
	must(t, err)
	op := rep.Operators[0]
	got := map[string]string{
		"category maps":           gb(op.States[0].Savepoint),
		"sessions":                gb(op.States[1].Savepoint),
		"total":                   gb(rep.Total.Savepoint),
		"full checkpoint":         gb(rep.Checkpoints.Full),
		"pebble per subtask":      gb(rep.Recommendation.PebblePerSlot),
		"heap per slot, low":      gb(rep.Recommendation.HeapPerSlot.Low),
		"heap per slot, high":     gb(rep.Recommendation.HeapPerSlot.High),
		"busiest subtask on disk": gb(slicesMax(op.Subtasks)),
	}
	want := map[string]string{
		"category maps":           "40.0 GB",
		"sessions":                "4.0 GB",
		"total":                   "44.0 GB",
		"full checkpoint":         "44.0 GB",
		"pebble per subtask":      "1.4 GB",
		"heap per slot, low":      "4.1 GB",
		"heap per slot, high":     "6.9 GB",
		"busiest subtask on disk": "1.4 GB",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %s, want %s", k, got[k], w)
		}
	}
	if len(op.Subtasks) != 32 || op.MaxParallelism != 128 {
		t.Errorf("%d subtasks of max parallelism %d, want 32 of 128", len(op.Subtasks), op.MaxParallelism)
	}
	if r := rep.Recommendation; r.Backend != "pebble" || r.HeapFits || !r.FullTooLarge {
		t.Errorf("recommendation %+v, want pebble: the heap does not fit 8 GB with GC headroom, and full checkpoints are large", r)
	}
	if d := rep.Checkpoints.Incremental - 0.44e9; math.Abs(d) > 1 {
		t.Errorf("incremental checkpoint %v, want 1%% of 44 GB", rep.Checkpoints.Incremental)
	}

	// Without the plan's overhead factors, the heap model sizes the same
	// state: Go's objects take about three times the map's serialized bytes.
	plan.HeapOverhead = nil
	job, err = plan.Job()
	must(t, err)
	rep, err = Project(job, Options{GOGC: 100})
	must(t, err)
	if f := rep.Operators[0].States[0].Heap.Low / 40e9; f < 2.5 || f > 4 {
		t.Errorf("the model puts the category maps at %.2f times their serialized bytes", f)
	}
}

func slicesMax(subs []SubtaskReport) float64 {
	var m float64
	for _, s := range subs {
		m = max(m, s.Pebble)
	}
	return m
}

// A plan that derives its sizes from the types, with a TTL, windows and
// timers, in JSON.
const jsonPlan = `{
	"operators": [{
		"uid": "meter", "parallelism": 4, "maxParallelism": 64,
		"states": [
			{"name": "open", "kind": "value", "keys": 100000, "keyType": "string", "keyBytes": 12,
			 "valueSchema": {"type": "record", "name": "Open", "fields": [
				{"name": "tenant", "type": "string"}, {"name": "started", "type": "long"}]},
			 "valueBytes": 30, "ttl": "10m"},
			{"name": "per-minute", "kind": "reducing", "keys": 1000, "entriesPerKey": 60, "namespace": "window",
			 "keyType": "int64", "valueType": "int64"},
			{"name": "timeout", "kind": "timers", "keys": 100000, "entriesPerKey": 3}
		]
	}]
}`

func TestPlanFromTypes(t *testing.T) {
	plan, err := ParsePlan("meter.json", []byte(jsonPlan))
	must(t, err)
	job, err := plan.Job()
	must(t, err)
	rep, err := Project(job, Options{})
	must(t, err)
	sts := rep.Operators[0].States
	// open: 12-byte key and 30-byte value with 8 bytes of TTL, each
	// length-prefixed, an empty namespace and a count: 54 bytes.
	if b := sts[0].PerEntry; b.Total != 54 || b.TTL != 8 || b.Framing != 4 {
		t.Errorf("open per entry %+v, want 54 bytes", b)
	}
	// per-minute: a record per window, 8-byte key, 16-byte window, 8-byte
	// value, 4 bytes of framing.
	if b := sts[1].PerEntry; b.Total != 36 || sts[1].Entries != 60000 {
		t.Errorf("per-minute %+v, %v entries", b, sts[1].Entries)
	}
	for _, st := range sts {
		if st.PebbleFrom != "model" || st.Pebble <= 0 || st.Heap.Low <= st.Savepoint {
			t.Errorf("%s: Pebble %v (%s), heap %v, savepoint %v", st.Name, st.Pebble, st.PebbleFrom, st.Heap, st.Savepoint)
		}
	}
	// Three timers per key are counted; without their times a plan shows
	// no leak.
	if tm := sts[len(sts)-1].Timers; sts[len(sts)-1].Name != "timeout" || tm == nil || tm.MaxPerKey != 3 || tm.AboveOne != tm.Keys {
		t.Errorf("timeout's timers %+v, want three on every key", tm)
	}
	for _, f := range rep.Findings {
		if f.Kind == FindingTimerLeak {
			t.Errorf("a plan's timers are flagged: %+v", f)
		}
	}
}

// TestMalformedPlans checks that each mistake gets an error naming the
// line, the field and what is wrong.
func TestMalformedPlans(t *testing.T) {
	const state = "operators:\n  - uid: op\n    parallelism: 2\n    states:\n      - name: s\n"
	for _, c := range []struct {
		name, plan string
		line       int
		field, msg string
	}{
		{"tab indentation", "operators:\n\t- uid: x\n", 2, "", "found character that cannot start any token"},
		{"empty", "", 0, "", "the plan is empty"},
		{"not a mapping", "- a\n- b\n", 1, "", "must be a mapping"},
		{"no operators", "name: x\n", 1, "operators", "missing"},
		{"unknown top field", "operators: []\nheapoverhead: 3\n", 2, "heapoverhead", "did you mean heapOverhead?"},
		{"empty operators", "operators: []\n", 1, "operators", "at least one operator"},
		{"no uid", "operators:\n  - parallelism: 2\n    states: []\n", 2, "operators[0].uid", "missing"},
		{"parallelism text", "operators:\n  - uid: op\n    parallelism: two\n    states: []\n", 3, "operators[0].parallelism", `must be a number, not "two"`},
		{"parallelism zero", "operators:\n  - uid: op\n    parallelism: 0\n    states: []\n", 3, "operators[0].parallelism", "at least 1"},
		{"max below parallelism", "operators:\n  - uid: op\n    parallelism: 8\n    maxParallelism: 4\n    states: []\n", 4, "operators[0].maxParallelism", "above max parallelism"},
		{"no states", "operators:\n  - uid: op\n    parallelism: 2\n    states: []\n", 4, "operators[0].states", "at least one state"},
		{"bad kind", state + "        kind: mapp\n        keys: 10\n        valueType: int64\n", 6, "operators[0].states[0].kind", `"mapp" is not one of value, list, map`},
		{"no keys", state + "        kind: value\n        valueType: int64\n", 5, "operators[0].states[0].keys", "missing"},
		{"fractional keys", state + "        kind: value\n        keys: 2.5\n        valueType: int64\n", 7, "operators[0].states[0].keys", "whole number"},
		{"negative bytes", state + "        kind: value\n        keys: 10\n        valueType: int64\n        bytesPerEntry: -3\n", 9, "operators[0].states[0].bytesPerEntry", "above 0"},
		{"misspelt field", state + "        kind: map\n        keys: 10\n        entriesPerkey: 20\n", 8, "operators[0].states[0].entriesPerkey", "did you mean entriesPerKey?"},
		{"entries of a value", state + "        kind: value\n        keys: 10\n        entriesPerKey: 20\n        valueType: int64\n", 8, "operators[0].states[0].entriesPerKey", "one entry per key"},
		{"no value type", state + "        kind: map\n        keys: 10\n", 5, "operators[0].states[0].valueType", "missing"},
		{"avro without schema", state + "        kind: value\n        keys: 10\n        valueType: avro\n", 8, "operators[0].states[0].valueSchema", "needs the schema"},
		{"bad schema", state + "        kind: value\n        keys: 10\n        valueSchema: '{\"type\": \"recrod\"}'\n", 8, "operators[0].states[0].valueSchema", "avro schema"},
		{"bad ttl", state + "        kind: value\n        keys: 10\n        valueType: int64\n        ttl: 7 days\n", 9, "operators[0].states[0].ttl", "not a duration"},
		{"int64 of 4 bytes", state + "        kind: value\n        keys: 10\n        valueType: int64\n        valueBytes: 4\n", 9, "operators[0].states[0].valueBytes", "always takes 8 bytes"},
		{"map key of a value", state + "        kind: value\n        keys: 10\n        valueType: int64\n        mapKeyType: string\n", 9, "operators[0].states[0].mapKeyType", "only a map state"},
		{"timer with a value", state + "        kind: timers\n        keys: 10\n        valueType: int64\n", 8, "operators[0].states[0].valueType", "a timer service has no valueType"},
		{"state twice", state + "        kind: value\n        keys: 10\n        valueType: int64\n      - name: s\n        kind: value\n        keys: 10\n        valueType: int64\n", 9, "operators[0].states[1].name", "planned twice"},
		{"field twice", state + "        kind: value\n        kind: map\n", 7, "operators[0].states[0].kind", "given twice"},
		{"overhead backwards", "heapOverhead: [5, 3]\noperators: []\n", 1, "heapOverhead", "above the high one"},
		{"overhead text", "heapOverhead: lots\noperators: []\n", 1, "heapOverhead", "must be a number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParsePlan("plan.yaml", []byte(c.plan))
			var pe *PlanError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want a *PlanError", err)
			}
			if pe.File != "plan.yaml" || pe.Line != c.line || pe.Field != c.field || !strings.Contains(pe.Msg, c.msg) {
				t.Errorf("got %q (line %d, field %q), want line %d, field %q, a message with %q", err, pe.Line, pe.Field, c.line, c.field, c.msg)
			}
		})
	}
}

func TestMalformedJSONPlanHasLines(t *testing.T) {
	_, err := ParsePlan("plan.json", []byte("{\n\t\"operators\": [\n\t\t{\"uid\": \"op\", \"parallelism\": \"x\"}\n\t]\n}\n"))
	var pe *PlanError
	if !errors.As(err, &pe) || pe.Line != 3 || pe.Field != "operators[0].parallelism" {
		t.Errorf("got %v, want an error at line 3 about operators[0].parallelism", err)
	}
	_, err = ReadPlan("testdata/no-such-plan.yaml")
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "no-such-plan.yaml: no such file") {
		t.Errorf("a missing plan: %v", err)
	}
}
