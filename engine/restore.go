package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/stateproc/stateproc/compat"
	"github.com/stateproc/stateproc/engine/internal/chkstore"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
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

// openCanonical opens the savepoint at dir, a local path or a bucket URL.
func openCanonical(ctx context.Context, dir string) (*snapshotfmt.Reader, func() error, error) {
	d, err := storage.OpenDir(ctx, dir, storage.Options{})
	if err != nil {
		return nil, nil, err
	}
	r, err := snapshotfmt.Open(ctx, d)
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	return r, func() error { return errors.Join(r.Close(), d.Close()) }, nil
}

// ErrRestore is wrapped by errors about a savepoint that does not fit the
// job.
var ErrRestore = fmt.Errorf("engine: cannot restore")

func openRestore(ctx context.Context, a *attempt, dir string) (_ *restoreSource, err error) {
	rs := &restoreSource{ops: map[*node]int{}}
	if rs.src, rs.release, rs.close, err = chkstore.Open(ctx, dir, filepath.Join(a.dir(), "restore")); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			rs.close()
		}
	}()
	meta := rs.src.Metadata()
	var declared []compat.Declared
	for _, n := range a.job.nodes {
		if n.uid != "" {
			declared = append(declared, compat.Declared{Operator: n.model(), MaxParallelismSet: n.maxParallelismSet})
		}
	}
	// The same decisions as stateproc check, on the whole job before any
	// task starts.
	for _, f := range compat.CheckJob(meta, declared, compat.Options{AllowNonRestoredState: a.opts.AllowNonRestoredState}) {
		if err := state.Refusal(&f); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrRestore, err)
		}
	}
	for _, n := range a.job.nodes {
		rs.ops[n] = -1
		for i := range meta.Operators {
			if n.uid != "" && meta.Operators[i].UID == n.uid {
				rs.ops[n] = i
				adoptMaxParallelism(n, &meta.Operators[i])
			}
		}
	}
	return rs, nil
}

// adoptMaxParallelism gives a keyed operator that left its max parallelism
// unset the savepoint's, which compat.CheckJob has found it can run at.
func adoptMaxParallelism(n *node, saved *savepoint.Operator) {
	if n.kind == keyedNode && saved.Keyed() {
		n.maxParallelism = saved.MaxParallelism
	}
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
	// openRestore has checked the serializers and what is not restored.
	for _, spec := range t.n.opState {
		for _, s := range op.OperatorStates {
			if s.Name == spec.name {
				t.restoredOp[s.Name] = redistribute(spec.distribution, s.Subtasks, t.n.parallelism)[t.subtask]
			}
		}
	}
	for i := range op.BroadcastStates {
		saved := &op.BroadcastStates[i]
		store, ok := t.bcast[saved.Name]
		if !ok {
			continue
		}
		if err := store.restore(saved); err != nil {
			return permanent(t.errorf("%w", err))
		}
	}
	return nil
}
