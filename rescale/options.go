package rescale

import (
	"fmt"
	"runtime"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
)

// Options say what to rescale to.
type Options struct {
	// MaxParallelism is the new max parallelism, 1..32768.
	MaxParallelism int
	// Parallelism, when not 0, is the new parallelism of the rescaled
	// operators; otherwise each keeps its own.
	Parallelism int
	// Operator, when set, is the uid of the one operator to rescale;
	// otherwise every keyed operator is.
	Operator string
	// Workers is how many goroutines read, sort and write; 0 means one per
	// core.
	Workers int
	// Memory is the budget for the buffers of all workers together; 0 means
	// DefaultMemory.
	Memory int
	// SpillDir is where the partition phase writes; empty means beside the
	// target, on the file system that receives the output anyway.
	SpillDir string
}

// DefaultMemory keeps a rescale's peak resident memory well under 256 MiB:
// the garbage collector lets the heap grow to about twice what is live
// before it collects, and the runtime needs some of its own.
const DefaultMemory = 64 << 20

func (o *Options) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return runtime.GOMAXPROCS(0)
}

func (o *Options) memory() int {
	if o.Memory > 0 {
		return o.Memory
	}
	return DefaultMemory
}

// Action is what a rescale does to one operator.
type Action string

const (
	// Rebucketed: the max parallelism changes, every keyed entry moves.
	Rebucketed Action = "re-bucketed"
	// ParallelismOnly: only the parallelism changes, in the metadata; the
	// data is copied as it is.
	ParallelismOnly Action = "parallelism only"
	// Unchanged: the operator already has the requested max parallelism and
	// parallelism, or is not one that was asked for.
	Unchanged Action = "unchanged"
)

// opPlan is the decision for one operator.
type opPlan struct {
	index  int
	action Action
	from   *savepoint.Operator
	// maxP and parallelism are the operator's in the output.
	maxP, parallelism int
	// segs are the operator's segments in the input.
	segs []savepoint.Segment
}

// plan checks the options against the savepoint's metadata and decides
// what happens to every operator. Every refusal comes from here, before
// anything is read or written.
func plan(m *savepoint.Metadata, o Options) ([]opPlan, error) {
	if o.MaxParallelism < 1 || o.MaxParallelism > keygroup.MaxParallelismLimit {
		return nil, rewrite.Refusef("--max-parallelism %d outside 1..%d", o.MaxParallelism, keygroup.MaxParallelismLimit)
	}
	if o.Parallelism < 0 {
		return nil, rewrite.Refusef("--parallelism %d below 1", o.Parallelism)
	}
	if o.Parallelism > o.MaxParallelism {
		return nil, rewrite.Refusef("--parallelism %d above --max-parallelism %d", o.Parallelism, o.MaxParallelism)
	}
	if o.Operator != "" {
		op, ok := m.Operator(o.Operator)
		if !ok {
			var uids []string
			for i := range m.Operators {
				uids = append(uids, m.Operators[i].UID)
			}
			return nil, rewrite.Refusef("no operator %q in the savepoint (operators: %v)", o.Operator, uids)
		}
		if !op.Keyed() {
			return nil, rewrite.Refusef("operator %q is not keyed: it has no key groups to rescale", o.Operator)
		}
	}
	plans := make([]opPlan, len(m.Operators))
	selected := 0
	for i := range m.Operators {
		op := &m.Operators[i]
		plans[i] = opPlan{index: i, action: Unchanged, from: op, maxP: op.MaxParallelism, parallelism: op.Parallelism}
		if op.Keyed() && (o.Operator == "" || op.UID == o.Operator) {
			selected++
			if err := plans[i].retarget(o); err != nil {
				return nil, err
			}
		}
	}
	if selected == 0 {
		return nil, rewrite.Refusef("the savepoint has no keyed operator to rescale")
	}
	return plans, nil
}

// retarget applies the options to an operator that is to be rescaled.
func (p *opPlan) retarget(o Options) error {
	op := p.from
	if o.Parallelism > 0 {
		p.parallelism = o.Parallelism
	}
	if p.parallelism > o.MaxParallelism {
		return rewrite.Refusef("operator %q: --max-parallelism %d is below its parallelism %d (give --parallelism too)", op.UID, o.MaxParallelism, p.parallelism)
	}
	if _, err := op.KeyHash.Sum(nil); err != nil {
		return rewrite.Refusef("operator %q: its keys were hashed with %v, which this stateproc cannot compute", op.UID, op.KeyHash)
	}
	p.maxP = o.MaxParallelism
	switch {
	case p.maxP != op.MaxParallelism:
		p.action = Rebucketed
	case p.parallelism != op.Parallelism:
		p.action = ParallelismOnly
	}
	return nil
}

// outputOperator is the operator as the output's metadata describes it.
// Operator list state is kept per subtask, so a new parallelism hands it
// out anew; the engine concatenates the subtasks' lists in order on
// restore (even-split and union alike), so splitting the concatenation
// evenly keeps what every restore sees.
func (p *opPlan) outputOperator() savepoint.Operator {
	op := *p.from
	op.MaxParallelism, op.Parallelism = p.maxP, p.parallelism
	if p.parallelism == p.from.Parallelism {
		return op
	}
	op.OperatorStates = make([]savepoint.OperatorState, len(p.from.OperatorStates))
	for i, s := range p.from.OperatorStates {
		var all [][]byte
		for _, l := range s.Subtasks {
			all = append(all, l...)
		}
		s.Subtasks = make([][][]byte, p.parallelism)
		for j := range s.Subtasks {
			s.Subtasks[j] = all[j*len(all)/p.parallelism : (j+1)*len(all)/p.parallelism]
		}
		op.OperatorStates[i] = s
	}
	return op
}

// describe is the lineage entry.
func describe(plans []opPlan) string {
	s := "rescale"
	for _, p := range plans {
		if p.action == Unchanged {
			continue
		}
		s += fmt.Sprintf(" %s: max parallelism %d to %d, parallelism %d to %d;", p.from.UID, p.from.MaxParallelism, p.maxP, p.from.Parallelism, p.parallelism)
	}
	if s == "rescale" {
		return "rescale: nothing changed"
	}
	return s[:len(s)-1]
}
