package report

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/stateproc/stateproc/inspect"
	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/sizing"
)

// Input is one savepoint to report on.
type Input struct {
	// Path is where Source was read from, as the page names it.
	Path   string
	Source savepoint.Source
}

// Options say what Build reads.
type Options struct {
	// Now is the time TTL ages are taken at, in epoch milliseconds, when
	// HasNow; otherwise each savepoint's creation time.
	Now    int64
	HasNow bool
	// Top is how many of the heaviest keys are listed; 0 means 10.
	Top int
	// Workers is how many segments are read at once; 0 means one per core.
	Workers int
	// SampleBytes bounds what sizing reads per state, as size --sample;
	// 0 reads everything.
	SampleBytes int64
	// Sizing are the projection and budget of the sizing section, as size
	// takes them.
	Sizing sizing.Options
	// TempDir holds sizing's Pebble databases; "" means the system's.
	TempDir string
}

// Report is everything the page shows. Its JSON form (see Summary) is what
// stateproc report -o json prints.
type Report struct {
	// Savepoints are the inputs, oldest first: by creation time, and in
	// the order given when two were created at the same time.
	Savepoints []Savepoint
	// Latest is the newest savepoint, scanned, with its charts' data.
	Latest *Latest
	// Growth has one series per keyed state and timer service of any
	// savepoint that holds something in one, when there are several.
	Growth []Growth
	// Sizing is size's report on the newest savepoint.
	Sizing *sizing.Report
}

// Savepoint is one input with inspect's report of its index (of its scan,
// for the newest).
type Savepoint struct {
	Path    string
	Inspect *inspect.Report
}

// Created is the savepoint's creation time in epoch milliseconds.
func (s *Savepoint) Created() int64 { return int64(s.Inspect.Savepoint.Created) }

// Latest is what the page shows of the newest savepoint beyond inspect's
// report.
type Latest struct {
	Savepoint *Savepoint
	// States has one entry per keyed state and timer service, in inspect's
	// order: keyed states, then timer services, each operator by operator.
	States []StateCharts
}

// StateCharts is the data of one state's charts.
type StateCharts struct {
	Operator string
	Name     string
	Timers   bool
	// Parallelism and MaxParallelism are the operator's: the subtask
	// boundaries the skew chart marks.
	Parallelism, MaxParallelism int
	// KeyGroupBytes holds the bytes of every key group, from the index.
	KeyGroupBytes []uint64
	// ValueSizes counts values by size (keyed states), TimersPerKey keys by
	// their number of timers (timer services).
	ValueSizes, TimersPerKey []Bin
	// State is inspect's figures for a keyed state, Timer for a timer
	// service.
	State *inspect.StateInfo
	Timer *inspect.TimerInfo
}

// Bin counts what lies in [Lo, Hi].
type Bin struct {
	Lo, Hi int64
	Count  uint64
}

// Build reads the inputs and gathers what the page shows. The inputs are
// read, never changed; each is opened and closed by the caller.
func Build(ctx context.Context, inputs []Input, opts Options) (*Report, error) {
	if len(inputs) == 0 {
		return nil, errors.New("report: no savepoint")
	}
	top := cmp.Or(opts.Top, 10)
	rep := &Report{}
	order := make([]int, len(inputs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(inputs[a].Source.Metadata().CreatedAt, inputs[b].Source.Metadata().CreatedAt)
	})
	if err := oneJob(inputs, order[len(order)-1]); err != nil {
		return nil, err
	}
	for n, i := range order {
		in := inputs[i]
		now := in.Source.Metadata().CreatedAt
		if opts.HasNow {
			now = opts.Now
		}
		io := inspect.Options{Now: now, Workers: opts.Workers}
		newest := n == len(order)-1
		if newest {
			io.Scan, io.Top = true, top
		}
		ir, err := inspect.Inspect(ctx, in.Source, io)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.Path, err)
		}
		ir.Savepoint.Path = in.Path
		rep.Savepoints = append(rep.Savepoints, Savepoint{Path: in.Path, Inspect: ir})
		if !newest {
			continue
		}
		latest := &rep.Savepoints[len(rep.Savepoints)-1]
		if rep.Latest, err = charts(ctx, in.Source, latest, opts.Workers); err != nil {
			return nil, fmt.Errorf("%s: %w", in.Path, err)
		}
		job, err := sizing.MeasureSavepoint(ctx, in.Source, in.Path, sizing.MeasureOptions{Now: now, SampleBytes: opts.SampleBytes, TempDir: opts.TempDir})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.Path, err)
		}
		if rep.Sizing, err = sizing.Project(job, opts.Sizing); err != nil {
			return nil, fmt.Errorf("%s: %w", in.Path, err)
		}
	}
	if len(rep.Savepoints) > 1 {
		rep.Growth = growth(rep.Savepoints)
	}
	return rep, nil
}

