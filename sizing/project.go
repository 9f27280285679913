package sizing

import (
	"errors"
	"fmt"
	"math"

	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/keygroup"
)

// ErrOption is wrapped by errors about projection options that do not fit
// the job (a parallelism above an operator's max parallelism).
var ErrOption = errors.New("sizing: bad option")

// MaxCount is the most keys or entries one state may be projected to, and
// the largest number a plan may give. A quadrillion is beyond any state
// that runs; above it the size arithmetic would leave the range of exact
// integers.
const MaxCount = 1e15

// Options are the projections and the budget of a Report.
type Options struct {
	// Parallelism replaces every operator's own when above 0.
	Parallelism int
	// Scale multiplies keys and entries; 0 means 1.
	Scale float64
	// Keys, when above 0, projects each operator to that many distinct
	// keys; entries per key stay as they are.
	Keys float64
	// ChangeRate is the fraction of entries written per checkpoint interval.
	ChangeRate float64
	// MemoryPerSlot is the heap budget of a task slot in bytes.
	MemoryPerSlot float64
	// GOGC is the collector's setting: the heap grows to live × (1 +
	// GOGC/100) before it is collected.
	GOGC int
	// FullCheckpointLimit is the most a slot's full checkpoint may write
	// before the heap backend's full-only checkpoints decide for Pebble.
	FullCheckpointLimit float64
}

// Project sizes job under opts.
func Project(job *Job, opts Options) (*Report, error) {
	if opts.Scale == 0 {
		opts.Scale = 1
	}
	rep := &Report{Source: job.Source, FromPlan: job.FromPlan, Now: jsonvalue.Instant(job.Now), HeapOverhead: job.HeapOverhead, Basis: job.Basis}
	for i := range job.Operators {
		op := &job.Operators[i]
		or, err := projectOperator(job, op, opts)
		if err != nil {
			return nil, err
		}
		rep.Operators = append(rep.Operators, *or)
		rep.Total.add(or.Total)
		rep.Findings = append(rep.Findings, findings(op)...)
	}
	rep.Slots = slots(rep.Operators)
	rep.Checkpoints = Checkpoints{Full: rep.Total.Savepoint, Incremental: opts.ChangeRate * rep.Total.Pebble, ChangeRate: opts.ChangeRate}
	rep.Recommendation = recommend(rep.Slots, opts)
	return rep, nil
}

func projectOperator(job *Job, op *Operator, opts Options) (*OperatorReport, error) {
	p := op.Parallelism
	if opts.Parallelism > 0 {
		p = opts.Parallelism
	}
	if err := keygroup.Validate(p, op.MaxParallelism); err != nil {
		return nil, fmt.Errorf("%w: operator %q: parallelism %d with max parallelism %d: the number of key groups caps the parallelism (stateproc rescale changes it in a savepoint)",
			ErrOption, op.UID, p, op.MaxParallelism)
	}
	scale := opts.Scale
	if opts.Keys > 0 {
		if keys := operatorKeys(op); keys > 0 {
			scale *= opts.Keys / keys
		}
	}
	for i := range op.States {
		t := op.States[i].totals()
		if n := max(t.Keys, t.Entries) * scale; n > MaxCount {
			return nil, fmt.Errorf("%w: operator %q state %q projected to %.3g keys or entries, above the %.0e that stateproc models",
				ErrOption, op.UID, op.States[i].Name, n, MaxCount)
		}
	}
	or := &OperatorReport{UID: op.UID, Parallelism: p, MaxParallelism: op.MaxParallelism, Scale: scale}
	for i := range p {
		r := keygroup.ForSubtask(i, p, op.MaxParallelism)
		or.Subtasks = append(or.Subtasks, SubtaskReport{Subtask: i, KeyGroups: r.String()})
	}
	for i := range op.States {
		st := &op.States[i]
		sr := StateReport{Name: st.Name, Kind: st.Kind, PerEntry: st.PerEntry, Sample: st.Sample,
			PebbleFrom: st.PebbleFrom, Age: st.Age, Timers: st.Timers}
		if st.TTL != nil {
			sr.TTLMillis = st.TTL.Millis()
		}
		for j := range or.Subtasks {
			sub := &or.Subtasks[j]
			r := keygroup.ForSubtask(j, p, op.MaxParallelism)
			var entries float64
			for kg := r.Start; kg <= r.End; kg++ {
				t := st.keyGroupTotals(kg, scale, job.HeapOverhead)
				sub.Totals.add(t)
				sr.Totals.add(t)
				sr.Keys += st.KeyGroups[kg].Keys * scale
				entries += st.KeyGroups[kg].Entries * scale
			}
			sr.Entries += entries
			if job.HeapOverhead == nil {
				once := st.heap.subtask(entries)
				sub.Heap = sub.Heap.add(Range{once, once})
				sr.Heap = sr.Heap.add(Range{once, once})
			}
		}
		if sr.Entries > 0 {
			var empty float64
			if job.HeapOverhead == nil {
				empty = float64(op.MaxParallelism) * st.heap.container(0)
			}
			sr.HeapPerEntry = Range{(sr.Heap.Low - empty) / sr.Entries, (sr.Heap.High - empty) / sr.Entries}
		}
		or.States = append(or.States, sr)
		or.Total.add(sr.Totals)
	}
	return or, nil
}

