package sizing

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine/heapbackend"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/engine/state/statetest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// heapTolerance is how far the model may be from the live heap the real
// backend takes. It has been within 0.2% in every case below; the margin
// leaves room for a runtime that rounds a little differently.
const heapTolerance = 0.02

// planTolerance is the same for the model evaluated on a plan, which knows
// average sizes only and fills key groups evenly.
const planTolerance = 0.03

type session struct {
	Start  int64  `avro:"start"`
	Clicks int64  `avro:"clicks"`
	Page   string `avro:"page"`
}

const sessionSchema = `{"type":"record","name":"Session","fields":[{"name":"start","type":"long"},{"name":"clicks","type":"long"},{"name":"page","type":"string"}]}`

// heapCase declares states on a backend and returns what loads the i-th
// key's data once the key is current.
type heapCase struct {
	name       string
	keys, maxP int
	// plan describes the same state as a plan would, when it can.
	plan *PlanState
	// declare registers the states and returns their specs, timer services
	// and the loader.
	declare func(t *testing.T, b state.Backend, clock state.Clock) ([]*state.Spec, []statetest.TimerService, func(i int) error)
}

// input is where a test job leaves the record it decoded before each state
// write. Its garbage shares the allocator's tiny blocks with the state's
// small objects, as a real job's does.
var input string

func decodeRecord(i int) { input = strconv.Itoa(1_000_000 + i) }

func text(i, n int) string {
	return strings.Repeat(string(rune('a'+i%26)), n)
}

func valueCase[T any](name string, keys int, ser serializers.Of[T], v func(i int) T, opts ...state.Option) heapCase {
	return heapCase{name: name, keys: keys, maxP: 128, declare: func(t *testing.T, b state.Backend, clock state.Clock) ([]*state.Spec, []statetest.TimerService, func(int) error) {
		d := state.NewValue("v", ser, opts...)
		h, err := state.GetValue(b, clock, d)
		must(t, err)
		return []*state.Spec{d.Spec()}, nil, func(i int) error {
			decodeRecord(i)
			return h.Update(v(i))
		}
	}}
}

func mapCase(name string, keys, perKey int) heapCase {
	plan := &PlanState{Name: "m", Kind: "map", Keys: float64(keys), EntriesPerKey: float64(perKey), KeyType: "string", KeyBytes: 12,
		MapKeyType: "string", MapKeyBytes: 12, ValueType: "int64"}
	return heapCase{name: name, keys: keys, maxP: 128, plan: plan, declare: func(t *testing.T, b state.Backend, clock state.Clock) ([]*state.Spec, []statetest.TimerService, func(int) error) {
		d := state.NewMap("m", serializers.String(), serializers.Int64())
		h, err := state.GetMap(b, clock, d)
		must(t, err)
		return []*state.Spec{d.Spec()}, nil, func(i int) error {
			for j := range perKey {
				decodeRecord(i)
				if err := h.Put(fmt.Sprintf("category-%03d", j), int64(1000+i)); err != nil {
					return err
				}
			}
			return nil
		}
	}}
}

func listCase(name string, keys, perKey int) heapCase {
	plan := &PlanState{Name: "l", Kind: "list", Keys: float64(keys), EntriesPerKey: float64(perKey), KeyType: "string", KeyBytes: 12,
		ValueType: "string", ValueBytes: 20}
	return heapCase{name: name, keys: keys, maxP: 128, plan: plan, declare: func(t *testing.T, b state.Backend, clock state.Clock) ([]*state.Spec, []statetest.TimerService, func(int) error) {
		d := state.NewList("l", serializers.String())
		h, err := state.GetList(b, clock, d)
		must(t, err)
		return []*state.Spec{d.Spec()}, nil, func(i int) error {
			for j := range perKey {
				decodeRecord(i)
				if err := h.Add(text(i+j, 20)); err != nil {
					return err
				}
			}
			return nil
		}
	}}
}

func timerCase(name string, keys, perKey int) heapCase {
	plan := &PlanState{Name: "t", Kind: kindTimers, Keys: float64(keys), EntriesPerKey: float64(perKey), KeyType: "string", KeyBytes: 12}
	return heapCase{name: name, keys: keys, maxP: 128, plan: plan, declare: func(t *testing.T, b state.Backend, _ state.Clock) ([]*state.Spec, []statetest.TimerService, func(int) error) {
		ts, err := b.Timers("t", serializers.Void())
		must(t, err)
		return nil, []statetest.TimerService{{Name: "t", Namespace: serializers.Void()}}, func(i int) error {
			for j := range perKey {
				decodeRecord(i)
				if err := ts.Register(nil, int64(1_700_000_000_000+i*1000+j)); err != nil {
					return err
				}
			}
			return nil
		}
	}}
}

