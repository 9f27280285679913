package engine

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stateproc/stateproc/compat"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

var (
	tallyRecords = NewOperatorList("records", serializers.Int64(), EvenSplit)
	tallyKeys    = NewOperatorList("keys-seen", serializers.String(), UnionRedistribution)
)

// tallies records what the subtasks of one run of tallyJob held.
type tallies struct {
	mu sync.Mutex
	// restored holds, per subtask, the operator states Open found.
	restoredRecords map[int][]int64
	restoredKeys    map[int][]string
	// counted is each subtask's record count when it last processed one.
	counted map[int]int64
}

func newTallies() *tallies {
	return &tallies{restoredRecords: map[int][]int64{}, restoredKeys: map[int][]string{}, counted: map[int]int64{}}
}

// tally counts the records its subtask processes, restored counts
// included, in even-split state, and the keys it has seen in union state.
type tally struct {
	NoTimers[string, int64]
	log     *tallies
	subtask int
	records *OperatorListState[int64]
	keys    *OperatorListState[string]
	n       int64
	known   map[string]bool
}

func (f *tally) Open(ctx *OpenContext) error {
	var err error
	if f.records, err = GetOperatorList(ctx, tallyRecords); err != nil {
		return err
	}
	if f.keys, err = GetOperatorList(ctx, tallyKeys); err != nil {
		return err
	}
	f.subtask = ctx.Subtask()
	f.log.mu.Lock()
	f.log.restoredRecords[f.subtask] = f.records.Get()
	f.log.restoredKeys[f.subtask] = f.keys.Get()
	f.log.mu.Unlock()
	for _, c := range f.records.Get() {
		f.n += c
	}
	f.records.Update([]int64{f.n})
	f.known = map[string]bool{}
	for _, k := range f.keys.Get() {
		f.known[k] = true
	}
	return nil
}

func (f *tally) ProcessElement(_ *Context[string, int64], e testEvent) error {
	f.n++
	f.records.Clear()
	f.records.Add(f.n)
	if !f.known[e.Key] {
		f.known[e.Key] = true
		f.keys.Add(e.Key)
	}
	f.log.mu.Lock()
	f.log.counted[f.subtask] = f.n
	f.log.mu.Unlock()
	return nil
}

var tallySource = testSource{splits: 3, n: 500, keys: 11}

func tallyJob(p int, log *tallies) *Job {
	j := NewJob("tally", DefaultParallelism(p))
	events := FromSource(j, tallySource, Watermarks{Every: 16}, UID("events"))
	keyed := KeyBy(events, func(e testEvent) string { return e.Key }, serializers.String())
	out := Process(keyed, func() KeyedProcessFunction[string, testEvent, int64] { return &tally{log: log} },
		UID("tally"), WithOperatorState(tallyRecords, tallyKeys))
	ToSink(out, NewCollectSink[int64](), UID("sink"))
	return j
}

func allTallyKeys() []string {
	var keys []string
	for k := range tallySource.keys {
		keys = append(keys, fmt.Sprintf("k%d", k))
	}
	slices.Sort(keys)
	return keys
}

// checkRestored checks what the new subtasks of a run got from a savepoint
// whose subtasks ended with the given counts and all keys: each count in
// exactly one subtask, every key once in every subtask.
func checkRestored(t *testing.T, name string, got *tallies, parallelism int, saved map[int]int64) {
	t.Helper()
	var records []int64
	for s := range parallelism {
		records = append(records, got.restoredRecords[s]...)
		keys := slices.Sorted(slices.Values(got.restoredKeys[s]))
		if !slices.Equal(keys, allTallyKeys()) {
			t.Errorf("%s: subtask %d restored keys %v, want every key once", name, s, keys)
		}
	}
	slices.Sort(records)
	if want := slices.Sorted(maps.Values(saved)); !slices.Equal(records, want) {
		t.Errorf("%s: restored counts %v over %d subtasks, want %v each once", name, records, parallelism, want)
	}
}

func sumCounts(m map[int]int64) int64 {
	var n int64
	for _, c := range m {
		n += c
	}
	return n
}

