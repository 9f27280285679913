package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
)

// openSavepoint opens the savepoint or checkpoint directory at path,
// whatever its layout, verifying its metadata. A path that is missing or
// not a directory is bad input too.
func openSavepoint(ctx context.Context, path string) (savepoint.Source, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, savepoint.ErrNotSavepoint)
	} else if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is a file: %w", path, savepoint.ErrNotSavepoint)
	}
	// A staging directory may hold a complete _metadata just before it is
	// renamed into place; until then it is no savepoint.
	if rewrite.IsTempName(filepath.Base(filepath.Clean(path))) {
		return nil, fmt.Errorf("%s is the temporary directory of an unfinished or killed rewrite: %w", path, savepoint.ErrNotSavepoint)
	}
	src, err := layouts.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return src, nil
}

// findOperator returns the index of the operator with uid, or a usage error
// listing the uids there are.
func findOperator(m *savepoint.Metadata, uid string) (int, error) {
	var uids []string
	for i := range m.Operators {
		if m.Operators[i].UID == uid {
			return i, nil
		}
		uids = append(uids, m.Operators[i].UID)
	}
	return 0, usagef("no operator %q in the savepoint (operators: %v)", uid, uids)
}

// stateRef is what --state names in an operator: a keyed state, a timer
// service, an operator state or a broadcast state.
type stateRef struct {
	// Ref is the keyed state or timer service, when it is one.
	Ref       savepoint.StateRef
	Keyed     *savepoint.KeyedState
	Timers    *savepoint.TimerService
	Operator  *savepoint.OperatorState
	Broadcast *savepoint.BroadcastState
}

// findState resolves --state in operator opIdx, or returns a usage error
// listing the names there are.
func findState(m *savepoint.Metadata, opIdx int, name string) (stateRef, error) {
	op := &m.Operators[opIdx]
	if ref, ok := m.Find(opIdx, name); ok {
		return stateRef{Ref: ref, Keyed: m.KeyedState(ref), Timers: m.TimerService(ref)}, nil
	}
	var names []string
	for _, ref := range m.Refs(opIdx) {
		names = append(names, m.RefName(ref))
	}
	for i := range op.OperatorStates {
		if op.OperatorStates[i].Name == name {
			return stateRef{Operator: &op.OperatorStates[i]}, nil
		}
		names = append(names, op.OperatorStates[i].Name)
	}
	for i := range op.BroadcastStates {
		if op.BroadcastStates[i].Name == name {
			return stateRef{Broadcast: &op.BroadcastStates[i]}, nil
		}
		names = append(names, op.BroadcastStates[i].Name)
	}
	return stateRef{}, usagef("operator %q has no state %q (states: %v)", op.UID, name, names)
}
