package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"time"
)

// Orphans lists the files at d that its savepoint does not use: neither
// _metadata nor one of referenced (the data files its metadata names).
// With no _metadata at all, every file is one. On a bucket, these are the
// data files of runs that died or lost before their _metadata, and the
// temporary uploads of dead runs; a local savepoint directory has none
// unless something else put files there.
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
		if !keep[o.Name] {
			out = append(out, o)
		}
	}
	return out, nil
}

// RemoveOrphans deletes the orphans last modified at least minAge before
// now, and returns them. The age spares the files of a run still writing
// into the same location, which are orphans until its _metadata lands:
// minAge must exceed the longest such run. (A content-named file that a
// run reuses is rewritten by it, which renews its age.)
func RemoveOrphans(ctx context.Context, d Dir, referenced []string, minAge time.Duration, now time.Time) ([]Object, error) {
	orphans, err := Orphans(ctx, d, referenced)
	if err != nil {
		return nil, err
	}
	var removed []Object
	var errs []error
	for _, o := range orphans {
		if now.Sub(o.ModTime) < minAge {
			continue
		}
		if err := Remove(ctx, d, o.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, o)
	}
	return removed, errors.Join(errs...)
}

func objectsOf(ctx context.Context, d Dir) ([]Object, error) {
	switch d := d.(type) {
	case *bucketDir:
		return d.listObjects(ctx, "")
	case *countedLocalDir:
		return localObjects(string(d.localDir))
	case localDir:
		return localObjects(string(d))
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
