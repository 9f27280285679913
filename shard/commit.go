package shard

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// Commit puts the parts of the n shards of a rewrite into target (see
// rewrite.Assemble): the savepoint a single run writes, _metadata last.
// Once it is published, local parts are removed; parts in a bucket are
// left for the caller (verify lists and removes orphans under a prefix).
// The parts are found by their names (Spec.Part); a missing one is
// refused before anything is written.
func Commit(ctx context.Context, target string, n int, opts rewrite.Options, storeOpts storage.Options) error {
	if n < 1 || n > MaxCount {
		return fmt.Errorf("%w: %d shards: N is from 1 to %d", ErrSpec, n, MaxCount)
	}
	return CommitParts(ctx, target, Parts(target, n), opts, storeOpts)
}

// CommitParts is Commit for parts named otherwise (rescale's, one per new
// key group): names in the order their segments go into the files.
func CommitParts(ctx context.Context, target string, names []string, opts rewrite.Options, storeOpts storage.Options) error {
	n := len(names)
	parts := make([]savepoint.Source, 0, n)
	defer func() {
		for _, p := range parts {
			p.Close()
		}
	}()
	for i, name := range names {
		p, err := layouts.OpenLocation(ctx, name, storeOpts)
		if err != nil {
			if errors.Is(err, savepoint.ErrNotSavepoint) {
				return rewrite.Refusef("shard %d of %d has no part at %s: %v", i, n, name, err)
			}
			return fmt.Errorf("shard %d of %d: %s: %w", i, n, name, err)
		}
		parts = append(parts, p)
	}
	opts.Out = target
	if err := rewrite.Assemble(ctx, "", parts, opts, 0); err != nil {
		return err
	}
	return removeLocal(names)
}

// CommitExport puts the parts of the n shards of an export into target,
// which it stages beside and publishes when complete, and removes the
// parts. It returns the files written.
func CommitExport(ctx context.Context, target string, n int, force bool) (int, error) {
	if n < 1 || n > MaxCount {
		return 0, fmt.Errorf("%w: %d shards: N is from 1 to %d", ErrSpec, n, MaxCount)
	}
	names := Parts(target, n)
	for i, name := range names {
		if st, err := os.Stat(name); err != nil || !st.IsDir() {
			return 0, rewrite.Refusef("shard %d of %d has no export part at %s", i, n, name)
		}
	}
	out, _, err := rewrite.StageDir(target, force)
	if err != nil {
		return 0, err
	}
	files, err := AssembleExport(ctx, names, out)
	if err == nil {
		err = out.Publish(ctx)
	}
	if err != nil {
		return 0, errors.Join(err, out.Abort())
	}
	return files, removeLocal(names)
}

func removeLocal(names []string) error {
	var errs []error
	for _, name := range names {
		if loc, err := storage.ParseLocation(name); err == nil && !loc.IsBucket() {
			errs = append(errs, os.RemoveAll(loc.Path))
		}
	}
	return errors.Join(errs...)
}