// Summary is the JSON form of a Report: where it went and what it found,
// for scripts; the page has the rest.
type Summary struct {
	Out        string           `json:"out"`
	Bytes      int64            `json:"bytes"`
	Charts     int              `json:"charts"`
	Savepoints []SavepointEntry `json:"savepoints"`
	// Growth is absent for a single savepoint.
	Growth         []GrowthEntry `json:"growth,omitempty"`
	Recommendation string        `json:"recommendation"`
}

// SavepointEntry names one input of the report.
type SavepointEntry struct {
	Path    string            `json:"path"`
	ID      uint64            `json:"id"`
	Created jsonvalue.Instant `json:"created"`
	Layout  string            `json:"layout"`
}

// GrowthEntry is one state's growth over the savepoints.
type GrowthEntry struct {
	Operator  string   `json:"operator"`
	State     string   `json:"state"`
	Kind      string   `json:"kind"`
	Keys      []uint64 `json:"keys"`
	Entries   []uint64 `json:"entries"`
	Bytes     []uint64 `json:"bytes"`
	Unbounded bool     `json:"unbounded"`
	// Growing names the measures that grow without bound.
	Growing []string `json:"growing,omitempty"`
}

// Summarize returns the JSON form of r, written to out as bytes bytes with
// charts charts.
func (r *Report) Summarize(out string, bytes int64, charts int) Summary {
	s := Summary{Out: out, Bytes: bytes, Charts: charts, Savepoints: []SavepointEntry{}}
	for _, sp := range r.Savepoints {
		i := sp.Inspect.Savepoint
		s.Savepoints = append(s.Savepoints, SavepointEntry{Path: sp.Path, ID: i.ID, Created: i.Created, Layout: i.Layout})
	}
	for _, g := range r.Growth {
		e := GrowthEntry{Operator: g.Operator, State: g.Name, Kind: g.Kind, Keys: []uint64{}, Entries: []uint64{}, Bytes: []uint64{},
			Unbounded: g.Unbounded, Growing: g.Growing}
		for _, p := range g.Points {
			e.Keys, e.Entries, e.Bytes = append(e.Keys, p.Keys), append(e.Entries, p.Entries), append(e.Bytes, p.Bytes)
		}
		s.Growth = append(s.Growth, e)
	}
	if r.Sizing != nil {
		s.Recommendation = r.Sizing.Recommendation.Backend
	}
	return s
}

// ErrNotOneJob is wrapped by the error for savepoints that are not of one
// job: the growth of a state over them would compare two jobs' states.
var ErrNotOneJob = errors.New("report: the savepoints are not of one job")

// oneJob refuses a savepoint that shares no operator uid with the newest,
// inputs[newest]: savepoints of one job keep their operators' uids.
func oneJob(inputs []Input, newest int) error {
	uids := map[string]bool{}
	for _, op := range inputs[newest].Source.Metadata().Operators {
		uids[op.UID] = true
	}
	for i, in := range inputs {
		if i == newest {
			continue
		}
		if !slices.ContainsFunc(in.Source.Metadata().Operators, func(op savepoint.Operator) bool { return uids[op.UID] }) {
			return fmt.Errorf("%w: %s has no operator of %s, the newest", ErrNotOneJob, in.Path, inputs[newest].Path)
		}
	}
	return nil
}
