package engine

import (
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
)

// Manifest describes the built job without running it: every operator
// that savepoints hold (those with a uid), with its keyed states,
// serializer snapshots, TTL, timer services, operator and broadcast states.
func (j *Job) Manifest() (savepoint.Manifest, error) {
	if err := j.Validate(); err != nil {
		return savepoint.Manifest{}, err
	}
	var ops []savepoint.Operator
	var nodes []*node
	for _, n := range j.nodes {
		if n.uid != "" {
			ops = append(ops, n.model())
			nodes = append(nodes, n)
		}
	}
	m := savepoint.NewManifest(j.name, ops)
	for i, n := range nodes {
		m.Operators[i].MaxParallelismSet = n.maxParallelismSet
	}
	return m, nil
}

// model describes n as the savepoint metadata records it, with empty
// operator and broadcast state contents.
func (n *node) model() savepoint.Operator {
	op := savepoint.Operator{UID: n.uid, Name: n.name, Parallelism: n.parallelism, MaxParallelism: n.maxParallelism}
	if op.MaxParallelism == 0 {
		op.MaxParallelism = keygroup.DefaultMaxParallelism(n.parallelism)
	}
	if n.kind == keyedNode {
		op.KeyHash = keygroup.Murmur3
		op.Key = n.key.Snapshot()
		for _, d := range n.states {
			op.States = append(op.States, d.Spec().Model())
		}
		for _, name := range []string{EventTimeTimers, ProcessingTimeTimers} {
			op.Timers = append(op.Timers, savepoint.TimerService{Name: name, Namespace: n.timerNamespace().Snapshot()})
		}
	}
	for _, s := range n.opState {
		op.OperatorStates = append(op.OperatorStates, savepoint.OperatorState{Name: s.name, Distribution: s.distribution, Element: s.element.Snapshot(),
			Subtasks: make([][][]byte, n.parallelism)})
	}
	for _, b := range n.bcast {
		op.BroadcastStates = append(op.BroadcastStates, savepoint.BroadcastState{Name: b.name, Key: b.key.Snapshot(), Value: b.val.Snapshot()})
	}
	return op
}
