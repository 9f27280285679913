package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Orphans lists the files at d that its savepoint does not use: neither
// _metadata nor one of referenced (the data files its metadata names).
// With no _metadata at all, every file is one. On a bucket, these are the
// data files of runs that died or lost before their _metadata, and the
// temporary uploads of dead runs; a local savepoint directory has none
// unless something else put files there. The lease of a removal of
// orphans (CleanupName) is none.
func Orphans(ctx context.Context, d Dir, referenced []string) ([]Object, error) {
	objs, err := objectsOf(ctx, d)
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{MetadataName: true}
	for _, n := range referenced {
		keep[n] = true
	}
	var out []Object
	for _, o := range objs {
		// The lease of a removal is one only when its holder is dead.
		live := o.Name == CleanupName && isBucket(d) && time.Since(o.ModTime) < leaseTerm+storeTimeGrain
		if !keep[o.Name] && !live {
			out = append(out, o)
		}
	}
	return out, nil
}

// RemoveOrphans deletes the orphans directly under d's prefix (files
// under a deeper one are other savepoints') that were last modified at
// least minAge before now, and returns them. referenced gives the data
// files of the savepoint there now, nil if none. The age spares the files
// of a run still writing into the same location, which are orphans until
// its _metadata lands: minAge must exceed the longest such run.
//
// On a bucket, RemoveOrphans holds the prefix's lease (CleanupName) from
// before it calls referenced and lists until after its last delete. A
// delete, and any retry of it, is sent only while the last renewal is
// less than leaseHold old, and nothing more once it is not. A run that
// publishes there waits while the lease is held and then checks that the
// content-named files it wrote are all still there. That closes the one
// race the age cannot: a run that writes again a dead run's file of the
// same bytes, after this listing saw the old copy, renews its age too
// late. What it cannot close is a delete that the store carries out more
// than leaseTerm-leaseHold after it was sent. A second removal at the same
// prefix fails with ErrLeaseHeld while the first holds the lease; the
// lease of a dead removal is an orphan, which the next one takes over and
// removes.
func RemoveOrphans(ctx context.Context, d Dir, referenced func(context.Context) ([]string, error), minAge time.Duration, now time.Time) (removed []Object, err error) {
	var lease *lease
	if bd, ok := d.(*bucketDir); ok {
		if lease, err = takeCleanupLease(ctx, bd.bucketStore); err != nil {
			return nil, err
		}
		defer func() {
			if rerr := lease.release(ctx); rerr != nil {
				err = errors.Join(err, rerr)
			} else if lease.dead != nil && lease.released {
				// The lease of a dead removal, taken over and gone now.
				removed = append(removed, *lease.dead)
			}
		}()
	}
	names, err := referenced(ctx)
	if err != nil {
		return nil, err
	}
	orphans, err := Orphans(ctx, d, names)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, o := range orphans {
		if now.Sub(o.ModTime) < minAge || strings.Contains(o.Name, "/") || lease != nil && o.Name == CleanupName {
			continue
		}
		dctx, cancel := ctx, context.CancelFunc(func() {})
		if lease != nil {
			// Neither the delete nor a retry of it goes out once the
			// lease may have passed to another.
			if dctx, cancel, err = lease.hold(ctx); err != nil {
				errs = append(errs, err)
				break
			}
		}
		err := Remove(dctx, d, o.Name)
		cancel()
		if err != nil {
			errs = append(errs, err)
			if lease != nil && !outcomeKnown(err) {
				// It may still land: nothing more, and the lease stays.
				lease.leave()
				break
			}
			continue
		}
		removed = append(removed, o)
	}
	return removed, errors.Join(errs...)
}

func isBucket(d Dir) bool {
	_, ok := d.(*bucketDir)
	return ok
}

func objectsOf(ctx context.Context, d Dir) ([]Object, error) {
	switch d := d.(type) {
	case *bucketDir:
		return d.listObjects(ctx, "")
	case *countedLocalDir:
		return localObjects(d.dir())
	case *localDir:
		return localObjects(d.dir())
	}
	return nil, fmt.Errorf("storage: %s: listing orphans needs a Dir from OpenDir or LocalDir", d.Location())
}

func localObjects(root string) ([]Object, error) {
	var out []Object
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		out = append(out, Object{Name: filepath.ToSlash(rel), Size: info.Size(), ModTime: info.ModTime()})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}
