package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// Commit puts the parts of the n shards of a rewrite into target (see
// rewrite.Assemble): the savepoint a single run writes, _metadata last.
// Once it is published, the parts are removed, in a bucket as on disk. The
// parts are found by their names (Spec.Part); a missing one is refused
// before anything is written.
func Commit(ctx context.Context, target string, n int, opts rewrite.Options, storeOpts storage.Options) error {
	if n < 1 || n > MaxCount {
		return fmt.Errorf("%w: %d shards: N is from 1 to %d", ErrSpec, n, MaxCount)
	}
	return CommitParts(ctx, target, Parts(target, n), opts, storeOpts)
}

// CommitParts is Commit for parts named otherwise (rescale's): names in
// the order their segments go into the files.
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
				return rewrite.Refusef("shard %d of %d has no part at %s: %v", i, n, storage.Shown(name), err)
			}
			return fmt.Errorf("shard %d of %d: %s: %w", i, n, storage.Shown(name), err)
		}
		parts = append(parts, p)
	}
	opts.Out = target
	if err := rewrite.Assemble(ctx, "", parts, opts, 0); err != nil {
		return err
	}
	return RemoveParts(ctx, names, storage.MetadataName, storeOpts)
}

// CommitExport puts the parts of the n shards of an export into target,
// publishes it, and removes the parts. On disk the parts are directories
// and target is staged beside and renamed into place; in a bucket the
// parts are exports into buckets, each complete by its marker, whose files
// are copied on the store's side and target's marker (export.Marker) is
// written last, create-only, as export --out writes one. It returns the
// files written.
func CommitExport(ctx context.Context, target string, n int, force bool, storeOpts storage.Options) (int, error) {
	if n < 1 || n > MaxCount {
		return 0, fmt.Errorf("%w: %d shards: N is from 1 to %d", ErrSpec, n, MaxCount)
	}
	loc, err := storage.ParseLocation(target)
	if err != nil {
		return 0, err
	}
	names := Parts(target, n)
	if loc.IsBucket() {
		files, err := commitBucketExport(ctx, target, names, force, storeOpts)
		if err != nil {
			return 0, err
		}
		return files, RemoveParts(ctx, names, export.Marker, storeOpts)
	}
	records := make([]json.RawMessage, n)
	for i, name := range names {
		if st, err := os.Stat(name); err != nil || !st.IsDir() {
			return 0, rewrite.Refusef("shard %d of %d has no export part at %s", i, n, name)
		}
		records[i], _ = readLocalPart(name)
	}
	if err := checkParts(names, records, n); err != nil {
		return 0, err
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
	return files, RemoveParts(ctx, names, "", storeOpts)
}

func commitBucketExport(ctx context.Context, target string, names []string, force bool, storeOpts storage.Options) (int, error) {
	parts := make([]storage.DirCloser, 0, len(names))
	defer func() {
		for _, d := range parts {
			d.Close()
		}
	}()
	for _, name := range names {
		d, err := storage.OpenDir(ctx, name, storeOpts)
		if err != nil {
			return 0, err
		}
		parts = append(parts, d)
	}
	out, err := storage.OpenTarget(ctx, target, storage.TargetOptions{Options: storeOpts, Force: force, Marker: export.Marker})
	if err != nil {
		return 0, err
	}
	defer out.Close()
	files, err := AssembleBucketExport(ctx, parts, out)
	if err == nil {
		err = out.Publish(ctx)
	}
	if err != nil {
		return 0, errors.Join(err, out.Abort())
	}
	return files, nil
}

// RemoveParts removes the parts a commit has put together: a local part's
// directory, and every object under a bucket part's prefix, its marker
// (the file that makes it whole, _metadata or export.Marker) first, so
// that a part is never seen whole with files missing.
func RemoveParts(ctx context.Context, names []string, marker string, storeOpts storage.Options) error {
	var errs []error
	for _, name := range names {
		loc, err := storage.ParseLocation(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !loc.IsBucket() {
			errs = append(errs, os.RemoveAll(loc.Path))
			continue
		}
		errs = append(errs, removeBucketPart(ctx, name, marker, storeOpts))
	}
	return errors.Join(errs...)
}

func removeBucketPart(ctx context.Context, name, marker string, storeOpts storage.Options) error {
	d, err := storage.OpenDir(ctx, name, storeOpts)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := storage.Remove(ctx, d, marker); err != nil {
		return err
	}
	// With its marker gone, every file under the prefix is the part's.
	objs, err := storage.Orphans(ctx, d, nil)
	if err != nil {
		return err
	}
	var errs []error
	for _, o := range objs {
		errs = append(errs, storage.Remove(ctx, d, o.Name))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("shard: the output is published, but the part %s is not all removed: %w", storage.Shown(name), err)
	}
	return nil
}
