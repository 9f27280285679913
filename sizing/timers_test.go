package sizing

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/engine/heapbackend"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/engine/state/statetest"
	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// timerFindings returns the timer findings of rep by "operator/service kind".
func timerFindings(rep *Report) map[string]Finding {
	out := map[string]Finding{}
	for _, f := range rep.Findings {
		if f.Kind == FindingTimerLeak || f.Kind == FindingTimersOverdue {
			out[f.Operator+"/"+f.State+" "+f.Kind] = f
		}
	}
	return out
}

// TestGatewayMeterTimersAreNoLeak sizes the checked-in GatewayMeter
// savepoints taken mid-stream. TenantCost registers an event-time timer per
// record at the record's time, so a tenant holds several at once; each
// fires as the watermark passes it, and none is a leak.
func TestGatewayMeterTimersAreNoLeak(t *testing.T) {
	for _, name := range []string{"gateway-p1-heap", "gateway-p2-pebble", "gateway-p3-heap-zstd"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("../testdata/savepoints/v2", name)
			r := sptest.Open(t, dir)
			job, err := MeasureSavepoint(context.Background(), r, dir, MeasureOptions{Now: r.Metadata().CreatedAt, TempDir: t.TempDir()})
			must(t, err)
			rep, err := Project(job, Options{})
			must(t, err)
			var tc *TimerStats
			for _, op := range rep.Operators {
				for _, st := range op.States {
					if op.UID == "tenant-cost" && st.Name == "event-time" {
						tc = st.Timers
					}
				}
			}
			if tc == nil || tc.AboveOne == 0 || tc.MaxPerKey < 2 {
				t.Fatalf("tenant-cost's timers %+v: want tenants holding several", tc)
			}
			if tc.Domain != EventTime || tc.Time == nil || int64(*tc.Time) != r.Metadata().Watermark {
				t.Errorf("tenant-cost's timers are set against %q at %v, want event time at the watermark %d", tc.Domain, tc.Time, r.Metadata().Watermark)
			}
			if tc.PiledUp != 0 || tc.Overdue != 0 || tc.MaxSpreadMillis > 60_000 {
				t.Errorf("tenant-cost's timers %+v: want none piled up or overdue, spread within a minute", tc)
			}
			if f := timerFindings(rep); len(f) > 0 {
				t.Errorf("timer findings on a healthy job: %+v", f)
			}
		})
	}
}

// The leak savepoint's job times: the watermark lags the creation time.
const (
	ruleNow       = int64(1_700_000_000_000)
	ruleWatermark = ruleNow - 60*minute
	day           = 24 * 60 * minute
)

