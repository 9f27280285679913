package engine

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

func TestBuildErrors(t *testing.T) {
	build := func(countOpts ...OperatorOption) *Job {
		j := NewJob("bad")
		events := FromSource(j, testSource{splits: 1, n: 1, keys: 1}, Watermarks{}, UID("events"))
		keyed := KeyBy(events, func(e testEvent) string { return e.Key }, serializers.String())
		out := Process(keyed, func() KeyedProcessFunction[string, testEvent, windowResult] { return &windowCount{} }, countOpts...)
		ToSink(out, NewCollectSink[windowResult](), UID("sink"))
		return j
	}
	for _, tc := range []struct {
		name string
		opts []OperatorOption
		want string
	}{
		{"missing uid", []OperatorOption{WithState(countDesc)}, "has no uid"},
		{"duplicate uid", []OperatorOption{UID("events"), WithState(countDesc)}, `uid "events" used by both`},
		{"parallelism above max", []OperatorOption{UID("c"), Parallelism(9), MaxParallelism(8)}, "above max parallelism"},
		{"state declared twice", []OperatorOption{UID("c"), WithState(countDesc, countDesc)}, `declares state "counts" twice`},
		{"operator state declared twice", []OperatorOption{UID("c"), WithOperatorState(tallyRecords, tallyRecords)}, `declares state "records" twice`},
		{"operator state named as a keyed state", []OperatorOption{UID("c"), WithState(countDesc),
			WithOperatorState(NewOperatorList("counts", serializers.Int64(), UnionRedistribution))}, `declares state "counts" twice`},
		{"operator state without distribution", []OperatorOption{UID("c"),
			WithOperatorState(NewOperatorList("offsets", serializers.Int64(), 0))}, `operator state "offsets" has distribution(0)`},
	} {
		err := build(tc.opts...).Validate()
		if !errors.Is(err, ErrBuild) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrBuild mentioning %q", tc.name, err, tc.want)
		}
	}
	j := NewJob("bad")
	FromSource(j, testSource{splits: 1, n: 1, keys: 1}, Watermarks{}, UID("events"), WithOperatorState(tallyKeys))
	if err := j.Validate(); !errors.Is(err, ErrBuild) || !strings.Contains(err.Error(), "can only be declared on a process operator") {
		t.Errorf("operator state on a source: err = %v", err)
	}
	if _, err := build(UID("c"), WithOperatorState(tallyKeys, tallyKeys)).Manifest(); !errors.Is(err, ErrBuild) {
		t.Errorf("manifest of a job with a duplicate operator state: err = %v", err)
	}
}

func TestManifestListsOperatorsAndStates(t *testing.T) {
	m, err := countJob(testSource{splits: 1, n: 1, keys: 1}, 3, NewCollectSink[windowResult]()).Manifest()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := m.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := savepoint.ReadManifest(&buf)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := back.Model()
	if err != nil {
		t.Fatal(err)
	}
	var uids []string
	for _, o := range ops {
		uids = append(uids, o.UID)
	}
	if strings.Join(uids, ",") != "events,count,sink" {
		t.Fatalf("operators %v", uids)
	}
	count := ops[1]
	if count.Parallelism != 3 || count.MaxParallelism != 128 || count.Key.Kind != serializers.KindString {
		t.Fatalf("count operator: %+v", count)
	}
	if len(count.States) != 1 || count.States[0].Name != "counts" || count.States[0].Kind != savepoint.Map || !count.States[0].MapKey.Equal(serializers.Int64().Snapshot()) {
		t.Fatalf("count states: %+v", count.States)
	}
	if len(count.Timers) != 2 || ops[0].OperatorStates[0].Name != sourceStateName {
		t.Fatalf("timers %+v, source state %+v", count.Timers, ops[0].OperatorStates)
	}
}

func TestRedistribute(t *testing.T) {
	old := [][][]byte{{[]byte("a"), []byte("b")}, {[]byte("c")}, nil, {[]byte("d"), []byte("e")}}
	even := redistribute(savepoint.EvenSplit, old, 2)
	if got := string(bytes.Join(even[0], nil)) + "|" + string(bytes.Join(even[1], nil)); got != "ab|cde" {
		t.Fatalf("even split = %s", got)
	}
	union := redistribute(savepoint.Union, old, 3)
	for i, l := range union {
		if string(bytes.Join(l, nil)) != "abcde" {
			t.Fatalf("union subtask %d = %q", i, bytes.Join(l, nil))
		}
	}
}