// TestHeapModelMatchesHeapBackend loads states through the engine's heap
// backend and its typed handles, measures the live heap they take with
// runtime.MemStats, then writes the backend to a savepoint, runs the same
// measurement and projection `stateproc size` does, and compares.
func TestHeapModelMatchesHeapBackend(t *testing.T) {
	avro, err := serializers.Avro[session](sessionSchema)
	must(t, err)
	week := ttl.New(7 * 24 * time.Hour)
	withPlan := func(c heapCase, valueType string, valueBytes float64) heapCase {
		c.plan = &PlanState{Name: "v", Kind: "value", Keys: float64(c.keys), EntriesPerKey: 1, KeyType: "string", KeyBytes: 12,
			ValueType: valueType, ValueBytes: valueBytes}
		return c
	}
	splits := withPlan(valueCase("value string, maps split in tables", 20_000, serializers.String(), func(i int) string { return text(i, 16) }), "string", 16)
	splits.maxP = 16
	cases := []heapCase{
		withPlan(valueCase("value int64", 20_000, serializers.Int64(), func(i int) int64 { return int64(1000 + i) }), "int64", 8),
		valueCase("value int64 below 256", 20_000, serializers.Int64(), func(i int) int64 { return int64(i % 200) }),
		valueCase("value int64 with TTL", 20_000, serializers.Int64(), func(i int) int64 { return int64(1000 + i) }, state.WithTTL(week)),
		withPlan(valueCase("value string 5 B", 20_000, serializers.String(), func(i int) string { return text(i, 5) }), "string", 5),
		withPlan(valueCase("value string 40 B", 20_000, serializers.String(), func(i int) string { return text(i, 40) }), "string", 40),
		withPlan(valueCase("value string 300 B", 10_000, serializers.String(), func(i int) string { return text(i, 300) }), "string", 300),
		splits,
		valueCase("value avro record", 20_000, avro, func(i int) session {
			return session{Start: 1_700_000_000_000 + int64(i), Clicks: int64(i), Page: text(i, 24)}
		}),
		mapCase("map 1 entry per key", 20_000, 1),
		mapCase("map 20 entries per key", 1_000, 20),
		mapCase("map 100 entries per key", 200, 100),
		listCase("list 5 strings per key", 4_000, 5),
		timerCase("timers 1 per key", 20_000, 1),
		timerCase("timers 3 per key", 7_000, 3),
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			maxP := c.maxP
			now := int64(1_700_000_000_000)
			clock := state.NewManualClock(now)
			b, err := heapbackend.New(heapbackend.Options{MaxParallelism: maxP, KeyGroups: keygroup.All(maxP)})
			must(t, err)
			defer b.Close()
			specs, timers, load := c.declare(t, b, clock)

			var entries int
			key := make([]byte, 0, 16)
			before := liveHeap()
			for i := range c.keys {
				key = fmt.Appendf(key[:0], "user-%07d", i)
				must(t, b.SetCurrentKey(key))
				must(t, load(i))
			}
			measured := float64(liveHeap() - before)
			runtime.KeepAlive(b)

			op := statetest.NewOperator("op", 1, maxP, serializers.String(), specs, timers)
			dir := filepath.Join(t.TempDir(), "sp")
			r := statetest.WriteSavepoint(t, dir, statetest.NewMetadata(op, now), now, b)
			job, err := MeasureSavepoint(context.Background(), r, dir, MeasureOptions{Now: now})
			must(t, err)
			rep, err := Project(job, Options{})
			must(t, err)
			predicted := rep.Total.Heap.Low
			for _, st := range rep.Operators[0].States {
				entries += int(st.Entries)
			}
			t.Logf("%d entries: measured %.0f B (%.1f per entry), model %.0f B (%.1f per entry), off by %+.2f%%",
				entries, measured, measured/float64(entries), predicted, predicted/float64(entries), 100*(predicted/measured-1))
			if math.Abs(predicted/measured-1) > heapTolerance {
				t.Errorf("model %.0f B is more than %.0f%% from the measured %.0f B", predicted, 100*heapTolerance, measured)
			}
			if c.plan == nil {
				return
			}
			plan := &Plan{Operators: []PlanOperator{{UID: "op", Parallelism: 1, MaxParallelism: maxP, States: []PlanState{*c.plan}}}}
			job, err = plan.Job()
			must(t, err)
			rep, err = Project(job, Options{})
			must(t, err)
			planned := rep.Total.Heap.Low
			t.Logf("the plan's model %.0f B, off by %+.2f%%", planned, 100*(planned/measured-1))
			if math.Abs(planned/measured-1) > planTolerance {
				t.Errorf("the plan's model %.0f B is more than %.0f%% from the measured %.0f B", planned, 100*planTolerance, measured)
			}
		})
	}
}

// liveHeap collects garbage until the heap settles and returns what is
// live.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A record whose two fields are each the record before it has a tree of
// 2^60 leaves; the model lays each record out once.
func TestAvroLayoutOfSharedRecords(t *testing.T) {
	schema := `{"type":"record","name":"R0","fields":[{"name":"x","type":"long"}]}`
	for i := 1; i <= 60; i++ {
		schema = fmt.Sprintf(`{"type":"record","name":"R%d","fields":[{"name":"a","type":%s},{"name":"b","type":"R%d"}]}`, i, schema, i-1)
	}
	l, err := parseAvroLayout(schema)
	if err != nil {
		t.Fatal(err)
	}
	// The records below the model's depth are pointers: R60 holds 2^k
	// copies of R(60-k) inline down to there.
	if !l.pointers || l.size < 1<<20 {
		t.Fatalf("layout %+v", l)
	}
	box, err := avroBoxer(schema)
	if err != nil {
		t.Fatal(err)
	}
	if h := box([]byte{0x02}); h <= 0 {
		t.Fatalf("box of a short value: %v", h)
	}
}
