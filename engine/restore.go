package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// restoreSource is the savepoint or checkpoint a run starts from, matched
// with the job's operators by uid.
type restoreSource struct {
	src savepoint.Source
	// release frees what only the restore of keyed state reads (the
	// databases of an incremental checkpoint); close frees everything.
	release, close func() error
	// ops maps each operator of the job to its index in the savepoint, or
	// -1 when the savepoint does not hold it.
	ops map[*node]int

	mu sync.Mutex
	// restoring counts the keyed subtasks that have not restored yet; the
	// last one calls release.
	restoring int
}

// restored is called by each keyed subtask once it has restored.
func (r *restoreSource) restored() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.restoring--; r.restoring == 0 {
		return r.release()
	}
	return nil
}

// ErrRestore is wrapped by errors about a savepoint that does not fit the
// job.
var ErrRestore = fmt.Errorf("engine: cannot restore")

func openRestore(ctx context.Context, a *attempt, dir string) (_ *restoreSource, err error) {
	rs := &restoreSource{ops: map[*node]int{}}
	if rs.src, rs.release, rs.close, err = openSource(ctx, dir, filepath.Join(a.dir(), "restore")); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			rs.close()
		}
	}()
	meta := rs.src.Metadata()
	claimed := map[int]bool{}
	for _, n := range a.job.nodes {
		rs.ops[n] = -1
		if n.uid == "" {
			continue
		}
		for i := range meta.Operators {
			if meta.Operators[i].UID == n.uid {
				rs.ops[n] = i
				claimed[i] = true
				if err := checkOperator(n, &meta.Operators[i]); err != nil {
					return nil, err
				}
			}
		}
	}
	for i := range meta.Operators {
		if !claimed[i] && !a.opts.AllowNonRestoredState {
			return nil, fmt.Errorf("%w: %w: operator %q of the savepoint is not in the job (allow non-restored state to drop it)", ErrRestore, state.ErrNotRestored, meta.Operators[i].UID)
		}
	}
	return rs, nil
}

// checkOperator verifies that a savepoint operator can be restored into n:
// same key serializer, same max parallelism unless the job left it unset,
// and a parallelism the key groups allow.
func checkOperator(n *node, saved *savepoint.Operator) error {
	if n.kind != keyedNode {
		if saved.Keyed() {
			return fmt.Errorf("%w: operator %q is keyed in the savepoint but not in the job", ErrRestore, n.uid)
		}
		return nil
	}
	if !saved.Keyed() {
		if len(saved.States) > 0 {
			return fmt.Errorf("%w: operator %q is not keyed in the savepoint", ErrRestore, n.uid)
		}
		return nil
	}
	if c := serializers.Check(saved.Key, n.key.Snapshot()); c.Verdict != serializers.CompatibleAsIs {
		return fmt.Errorf("%w: %w: operator %q: key serializer changed: %s", ErrRestore, state.ErrIncompatible, n.uid, c.Reason)
	}
	if n.maxParallelism != saved.MaxParallelism {
		if n.maxParallelismSet {
			return fmt.Errorf("%w: operator %q: the savepoint has max parallelism %d, the job %d (rewrite it with stateproc rescale)", ErrRestore, n.uid, saved.MaxParallelism, n.maxParallelism)
		}
		n.maxParallelism = saved.MaxParallelism
	}
	if n.parallelism > n.maxParallelism {
		return fmt.Errorf("%w: operator %q: parallelism %d above max parallelism %d", ErrRestore, n.uid, n.parallelism, n.maxParallelism)
	}
	return nil
}

// savedOperator returns n's operator in the savepoint, if any.
func (r *restoreSource) savedOperator(n *node) *savepoint.Operator {
	if r == nil || r.ops[n] < 0 {
		return nil
	}
	return &r.src.Metadata().Operators[r.ops[n]]
}

// operatorStateOf returns every element of n's operator state name, over
// all the old subtasks.
func (r *restoreSource) operatorStateOf(n *node, name string) [][]byte {
	op := r.savedOperator(n)
	if op == nil {
		return nil
	}
	var all [][]byte
	for _, s := range op.OperatorStates {
		if s.Name == name {
			for _, l := range s.Subtasks {
				all = append(all, l...)
			}
		}
	}
	return all
}

// operatorState gives task t its share of its operator's operator state and
// its copy of the broadcast states.
func (r *restoreSource) operatorState(t *task) error {
	for _, spec := range t.n.bcast {
		t.bcast[spec.name] = &broadcastStore{spec: spec, entries: map[string]bcastEntry{}}
	}
	op := r.savedOperator(t.n)
	if op == nil {
		return nil
	}
	t.restoredOp = map[string][][]byte{}
	for _, spec := range t.n.opState {
		for _, s := range op.OperatorStates {
			if s.Name != spec.name {
				continue
			}
			if c := serializers.Check(s.Element, spec.element.Snapshot()); c.Verdict != serializers.CompatibleAsIs {
				return permanent(t.errorf("operator state %q: %s", s.Name, c.Reason))
			}
			t.restoredOp[s.Name] = redistribute(spec.distribution, s.Subtasks, t.n.parallelism)[t.subtask]
		}
	}
	for i := range op.BroadcastStates {
		saved := &op.BroadcastStates[i]
		store, ok := t.bcast[saved.Name]
		if !ok {
			if t.att.opts.AllowNonRestoredState {
				continue
			}
			return permanent(t.errorf("%w: broadcast state %q", state.ErrNotRestored, saved.Name))
		}
		if err := store.restore(saved); err != nil {
			return permanent(t.errorf("%w", err))
		}
	}
	return nil
}
