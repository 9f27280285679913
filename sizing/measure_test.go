package sizing

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine/heapbackend"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/engine/state/statetest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/ttl"
)

// The leak savepoint's clock: the savepoint is taken at leakNow.
const (
	leakNow = int64(1_700_000_000_000)
	minute  = int64(time.Minute / time.Millisecond)
)

// leakAges lists, for the open state (TTL 10 minutes), how many requests
// were last modified how long before the savepoint, and in which bucket of
// the age histogram they belong.
var leakAges = []struct {
	n      int
	age    int64
	bucket int // -1: in the future
}{
	{10, 1 * minute, 0},
	{5, 4 * minute, 1},
	{4, 6 * minute, 2},
	{3, 9 * minute, 3},
	{7, 10 * minute, 4}, // exactly the TTL: expired, as ttl.Expired says
	{6, 15 * minute, 4},
	{8, 25 * minute, 5},
	{2, -1 * minute, -1},
}

// writeLeakSavepoint builds, with the engine's heap backend, a savepoint of
// requests of which some were abandoned long ago: an open state with a
// 10-minute TTL and cleanup on read only, a rates map with a 1-hour TTL
// and a sweeper, and a timer service where three keys hold four timers a
// minute apart.
func writeLeakSavepoint(t *testing.T) (*snapshotfmt.Reader, string) {
	const maxP = 128
	clock := state.NewManualClock(leakNow)
	b, err := heapbackend.New(heapbackend.Options{MaxParallelism: maxP, KeyGroups: keygroup.All(maxP)})
	must(t, err)
	defer b.Close()
	openD := state.NewValue("open", serializers.String(), state.WithTTL(ttl.New(10*time.Minute)))
	open, err := state.GetValue(b, clock, openD)
	must(t, err)
	hourly := ttl.New(time.Hour)
	hourly.SweepBudget = 100
	ratesD := state.NewMap("rates", serializers.String(), serializers.Int64(), state.WithTTL(hourly))
	rates, err := state.GetMap(b, clock, ratesD)
	must(t, err)
	timers, err := b.Timers("timeout", serializers.Void())
	must(t, err)

	i := 0
	for _, a := range leakAges {
		for range a.n {
			must(t, b.SetCurrentKey(fmt.Appendf(nil, "r-%06d", i)))
			clock.Set(leakNow - a.age)
			must(t, open.Update(fmt.Sprintf("tenant-%d", i%3)))
			timersOfKey := 1
			if i < 3 {
				timersOfKey = 4
			}
			for j := range timersOfKey {
				must(t, timers.Register(nil, leakNow+int64(j+1)*minute))
			}
			i++
		}
	}
	// Two of the rates are two hours old, past their TTL.
	for k, age := range []int64{5 * minute, 120 * minute, 120 * minute} {
		must(t, b.SetCurrentKey([]byte("tenant-0")))
		clock.Set(leakNow - age)
		must(t, rates.Put(fmt.Sprintf("model-%d", k), 1000))
	}
	op := statetest.NewOperator("assemble", 1, maxP, serializers.String(), []*state.Spec{openD.Spec(), ratesD.Spec()},
		[]statetest.TimerService{{Name: "timeout", Namespace: serializers.Void()}})
	dir := filepath.Join(t.TempDir(), "leak")
	return statetest.WriteSavepoint(t, dir, statetest.NewMetadata(op, leakNow), leakNow, b), dir
}

func stateNamed(t *testing.T, job *Job, name string) *State {
	for i := range job.Operators[0].States {
		if st := &job.Operators[0].States[i]; st.Name == name {
			return st
		}
	}
	t.Fatalf("no state %q", name)
	return nil
}