// operatorKeys is the operator's distinct keys as far as the index tells:
// the most any one state has, since states share keys.
func operatorKeys(op *Operator) float64 {
	var most float64
	for i := range op.States {
		most = max(most, op.States[i].totals().Keys)
	}
	return most
}

// keyGroupTotals sizes one key group of the state, scaled. On the heap it
// applies the model, or the plan's overhead factors when it has them.
func (st *State) keyGroupTotals(kg int, scale float64, overhead *Range) Totals {
	g := st.KeyGroups[kg]
	t := Totals{Savepoint: g.Stored * scale, Pebble: g.Bytes * scale * st.PebblePerByte}
	if overhead != nil {
		t.Heap = Range{g.Bytes * scale * overhead.Low, g.Bytes * scale * overhead.High}
		return t
	}
	records := g.Keys * st.RecordsPerKey * scale
	units := records
	if st.Kind == kindTimers {
		units = g.Entries * scale
	}
	containers := st.heap.container(units)
	if st.spreadPerKey > 0 {
		containers = st.spreadContainer(units / st.spreadPerKey)
	}
	heap := containers + records*st.HeapPerRecord + g.Entries*scale*st.HeapPerEntry
	t.Heap = Range{heap, heap}
	return t
}

// spreadPoints is how many quantiles of the spread spreadContainer
// averages over.
const spreadPoints = 32

// spreadContainer averages the container cost of a key group over the
// keys a hash puts there: a normal approximation of the binomial, with
// mean and variance keys, taken at evenly spaced quantiles.
func (st *State) spreadContainer(keys float64) float64 {
	if m := st.spreadMemo; m.keys == keys && m.cost > 0 {
		return m.cost
	}
	sd := math.Sqrt(keys)
	var sum float64
	for k := range spreadPoints {
		z := math.Sqrt2 * math.Erfinv(2*(float64(k)+0.5)/spreadPoints-1)
		sum += st.heap.container(max(0, keys+sd*z) * st.spreadPerKey)
	}
	st.spreadMemo.keys, st.spreadMemo.cost = keys, sum/spreadPoints
	return st.spreadMemo.cost
}

// slots adds up subtask i of every operator into slot i.
func slots(ops []OperatorReport) []SlotReport {
	var out []SlotReport
	for _, op := range ops {
		for i, s := range op.Subtasks {
			if i == len(out) {
				out = append(out, SlotReport{Slot: i})
			}
			out[i].Totals.add(s.Totals)
		}
	}
	return out
}

func recommend(slots []SlotReport, opts Options) Recommendation {
	r := Recommendation{GOGC: opts.GOGC, MemoryPerSlot: opts.MemoryPerSlot, FullCheckpointLimit: opts.FullCheckpointLimit}
	for _, s := range slots {
		if s.Heap.High > r.HeapPerSlot.High {
			r.HeapSlot, r.HeapPerSlot = s.Slot, s.Heap
		}
		if s.Pebble > r.PebblePerSlot {
			r.PebbleSlot, r.PebblePerSlot = s.Slot, s.Pebble
		}
		r.FullPerSlot = max(r.FullPerSlot, s.Savepoint)
	}
	headroom := 1 + float64(opts.GOGC)/100
	r.HeapNeeded = Range{r.HeapPerSlot.Low * headroom, r.HeapPerSlot.High * headroom}
	r.HeapFits = r.HeapNeeded.High <= opts.MemoryPerSlot
	r.FullTooLarge = r.FullPerSlot > opts.FullCheckpointLimit
	r.Backend = "pebble"
	if r.HeapFits && !r.FullTooLarge {
		r.Backend = "heap"
	}
	return r
}

// findings flags what may grow without bound, as measured.
func findings(op *Operator) []Finding {
	var out []Finding
	for i := range op.States {
		st := &op.States[i]
		f := Finding{Operator: op.UID, State: st.Name, Estimated: !st.Sample.Complete()}
		if a := st.Age; a != nil && a.Expired > 0 {
			g := f
			g.Kind, g.Count, g.Of, g.Bytes, g.Cleanup = FindingPastTTL, a.Expired, st.totals().Entries, a.ExpiredBytes, a.Cleanup
			out = append(out, g)
		}
		if t := st.Timers; t != nil && t.PiledUp > 0 {
			g := f
			g.Kind, g.Count, g.Of, g.MaxPerKey, g.Timers = FindingTimerLeak, t.PiledUp, t.Keys, t.MaxPerKey, t
			out = append(out, g)
		}
		if t := st.Timers; t != nil && t.Overdue > 0 {
			g := f
			g.Kind, g.Count, g.Of, g.Timers = FindingTimersOverdue, t.Overdue, t.Timers, t
			out = append(out, g)
		}
		if st.ValueCollection {
			g := f
			g.Kind = FindingValueCollection
			out = append(out, g)
		}
		if (st.Kind == "list" || st.Kind == "map") && st.TTL == nil {
			g := f
			g.Kind = FindingNoTTLCollection
			out = append(out, g)
		}
	}
	return out
}
