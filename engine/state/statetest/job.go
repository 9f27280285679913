package statetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// job declares one state of each kind, with TTL, namespaces and a timer
// service: the state that the snapshot, restore and cross-backend tests
// write. What a key holds depends only on its index, never on the order of
// writes, so backends written in different orders hold the same state.
type job struct {
	count  *state.ValueDescriptor[int64]
	events *state.ListDescriptor[string]
	cats   *state.MapDescriptor[string, int64]
	sums   *state.ReducingDescriptor[int64]
	avg    *state.AggregatingDescriptor[int64, []int64, float64]
}

const jobTimers = "timers"

// jobTTL is long enough that nothing expires during a test.
var jobTTL = ttl.New(24 * time.Hour)

func newJob() *job {
	return &job{
		count:  state.NewValue("count", serializers.Int64(), state.WithTTL(jobTTL)),
		events: state.NewList("events", serializers.String()),
		cats:   state.NewMap("categories", serializers.String(), serializers.Int64(), state.WithTTL(jobTTL)),
		sums: state.NewReducing("window-sums", serializers.Int64(), func(a, b int64) int64 { return a + b },
			state.WithNamespace(serializers.Window())),
		avg: newAverage("average"),
	}
}

func (j *job) specs() []*state.Spec {
	return []*state.Spec{j.count.Spec(), j.events.Spec(), j.cats.Spec(), j.sums.Spec(), j.avg.Spec()}
}

func (j *job) timers() []TimerService {
	return []TimerService{{Name: jobTimers, Namespace: serializers.Window()}}
}

func (j *job) operator(parallelism, maxParallelism int, key serializers.Serializer) savepoint.Operator {
	return NewOperator("job", parallelism, maxParallelism, key, j.specs(), j.timers())
}

// jobState is the job's handles on one backend.
type jobState struct {
	f      *fixture
	count  state.ValueState[int64]
	events state.ListState[string]
	cats   state.MapState[string, int64]
	sums   state.ReducingState[int64]
	avg    state.AggregatingState[int64, float64]
	timers state.Timers
}

func (j *job) open(f *fixture) *jobState {
	return &jobState{
		f:      f,
		count:  valueOf(f, j.count),
		events: listOf(f, j.events),
		cats:   mapOf(f, j.cats),
		sums:   reducingOf(f, j.sums),
		avg:    aggregatingOf(f, j.avg),
		timers: timersOf(f, jobTimers, serializers.Window()),
	}
}

// The contents of key i.
func jobEvents(i int) []string {
	var out []string
	for e := range i % 4 {
		out = append(out, fmt.Sprintf("event-%d-%d", i, e))
	}
	return out
}

func jobCategories(i int) []kv[string, int64] {
	var out []kv[string, int64]
	for c := range i%3 + 1 {
		out = append(out, kv[string, int64]{fmt.Sprintf("cat-%d", (i+c)%5), int64(i + c)})
	}
	slices.SortFunc(out, func(a, b kv[string, int64]) int { return strings.Compare(a.K, b.K) })
	return out
}

func jobWindows() []serializers.TimeWindow { return []serializers.TimeWindow{window(0), window(1000)} }

func jobTimersOf(t testing.TB, i int, key []byte) []state.Timer {
	ns := func(w serializers.TimeWindow) []byte { return encode(t, serializers.Window(), w) }
	out := []state.Timer{{Timestamp: 5000 + int64(i%37), Key: key, Namespace: ns(window(int64(i%3) * 1000))}}
	if i%5 == 0 {
		out = append(out, state.Timer{Timestamp: 9000, Key: key, Namespace: ns(window(0))})
	}
	return out
}

// writeTime is the processing time at which key i is written, so that TTL
// timestamps vary between keys but not with the order of writes.
func writeTime(i int) int64 { return t0 + int64(i%100) }

// write gives key (the i-th) its contents. reverse writes the map entries
// and timers in the opposite order, which must not change the state.
func (s *jobState) write(i int, key []byte, reverse bool) {
	t := s.f.t
	t.Helper()
	must(t, s.f.b.SetCurrentKey(key))
	s.f.at(writeTime(i))
	must(t, s.count.Update(int64(3*i)))
	must(t, s.events.AddAll(jobEvents(i)))
	cats := jobCategories(i)
	timers := jobTimersOf(t, i, key)
	if reverse {
		slices.Reverse(cats)
		slices.Reverse(timers)
	}
	for _, c := range cats {
		must(t, s.cats.Put(c.K, c.V))
	}
	for _, w := range jobWindows() {
		must(t, s.sums.SetNamespace(w))
		must(t, s.sums.Add(int64(i)))
		must(t, s.sums.Add(w.Start))
	}
	must(t, s.avg.Add(int64(i)))
	must(t, s.avg.Add(int64(i+2)))
	for _, tm := range timers {
		must(t, s.timers.Register(tm.Namespace, tm.Timestamp))
	}
}

// clear removes everything of key (the i-th).
func (s *jobState) clear(i int, key []byte) {
	t := s.f.t
	t.Helper()
	must(t, s.f.b.SetCurrentKey(key))
	must(t, s.count.Clear())
	must(t, s.events.Clear())
	must(t, s.cats.Clear())
	for _, w := range jobWindows() {
		must(t, s.sums.SetNamespace(w))
		must(t, s.sums.Clear())
	}
	must(t, s.avg.Clear())
	for _, tm := range jobTimersOf(t, i, key) {
		must(t, s.timers.Delete(tm.Namespace, tm.Timestamp))
	}
}

// check verifies that key (the i-th) holds what write stored, timers aside.
func (s *jobState) check(i int, key []byte) {
	t := s.f.t
	t.Helper()
	must(t, s.f.b.SetCurrentKey(key))
	eq(t, fmt.Sprintf("key %d count", i), readValue(t, s.count), some(int64(3*i)))
	eq(t, fmt.Sprintf("key %d events", i), readList(t, s.events), jobEvents(i))
	eq(t, fmt.Sprintf("key %d categories", i), readMap(t, s.cats), jobCategories(i))
	for _, w := range jobWindows() {
		must(t, s.sums.SetNamespace(w))
		v, ok, err := s.sums.Get()
		must(t, err)
		eq(t, fmt.Sprintf("key %d sum of window %v", i, w), present[int64]{v, ok}, some(int64(i)+w.Start))
	}
	v, ok, err := s.avg.Get()
	must(t, err)
	eq(t, fmt.Sprintf("key %d average", i), present[float64]{v, ok}, some(float64(i+1)))
}