func TestTTLAgesAndLeaks(t *testing.T) {
	r, dir := writeLeakSavepoint(t)
	job, err := MeasureSavepoint(context.Background(), r, dir, MeasureOptions{Now: leakNow})
	must(t, err)

	open := stateNamed(t, job, "open")
	var want [6]float64
	var future, expired, entries float64
	for _, a := range leakAges {
		entries += float64(a.n)
		if a.bucket < 0 {
			future += float64(a.n)
			continue
		}
		want[a.bucket] += float64(a.n)
		if a.bucket >= 4 {
			expired += float64(a.n)
		}
	}
	if open.Age.Buckets != want || open.Age.Future != future || open.Age.Expired != expired {
		t.Errorf("open ages %v, future %v, expired %v; want %v, %v, %v", open.Age.Buckets, open.Age.Future, open.Age.Expired, want, future, expired)
	}
	// Keys "r-000000" are 8 bytes; values "tenant-N" 8 bytes after the TTL
	// timestamp; framing is the lengths of key, namespace and value and the
	// count, one byte each.
	if want := (Breakdown{Key: 8, Value: 8, TTL: 8, Framing: 4, Total: 28}); open.PerEntry != want {
		t.Errorf("open bytes per entry %+v, want %+v", open.PerEntry, want)
	}
	if !open.Sample.Complete() {
		t.Errorf("a small savepoint was sampled: %+v", open.Sample)
	}

	rep, err := Project(job, Options{})
	must(t, err)
	byKind := map[string]Finding{}
	for _, f := range rep.Findings {
		byKind[f.State+" "+f.Kind] = f
	}
	leak := byKind["open "+FindingPastTTL]
	if leak.Count != expired || leak.Of != entries || len(leak.Cleanup) != 0 || leak.Estimated || leak.Bytes != expired*28 {
		t.Errorf("open's leak finding %+v, want %v of %v entries, %v bytes, no cleanup", leak, expired, entries, expired*28)
	}
	if f := byKind["rates "+FindingPastTTL]; f.Count != 2 || f.Of != 3 || len(f.Cleanup) != 1 {
		t.Errorf("rates' finding %+v, want 2 of 3 past TTL with the sweeper as cleanup", f)
	}
	// Four timers a minute apart on three keys are counted, and are no
	// leak: they fire within minutes.
	if f, ok := byKind["timeout "+FindingTimerLeak]; ok {
		t.Errorf("timer finding %+v for timers that fire within minutes", f)
	}
	if timers := stateNamed(t, job, "timeout").Timers; timers.Timers != entries+9 || timers.AboveOne != 3 || timers.MaxPerKey != 4 ||
		timers.MaxSpreadMillis != 3*minute {
		t.Errorf("timers %+v, want %v, 3 keys with more than one, at most 4 spread over 3 minutes", timers, entries+9)
	}

	// An hour later every open request is past its TTL.
	later, err := MeasureSavepoint(context.Background(), r, dir, MeasureOptions{Now: leakNow + 60*minute})
	must(t, err)
	if got := stateNamed(t, later, "open").Age.Expired; got != entries {
		t.Errorf("an hour later %v entries are past their TTL, want all %v", got, entries)
	}
}

func TestSampledMeasurementScales(t *testing.T) {
	r, dir := writeLeakSavepoint(t)
	job, err := MeasureSavepoint(context.Background(), r, dir, MeasureOptions{Now: leakNow, SampleBytes: 1})
	must(t, err)
	open := stateNamed(t, job, "open")
	if open.Sample.Complete() || open.Sample.KeyGroups != 1 {
		t.Fatalf("sample %+v, want the first key group only", open.Sample)
	}
	// The histogram of the sample is scaled to the whole state.
	total := open.Age.Future
	for _, n := range open.Age.Buckets {
		total += n
	}
	if whole := float64(open.Sample.Of); total < whole*0.999 || total > whole*1.001 {
		t.Errorf("the scaled histogram counts %v entries, the state has %v", total, whole)
	}
	rep, err := Project(job, Options{})
	must(t, err)
	for _, f := range rep.Findings {
		// rates has one key, so its sample is the whole state.
		if f.State != "rates" && !f.Estimated {
			t.Errorf("finding %+v from a sample is not marked estimated", f)
		}
	}
}