func TestOperatorListStateRedistributedOnRestore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sp1, sp2 := filepath.Join(dir, "sp1"), filepath.Join(dir, "sp2")

	first := newTallies()
	if _, err := Run(ctx, tallyJob(2, first), RunOptions{Backend: Heap, StopAfter: 600, SavepointDir: sp1}); err != nil {
		t.Fatal(err)
	}
	for s := range 2 {
		if len(first.restoredRecords[s])+len(first.restoredKeys[s]) != 0 {
			t.Fatalf("fresh subtask %d opened with state", s)
		}
	}
	if n := sumCounts(first.counted); n != 600 || len(first.counted) != 2 {
		t.Fatalf("first run counted %v, want 600 records over 2 subtasks", first.counted)
	}

	// Heap to Pebble at a higher parallelism, stopping again.
	second := newTallies()
	if _, err := Run(ctx, tallyJob(3, second), RunOptions{Backend: Pebble, RestoreFrom: sp1, StopAfter: 1200, SavepointDir: sp2}); err != nil {
		t.Fatal(err)
	}
	checkRestored(t, "p2 to p3", second, 3, first.counted)

	// Heap to heap at parallelism 1, to the end.
	third := newTallies()
	if _, err := Run(ctx, tallyJob(1, third), RunOptions{Backend: Heap, RestoreFrom: sp1}); err != nil {
		t.Fatal(err)
	}
	checkRestored(t, "p2 to p1", third, 1, first.counted)
	if n := sumCounts(third.counted); n != 1500 {
		t.Errorf("p2 to p1: counted %d records in all, want 1500", n)
	}

	// Pebble to heap: the counts the restored subtasks kept went into the
	// second savepoint, and each of its three subtasks saved every key.
	fourth := newTallies()
	if _, err := Run(ctx, tallyJob(1, fourth), RunOptions{Backend: Heap, RestoreFrom: sp2}); err != nil {
		t.Fatal(err)
	}
	if n := sumCounts(second.counted); n != 1200 {
		t.Errorf("second run counted %d records in all, want 1200", n)
	}
	restored := slices.Sorted(slices.Values(fourth.restoredRecords[0]))
	if want := slices.Sorted(maps.Values(second.counted)); !slices.Equal(restored, want) {
		t.Errorf("p3 to p1: restored counts %v, want %v", restored, want)
	}
	var keys []string
	for _, k := range allTallyKeys() {
		keys = append(keys, k, k, k)
	}
	if got := slices.Sorted(slices.Values(fourth.restoredKeys[0])); !slices.Equal(got, keys) {
		t.Errorf("p3 to p1: restored keys %v, want every key from each of 3 subtasks", got)
	}
}

func TestOperatorListStateInManifestAndToolkit(t *testing.T) {
	m, err := tallyJob(3, newTallies()).Manifest()
	if err != nil {
		t.Fatal(err)
	}
	var manifest bytes.Buffer
	if err := m.Write(&manifest); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	back, err := savepoint.ReadManifest(bytes.NewReader(manifest.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	ops, err := back.Model()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ops, func(o savepoint.Operator) bool { return o.UID == "tally" })
	if i < 0 {
		t.Fatalf("manifest has no operator tally: %s", manifest.Bytes())
	}
	// The job's two, then the engine's clock of each subtask.
	states := ops[i].OperatorStates
	if len(states) != 3 ||
		states[0].Name != "records" || states[0].Distribution != savepoint.EvenSplit || !states[0].Element.Equal(serializers.Int64().Snapshot()) ||
		states[1].Name != "keys-seen" || states[1].Distribution != savepoint.Union || !states[1].Element.Equal(serializers.String().Snapshot()) ||
		states[2].Name != subtaskClockStateName || states[2].Distribution != savepoint.Union || !states[2].Element.Equal(subtaskClockSerializer.Snapshot()) {
		t.Fatalf("tally operator states %+v", states)
	}

	sp := filepath.Join(dir, "sp")
	if _, err := Run(context.Background(), tallyJob(2, newTallies()), RunOptions{StopAfter: 600, SavepointDir: sp}); err != nil {
		t.Fatal(err)
	}
	// What the tools read of the savepoint: the operator states with
	// their distributions and elements, and a verdict of as is against the
	// job's own manifest.
	r, err := snapshotfmt.Open(context.Background(), storage.LocalDir(sp))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tallyOp, ok := r.Metadata().Operator("tally")
	if !ok {
		t.Fatal("no operator tally in the savepoint")
	}
	var got []string
	for _, s := range tallyOp.OperatorStates {
		n := 0
		for _, sub := range s.Subtasks {
			n += len(sub)
		}
		got = append(got, fmt.Sprintf("%s %s %s %d", s.Name, s.Distribution, s.Element, n))
	}
	if want := []string{"records even-split int64 2", "keys-seen union string 11", "subtask-clock union avro:stateproc.engine.SubtaskClock 2"}; !slices.Equal(got, want) {
		t.Errorf("the savepoint holds tally operator states %q, want %q", got, want)
	}
	if sub := tallyOp.OperatorStates[0].Subtasks; len(sub) != 2 || len(sub[0]) != 1 || len(sub[1]) != 1 {
		t.Errorf("the even-split state holds %d subtasks' lists, want one element per subtask", len(sub))
	}
	var declared []compat.Declared
	for i, o := range ops {
		declared = append(declared, compat.Declared{Operator: o, MaxParallelismSet: back.Operators[i].MaxParallelismSet})
	}
	for _, f := range compat.CheckJob(r.Metadata(), declared, compat.Options{}) {
		if f.Verdict != compat.AsIs {
			t.Errorf("against the job's own manifest: %s %s %s: %v (%s)", f.Operator, f.What, f.Name, f.Verdict, f.Reason)
		}
	}
}

func TestOperatorListStateMustBeDeclared(t *testing.T) {
	j := NewJob("undeclared")
	events := FromSource(j, tallySource, Watermarks{}, UID("events"))
	keyed := KeyBy(events, func(e testEvent) string { return e.Key }, serializers.String())
	out := Process(keyed, func() KeyedProcessFunction[string, testEvent, int64] { return &tally{log: newTallies()} },
		UID("tally"), WithOperatorState(tallyRecords))
	ToSink(out, NewCollectSink[int64](), UID("sink"))
	_, err := Run(context.Background(), j, RunOptions{})
	if err == nil || !strings.Contains(err.Error(), `operator state "keys-seen" was not declared with WithOperatorState`) {
		t.Fatalf("err = %v, want the undeclared state refused", err)
	}
}