// TestTimerLeakRule checks each part of the rule on timers written by the
// heap backend: what piles up and what is overdue is flagged, what fires
// soon is not, however many a key holds.
func TestTimerLeakRule(t *testing.T) {
	const maxP = 128
	b, err := heapbackend.New(heapbackend.Options{MaxParallelism: maxP, KeyGroups: keygroup.All(maxP)})
	must(t, err)
	defer b.Close()
	services := []statetest.TimerService{
		{Name: "event-time", Namespace: serializers.Void()},
		{Name: "processing-time", Namespace: serializers.Void()},
		{Name: "timeout", Namespace: serializers.Void()},
	}
	declared := map[string]state.Timers{}
	for _, s := range services {
		ts, err := b.Timers(s.Name, s.Namespace)
		must(t, err)
		declared[s.Name] = ts
	}
	register := func(service, key string, times ...int64) {
		t.Helper()
		must(t, b.SetCurrentKey([]byte(key)))
		for _, at := range times {
			must(t, declared[service].Register(nil, at))
		}
	}
	// Event time. Twenty tenants with a timer per record, ten records each
	// just ahead of the watermark, as GatewayMeter's TenantCost: healthy.
	// Three keys whose timers lie two and three days behind the
	// watermark: overdue, six timers.
	for i := range 20 {
		var times []int64
		for j := range 10 {
			times = append(times, ruleWatermark+int64(i*10+j)*100)
		}
		register("event-time", fmt.Sprintf("tenant-%d", i), times...)
	}
	for i := range 3 {
		register("event-time", fmt.Sprintf("stuck-%d", i), ruleWatermark-2*day, ruleWatermark-3*day)
	}
	// Processing time. Four keys registered a timer 30 days ahead at each
	// of their events over two days and deleted none: they pile up. Keys
	// with a reminder and a cleanup ten days apart, and keys with three
	// timers over exactly a day, do not.
	for i := range 4 {
		var times []int64
		for j := range 12 {
			times = append(times, ruleNow+30*day-int64(j)*4*60*minute)
		}
		register("processing-time", fmt.Sprintf("user-%d", i), times...)
	}
	for i := range 5 {
		register("processing-time", fmt.Sprintf("remind-%d", i), ruleNow+60*minute, ruleNow+10*day)
		register("processing-time", fmt.Sprintf("daily-%d", i), ruleNow, ruleNow+day/2, ruleNow+day)
	}
	// A service whose name does not tell its domain: its spread still
	// counts, even at the ends of time, but nothing is overdue.
	register("timeout", "ends", math.MinInt64, 0, math.MaxInt64)
	register("timeout", "old", 1000, 2000)

	op := statetest.NewOperator("op", 1, maxP, serializers.String(), nil, services)
	meta := statetest.NewMetadata(op, ruleNow)
	meta.Watermark = ruleWatermark
	dir := filepath.Join(t.TempDir(), "timers")
	r := statetest.WriteSavepoint(t, dir, meta, ruleNow, b)
	job, err := MeasureSavepoint(context.Background(), r, dir, MeasureOptions{Now: ruleNow, TempDir: t.TempDir()})
	must(t, err)

	want := map[string]TimerStats{
		"event-time": {Timers: 206, Keys: 23, AboveOne: 23, MaxPerKey: 10, Domain: EventTime, Time: jsonvalue.Ptr(ruleWatermark),
			MaxSpreadMillis: day, Overdue: 6},
		"processing-time": {Timers: 73, Keys: 14, AboveOne: 14, MaxPerKey: 12, Domain: ProcessingTime, Time: jsonvalue.Ptr(ruleNow),
			MaxSpreadMillis: 10*day - 60*minute, PiledUp: 4},
		"timeout": {Timers: 5, Keys: 2, AboveOne: 2, MaxPerKey: 3, MaxSpreadMillis: math.MaxInt64, PiledUp: 1},
	}
	for name, w := range want {
		got := stateNamed(t, job, name).Timers
		if got == nil {
			t.Fatalf("%s: no timer figures", name)
		}
		if got.Timers != w.Timers || got.Keys != w.Keys || got.AboveOne != w.AboveOne || got.MaxPerKey != w.MaxPerKey ||
			got.Domain != w.Domain || (got.Time == nil) != (w.Time == nil) || got.Time != nil && *got.Time != *w.Time ||
			got.MaxSpreadMillis != w.MaxSpreadMillis || got.PiledUp != w.PiledUp || got.Overdue != w.Overdue {
			t.Errorf("%s: %+v, want %+v", name, *got, w)
		}
	}

	rep, err := Project(job, Options{})
	must(t, err)
	found := timerFindings(rep)
	for key, w := range map[string]struct{ count, of float64 }{
		"op/event-time " + FindingTimersOverdue:  {6, 206},
		"op/processing-time " + FindingTimerLeak: {4, 14},
		"op/timeout " + FindingTimerLeak:         {1, 2},
	} {
		f, ok := found[key]
		if !ok || f.Count != w.count || f.Of != w.of || f.Timers == nil {
			t.Errorf("%s: %+v, want %v of %v with the service's figures", key, f, w.count, w.of)
		}
		delete(found, key)
	}
	if len(found) > 0 {
		t.Errorf("findings beyond the leaks: %+v", found)
	}
}

// TestTimerClock checks which times the rule sets timers against: the
// watermark for event time once there is one, the creation time for
// processing time, nothing for a service whose name does not tell its
// domain or for a savepoint of Apache Flink's, which records neither.
func TestTimerClock(t *testing.T) {
	const created, watermark = int64(2_000), int64(1_000)
	op := func(key serializers.Kind, names ...string) savepoint.Operator {
		o := savepoint.Operator{UID: "op", Key: serializers.Snapshot{Kind: key}}
		for _, n := range names {
			o.Timers = append(o.Timers, savepoint.TimerService{Name: n})
		}
		return o
	}
	for _, c := range []struct {
		op        savepoint.Operator
		watermark int64
		domain    string
		time      *jsonvalue.Instant
	}{
		{op(serializers.KindString, "event-time"), watermark, EventTime, jsonvalue.Ptr(watermark)},
		{op(serializers.KindString, "event-time"), math.MinInt64, EventTime, nil},
		{op(serializers.KindString, "processing-time"), math.MinInt64, ProcessingTime, jsonvalue.Ptr(created)},
		{op(serializers.KindString, "timeout"), watermark, "", nil},
		{op(serializers.KindExternal, "_timer_state/event_user-timers"), watermark, EventTime, nil},
		{op(serializers.KindExternal, "_timer_state/processing_window-timers"), watermark, ProcessingTime, nil},
	} {
		meta := &savepoint.Metadata{CreatedAt: created, Watermark: c.watermark, Operators: []savepoint.Operator{c.op}}
		domain, at := timerClock(meta, savepoint.StateRef{Timer: true})
		if domain != c.domain || (at == nil) != (c.time == nil) || at != nil && *at != *c.time {
			t.Errorf("%s at watermark %d: %q %v, want %q %v", c.op.Timers[0].Name, c.watermark, domain, at, c.domain, c.time)
		}
	}
}
