package pebblebackend

import (
	"fmt"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// The list, map and timer benchmarks use 10k keys: few enough that setup
// stays short, enough that reads miss the memtable once it is flushed.
const benchPathKeys = 10_000

func benchBackend(b *testing.B) (*Backend, [][]byte) {
	be, err := New(Options{Dir: b.TempDir(), MaxParallelism: 128, KeyGroups: keygroup.All(128)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	keys := make([][]byte, benchPathKeys)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user-%06d", i))
	}
	return be, keys
}

func benchSetKey(b *testing.B, be *Backend, key []byte) {
	if err := be.SetCurrentKey(key); err != nil {
		b.Fatal(err)
	}
}

func flush(b *testing.B, be *Backend) {
	if err := be.commitWrites(); err != nil {
		b.Fatal(err)
	}
	if err := be.db.Flush(); err != nil {
		b.Fatal(err)
	}
}

// benchListState gives each key a list of 5 int64 elements.
func benchListState(b *testing.B) (*Backend, state.ListState[int64], [][]byte) {
	be, keys := benchBackend(b)
	l, err := state.GetList(be, nil, state.NewList("l", serializers.Int64()))
	if err != nil {
		b.Fatal(err)
	}
	for i, k := range keys {
		benchSetKey(b, be, k)
		if err := l.AddAll([]int64{int64(i), 1, 2, 3, 4}); err != nil {
			b.Fatal(err)
		}
	}
	flush(b, be)
	return be, l, keys
}

func BenchmarkListAdd(b *testing.B) {
	be, l, keys := benchListState(b)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	i := 0
	for b.Loop() {
		benchSetKey(b, be, keys[i%len(keys)])
		if err := l.Add(int64(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkListGet(b *testing.B) {
	be, l, keys := benchListState(b)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	i := 0
	for b.Loop() {
		benchSetKey(b, be, keys[i%len(keys)])
		if vs, err := l.Get(); err != nil || len(vs) != 5 {
			b.Fatalf("Get() = %v, %v", vs, err)
		}
		i++
	}
}

const benchMapEntries = 10

var benchMapKeys = func() []string {
	ks := make([]string, benchMapEntries)
	for i := range ks {
		ks[i] = fmt.Sprintf("category-%d", i)
	}
	return ks
}()

// benchMapState gives each key a map of 10 entries.
func benchMapState(b *testing.B) (*Backend, state.MapState[string, int64], [][]byte) {
	be, keys := benchBackend(b)
	m, err := state.GetMap(be, nil, state.NewMap("m", serializers.String(), serializers.Int64()))
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range keys {
		benchSetKey(b, be, k)
		for j, mk := range benchMapKeys {
			if err := m.Put(mk, int64(j)); err != nil {
				b.Fatal(err)
			}
		}
	}
	flush(b, be)
	return be, m, keys
}

func BenchmarkMapPut(b *testing.B) {
	be, m, keys := benchMapState(b)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	i := 0
	for b.Loop() {
		benchSetKey(b, be, keys[i%len(keys)])
		if err := m.Put(benchMapKeys[i%benchMapEntries], int64(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkMapGet(b *testing.B) {
	be, m, keys := benchMapState(b)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	i := 0
	for b.Loop() {
		benchSetKey(b, be, keys[i%len(keys)])
		if _, ok, err := m.Get(benchMapKeys[i%benchMapEntries]); err != nil || !ok {
			b.Fatalf("Get() = %v, %v", ok, err)
		}
		i++
	}
}

// BenchmarkMapIterate reads all 10 entries of one key's map per op.
func BenchmarkMapIterate(b *testing.B) {
	be, m, keys := benchMapState(b)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	i := 0
	for b.Loop() {
		benchSetKey(b, be, keys[i%len(keys)])
		n := 0
		if err := m.Range(func(string, int64) bool { n++; return true }); err != nil || n != benchMapEntries {
			b.Fatalf("Range saw %d entries, %v", n, err)
		}
		i++
	}
}

func benchTimers(b *testing.B) (*Backend, state.Timers, [][]byte) {
	be, keys := benchBackend(b)
	t, err := be.Timers("t", serializers.String())
	if err != nil {
		b.Fatal(err)
	}
	return be, t, keys
}

// BenchmarkTimerRegister registers a new timer per op, each later than the
// one before, as event-time windows do.
func BenchmarkTimerRegister(b *testing.B) {
	be, t, keys := benchTimers(b)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	i := 0
	for b.Loop() {
		benchSetKey(b, be, keys[i%len(keys)])
		if err := t.Register(nil, int64(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkTimerFire keeps 10k timers pending (one per key): each op
// registers one timer 10k ms ahead and fires the earliest.
func BenchmarkTimerFire(b *testing.B) {
	be, t, keys := benchTimers(b)
	for i, k := range keys {
		benchSetKey(b, be, k)
		if err := t.Register(nil, int64(i)); err != nil {
			b.Fatal(err)
		}
	}
	flush(b, be)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	i := 0
	for b.Loop() {
		benchSetKey(b, be, keys[i%len(keys)])
		if err := t.Register(nil, int64(i+len(keys))); err != nil {
			b.Fatal(err)
		}
		tm, ok, err := t.Pop(int64(i))
		if err != nil || !ok || tm.Timestamp != int64(i) {
			b.Fatalf("Pop(%d) = %v, %v, %v", i, tm, ok, err)
		}
		i++
	}
}

// BenchmarkListPending is the shape of a temporal join's pending records:
// each op reads the list of a new (key, namespace), finds it empty and adds
// a record, then reads back and clears the list added to benchPendingLag
// ops earlier, as a timer at its time does.
func BenchmarkListPending(b *testing.B) {
	be, keys := benchBackend(b)
	l, err := state.GetList(be, nil, state.NewList("l", serializers.Int64(), state.WithNamespace(serializers.Int64())))
	if err != nil {
		b.Fatal(err)
	}
	step := func(i int, add bool) {
		benchSetKey(b, be, keys[i%len(keys)])
		if err := l.SetNamespace(int64(i)); err != nil {
			b.Fatal(err)
		}
		vs, err := l.Get()
		if err != nil {
			b.Fatal(err)
		}
		if add {
			if len(vs) != 0 {
				b.Fatalf("list %d holds %v before its first record", i, vs)
			}
			err = l.Add(int64(i))
		} else {
			if len(vs) != 1 || vs[0] != int64(i) {
				b.Fatalf("list %d holds %v, want [%d]", i, vs, i)
			}
			err = l.Clear()
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	for i := range benchPendingLag {
		step(i, true)
	}
	b.ReportAllocs()
	defer cpuPerOp(b)()
	i := benchPendingLag
	for b.Loop() {
		step(i, true)
		step(i-benchPendingLag, false)
		i++
	}
}

// benchPendingLag is how many records a pending list waits.
const benchPendingLag = 1000

// BenchmarkTimerShortLived is the shape of a request's deadline: each op
// registers a timer 100 ms ahead for a new key and deletes the one
// registered 100 ops earlier, as the request it guards completes.
func BenchmarkTimerShortLived(b *testing.B) {
	be, t, keys := benchTimers(b)
	const lag = 100
	step := func(i int, register bool) {
		benchSetKey(b, be, keys[i%len(keys)])
		var err error
		if register {
			err = t.Register(nil, int64(i+lag))
		} else {
			err = t.Delete(nil, int64(i+lag))
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	for i := range lag {
		step(i, true)
	}
	b.ReportAllocs()
	defer cpuPerOp(b)()
	i := lag
	for b.Loop() {
		step(i, true)
		step(i-lag, false)
		i++
	}
}

// BenchmarkSweepChurn is the shape of a TTL state that holds requests in
// flight: each op writes a new key and deletes the one written 1000 ops
// earlier, and every 64th op runs a sweep step, at a time at which nothing
// has expired.
func BenchmarkSweepChurn(b *testing.B) {
	be, keys := benchBackend(b)
	c := ttl.New(time.Hour)
	c.SweepBudget = 10
	v, err := state.GetValue(be, state.NewManualClock(0), state.NewValue("v", serializers.Int64(), state.WithTTL(c)))
	if err != nil {
		b.Fatal(err)
	}
	const lag = 1000
	step := func(i int, write bool) {
		benchSetKey(b, be, keys[i%len(keys)])
		var err error
		if write {
			err = v.Update(int64(i))
		} else {
			err = v.Clear()
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	for i := range lag {
		step(i, true)
	}
	b.ReportAllocs()
	defer cpuPerOp(b)()
	i := lag
	for b.Loop() {
		step(i, true)
		step(i-lag, false)
		if i%64 == 0 {
			if _, err := be.Sweep(0); err != nil {
				b.Fatal(err)
			}
		}
		i++
	}
}
