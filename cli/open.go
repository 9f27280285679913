package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// openSavepoints opens the savepoints at paths, all at once (in buckets
// each open is a round trip): the sources in the order of paths, or the
// error of the first path that fails, with none left open.
func openSavepoints(ctx context.Context, paths []string) ([]savepoint.Source, error) {
	srcs := make([]savepoint.Source, len(paths))
	errs := make([]error, len(paths))
	// Not through workers.Run, whose context ends with it: a source keeps
	// the context it was opened with for its later reads.
	var wg sync.WaitGroup
	slots := make(chan struct{}, openAtOnce)
	for i := range paths {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			srcs[i], errs[i] = openSavepoint(ctx, paths[i])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			for _, src := range srcs {
				if src != nil {
					src.Close()
				}
			}
			return nil, err
		}
	}
	return srcs, nil
}

// openAtOnce is how many savepoints openSavepoints opens at once.
const openAtOnce = 16

// openSavepoint opens the savepoint or checkpoint directory at path, a
// local directory or a bucket URL (or the one of path when it names a
// _metadata file), whatever its layout, verifying its metadata. A
// path that is missing or not a directory is bad input too.
func openSavepoint(ctx context.Context, path string) (savepoint.Source, error) {
	loc, err := storage.ParseLocation(path)
	if err != nil {
		return nil, usagef("%v", err)
	}
	if loc.IsBucket() {
		if loc.Base() == savepoint.MetadataFile {
			// Named by its _metadata, as a local savepoint may be.
			loc = loc.Parent()
			path = loc.URL()
		}
		src, err := layouts.OpenLocationWith(ctx, path, layouts.Options{PathMap: pathMapOf(ctx), Store: storage.Options{Counters: transfersOf(ctx)}})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", loc, err)
		}
		return src, nil
	}
	path = loc.Path
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, savepoint.ErrNotSavepoint)
	} else if err != nil {
		return nil, err
	}
	if !st.IsDir() && filepath.Base(path) == savepoint.MetadataFile {
		path = filepath.Dir(path)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s is a file: %w", path, savepoint.ErrNotSavepoint)
	}
	// A staging directory may hold a complete _metadata just before it is
	// renamed into place; until then it is no savepoint.
	if rewrite.IsTempName(filepath.Base(filepath.Clean(path))) {
		return nil, fmt.Errorf("%s is the temporary directory of an unfinished or killed rewrite: %w", path, savepoint.ErrNotSavepoint)
	}
	pm, err := localPathMap(pathMapOf(ctx), path)
	if err != nil {
		return nil, err
	}
	src, err := layouts.OpenWith(ctx, path, layouts.Options{PathMap: pm, Store: storage.Options{Counters: transfersOf(ctx)}})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return src, nil
}

// localPathMap resolves the relative directories of a path map against
// the local savepoint dir: they are the user's, so they may lead out of it
// (../elsewhere), where a path the metadata records may not.
func localPathMap(pm map[string]string, dir string) (map[string]string, error) {
	var out map[string]string
	for old, repl := range pm {
		if strings.Contains(repl, "://") || filepath.IsAbs(filepath.FromSlash(repl)) {
			continue
		}
		abs, err := filepath.Abs(filepath.Join(dir, filepath.FromSlash(repl)))
		if err != nil {
			return nil, usagef("--path-map %s=%s: %v", old, repl, err)
		}
		if out == nil {
			out = maps.Clone(pm)
		}
		out[old] = filepath.ToSlash(abs)
	}
	if out == nil {
		return pm, nil
	}
	return out, nil
}

// findOperator returns the index of the operator ref names (its uid, ID
// or name; see savepoint.Metadata.FindOperator), or a usage error listing
// the operators there are.
func findOperator(m *savepoint.Metadata, ref string) (int, error) {
	i, err := m.FindOperator(ref)
	if err != nil {
		return 0, &UsageError{Err: err}
	}
	return i, nil
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

// readWorkers is how many segments a command reads at once from location:
// one per core on disk (0); from a bucket, where a segment of a few MiB is
// one request and its worker waits for it, three per core (up to 16), so
// that the cores decode while the next segments' requests are in flight.
// Each worker holds its segment's read-ahead budget (storage.ReadSize,
// twice), so memory stays bounded by the count.
func readWorkers(location string) int {
	if loc, err := storage.ParseLocation(location); err == nil && loc.IsBucket() {
		n := workers.Default()
		return max(n, min(3*n, 16))
	}
	return 0
}
