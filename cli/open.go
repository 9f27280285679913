package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// openSavepoint opens the savepoint directory at path, verifying its
// metadata. A path that is missing or not a directory is bad input too.
func openSavepoint(ctx context.Context, path string) (*snapshotfmt.Reader, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, snapshotfmt.ErrNotSavepoint)
	} else if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is a file: %w", path, snapshotfmt.ErrNotSavepoint)
	}
	// A staging directory may hold a complete _metadata just before it is
	// renamed into place; until then it is no savepoint.
	if rewrite.IsTempName(filepath.Base(filepath.Clean(path))) {
		return nil, fmt.Errorf("%s is the temporary directory of an unfinished or killed rewrite: %w", path, snapshotfmt.ErrNotSavepoint)
	}
	r, err := snapshotfmt.Open(ctx, storage.LocalDir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
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
	// Ref is the keyed state's or timer service's ref in the data, or -1.
	Ref       int
	Keyed     *savepoint.KeyedState
	Timers    *savepoint.TimerService
	Operator  *savepoint.OperatorState
	Broadcast *savepoint.BroadcastState
}

// findState resolves --state in operator op, or returns a usage error
// listing the names there are.
func findState(op *savepoint.Operator, name string) (stateRef, error) {
	var names []string
	for i := range op.States {
		if op.States[i].Name == name {
			return stateRef{Ref: i, Keyed: &op.States[i]}, nil
		}
		names = append(names, op.States[i].Name)
	}
	for i := range op.Timers {
		if op.Timers[i].Name == name {
			return stateRef{Ref: len(op.States) + i, Timers: &op.Timers[i]}, nil
		}
		names = append(names, op.Timers[i].Name)
	}
	for i := range op.OperatorStates {
		if op.OperatorStates[i].Name == name {
			return stateRef{Ref: -1, Operator: &op.OperatorStates[i]}, nil
		}
		names = append(names, op.OperatorStates[i].Name)
	}
	for i := range op.BroadcastStates {
		if op.BroadcastStates[i].Name == name {
			return stateRef{Ref: -1, Broadcast: &op.BroadcastStates[i]}, nil
		}
		names = append(names, op.BroadcastStates[i].Name)
	}
	return stateRef{}, usagef("operator %q has no state %q (states: %v)", op.UID, name, names)
}
