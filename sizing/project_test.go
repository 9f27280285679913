package sizing

import (
	"errors"
	"testing"
)

// skewedJob is an operator of max parallelism 8 whose key group 0 holds ten
// times what each other key group does, sized on the heap at 2 to 3 times
// its bytes and on Pebble at half of them.
func skewedJob() *Job {
	st := State{Name: "s", Kind: "value", PebblePerByte: 0.5, KeyGroups: make([]KeyGroup, 8)}
	for kg := range st.KeyGroups {
		st.KeyGroups[kg] = KeyGroup{Keys: 1, Entries: 1, Bytes: 100, Stored: 100}
	}
	st.KeyGroups[0] = KeyGroup{Keys: 10, Entries: 10, Bytes: 1000, Stored: 1000}
	return &Job{
		HeapOverhead: &Range{2, 3},
		Operators:    []Operator{{UID: "op", Parallelism: 2, MaxParallelism: 8, States: []State{st}}},
	}
}

func TestSubtasksShowSkew(t *testing.T) {
	rep, err := Project(skewedJob(), Options{Parallelism: 4})
	must(t, err)
	subs := rep.Operators[0].Subtasks
	want := []struct {
		kgs       string
		savepoint float64
	}{{"0-1", 1100}, {"2-3", 200}, {"4-5", 200}, {"6-7", 200}}
	if len(subs) != len(want) {
		t.Fatalf("%d subtasks, want %d", len(subs), len(want))
	}
	for i, w := range want {
		s := subs[i]
		if s.KeyGroups != w.kgs || s.Savepoint != w.savepoint || s.Pebble != w.savepoint/2 || s.Heap != (Range{2 * w.savepoint, 3 * w.savepoint}) {
			t.Errorf("subtask %d: %+v, want key groups %s, %v bytes", i, s, w.kgs, w.savepoint)
		}
	}
	if rep.Total.Savepoint != 1700 || rep.Checkpoints.Full != 1700 {
		t.Errorf("total %v, full checkpoint %v; want 1700", rep.Total.Savepoint, rep.Checkpoints.Full)
	}
	// At the operator's own parallelism of 2, subtask 0 has key groups 0-3.
	rep, err = Project(skewedJob(), Options{})
	must(t, err)
	if s := rep.Operators[0].Subtasks[0]; s.KeyGroups != "0-3" || s.Savepoint != 1300 {
		t.Errorf("subtask 0 at parallelism 2: %+v", s)
	}
}

func TestProjectionByKeysAndScale(t *testing.T) {
	// The operator has 17 keys; 170 is ten times as many.
	for _, opts := range []Options{{Keys: 170}, {Scale: 10}} {
		rep, err := Project(skewedJob(), opts)
		must(t, err)
		st := rep.Operators[0].States[0]
		if st.Keys != 170 || st.Entries != 170 || st.Savepoint != 17000 || rep.Operators[0].Scale != 10 {
			t.Errorf("%+v: %v keys, %v entries, %v bytes, scale %v", opts, st.Keys, st.Entries, st.Savepoint, rep.Operators[0].Scale)
		}
	}
	_, err := Project(skewedJob(), Options{Parallelism: 9})
	if !errors.Is(err, ErrOption) {
		t.Errorf("parallelism 9 with max parallelism 8: %v, want ErrOption", err)
	}
}

func TestSlotsAndRecommendation(t *testing.T) {
	job := skewedJob()
	other := job.Operators[0]
	other.UID, other.Parallelism = "other", 3
	job.Operators = append(job.Operators, other)
	rep, err := Project(job, Options{GOGC: 100, MemoryPerSlot: 1e6, FullCheckpointLimit: 1e6, ChangeRate: 0.1})
	must(t, err)
	// Slot 0 holds subtask 0 of both operators (key groups 0-3 and 0-2),
	// slot 2 only the second operator's subtask 2 (key groups 6-7).
	if len(rep.Slots) != 3 || rep.Slots[0].Savepoint != 1300+1200 || rep.Slots[2].Savepoint != 200 {
		t.Errorf("slots %+v", rep.Slots)
	}
	r := rep.Recommendation
	if r.Backend != "heap" || r.HeapSlot != 0 || r.HeapPerSlot != (Range{5000, 7500}) || r.HeapNeeded != (Range{10000, 15000}) || r.FullPerSlot != 2500 {
		t.Errorf("recommendation %+v", r)
	}
	if rep.Checkpoints.Incremental != 0.1*3400/2 {
		t.Errorf("incremental checkpoint %v, want 10%% of Pebble's %v", rep.Checkpoints.Incremental, rep.Total.Pebble)
	}
	for _, c := range []struct {
		opts    Options
		fits    bool
		full    bool
		backend string
	}{
		// 7500 B live needs 15000 B at GOGC=100, 11250 B at GOGC=50.
		{Options{GOGC: 100, MemoryPerSlot: 14999, FullCheckpointLimit: 1e6}, false, false, "pebble"},
		{Options{GOGC: 50, MemoryPerSlot: 14999, FullCheckpointLimit: 2499}, true, true, "pebble"},
		{Options{GOGC: 50, MemoryPerSlot: 14999, FullCheckpointLimit: 2500}, true, false, "heap"},
	} {
		rep, err := Project(job, c.opts)
		must(t, err)
		r := rep.Recommendation
		if r.HeapFits != c.fits || r.FullTooLarge != c.full || r.Backend != c.backend {
			t.Errorf("%+v: %+v, want fits %v, full too large %v, %s", c.opts, r, c.fits, c.full, c.backend)
		}
	}
}
