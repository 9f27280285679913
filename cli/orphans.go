package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// orphan is a file at a savepoint's location that its _metadata does not
// name: on a bucket, the data files of a run that died before it
// published, or that lost a race to another writer, and dead runs'
// temporary uploads.
type orphan struct {
	Name     string            `json:"name"`
	Bytes    int64             `json:"bytes"`
	Modified jsonvalue.Instant `json:"modified"`
	Removed  bool              `json:"removed"`
}

// orphanOptions say whether verify removes the orphans it finds, and how
// old one must be: a run still writing into the location has files that
// are orphans until its _metadata lands.
type orphanOptions struct {
	remove bool
	minAge string
}

// findOrphans lists, and with o.remove removes, the orphans at a bucket
// location. src is the savepoint there, nil when there is no _metadata, in
// which case every file directly under the prefix is one. A local
// directory has none to report: the rewrites stage theirs beside it, and
// a checkpoint keeps files there that its _metadata does not list.
func findOrphans(ctx context.Context, location string, src savepoint.Source, o orphanOptions) ([]orphan, error) {
	loc, err := storage.ParseLocation(location)
	if err != nil || !loc.IsBucket() {
		return nil, err
	}
	minAge, err := time.ParseDuration(o.minAge)
	if err != nil || minAge < 0 {
		// Zero is allowed here: when no run can be writing.
		if minAge, err = parseDuration(o.minAge); err != nil {
			return nil, usagef("--orphan-age: %v", err)
		}
	}
	var referenced []string
	switch {
	case src != nil:
		df, ok := src.(interface{ DataFiles() []string })
		if !ok {
			return nil, nil
		}
		referenced = df.DataFiles()
	case o.remove && loc.Prefix == "":
		return nil, usagef("%s has no _metadata: --remove-orphans would empty the whole bucket; name the prefix of the savepoint", loc)
	}
	dir, err := storage.OpenDir(ctx, location, storage.Options{})
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	all, err := storage.Orphans(ctx, dir, referenced)
	if err != nil {
		return nil, err
	}
	// Objects under a deeper prefix belong to other savepoints, and are
	// kept out of the listing and of the removal.
	var found []orphan
	for _, ob := range all {
		if strings.Contains(ob.Name, "/") {
			continue
		}
		found = append(found, orphan{Name: ob.Name, Bytes: ob.Size, Modified: jsonvalue.Instant(ob.ModTime.UnixMilli())})
	}
	if !o.remove || len(found) == 0 {
		return found, nil
	}
	// An export's marker says that the files beside it are an export's:
	// where no savepoint is, the location is no savepoint's at all; beside
	// one, the removal is refused.
	for _, f := range found {
		if f.Name != storage.SuccessName {
			continue
		}
		if src == nil {
			return found, fmt.Errorf("%w: %s holds an export (%s), not a savepoint: nothing removed", savepoint.ErrNotSavepoint, loc, storage.SuccessName)
		}
		return found, usagef("%s holds an export (its %s) beside the savepoint, whose files are not the savepoint's orphans: nothing removed", loc, storage.SuccessName)
	}
	// The savepoint may have been replaced while it was verified, or one
	// published where there was none: the orphans are the files that the
	// one there now does not name, read again once the removal holds the
	// location.
	referencedNow := func(ctx context.Context) ([]string, error) {
		now, err := openSavepoint(ctx, location)
		switch {
		case errors.Is(err, savepoint.ErrNotSavepoint):
			if err := nothingToOrphan(ctx, loc, dir); err != nil {
				return nil, err
			}
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("%s: reading _metadata again before removing orphans: %w; nothing removed", loc, err)
		}
		defer now.Close()
		df, ok := now.(interface{ DataFiles() []string })
		if !ok {
			return nil, fmt.Errorf("%w: %s: the savepoint there now is of another layout; nothing removed", savepoint.ErrNotSavepoint, loc)
		}
		return df.DataFiles(), nil
	}
	removed, rerr := storage.RemoveOrphans(ctx, dir, referencedNow, minAge, time.Now())
	gone := map[string]bool{}
	for _, ob := range removed {
		gone[ob.Name] = true
	}
	for i := range found {
		found[i].Removed = gone[found[i].Name]
	}
	return found, rerr
}

// orphanSummary says in a line what findOrphans found and did.
func orphanSummary(found []orphan, o orphanOptions) string {
	var bytes int64
	removed := 0
	for _, ob := range found {
		bytes += ob.Bytes
		if ob.Removed {
			removed++
		}
	}
	s := fmt.Sprintf("%d orphaned files (%s) that no _metadata names", len(found), humanBytes(float64(bytes)))
	switch {
	case o.remove:
		s += fmt.Sprintf(": %d removed, %d younger than %s kept", removed, len(found)-removed, o.minAge)
	default:
		s += ": remove them with verify --remove-orphans"
	}
	return s
}

// nothingToOrphan refuses to remove the files at a location whose
// _metadata did not open as a savepoint's, unless there is no _metadata at
// all: a _metadata that exists but does not read (damaged, or another
// tool's) still names files that are not orphans.
func nothingToOrphan(ctx context.Context, loc storage.Location, dir storage.Dir) error {
	there, err := metadataIn(ctx, dir)
	if there {
		return fmt.Errorf("%w: %s has a _metadata that does not read as a savepoint's; the files beside it may be its own: nothing removed", savepoint.ErrNotSavepoint, loc)
	}
	return err
}

// metadataIn reports whether dir holds a _metadata.
func metadataIn(ctx context.Context, dir storage.Dir) (bool, error) {
	f, err := dir.Open(ctx, storage.MetadataName)
	if err == nil {
		f.Close()
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// notSavepointOrphans adds to the error of a bucket location without
// _metadata what orphans lie there, and removes them when asked. Where a
// _metadata lies that does not read, the files beside it may be its own:
// they are not called orphans, and the removal refuses.
func notSavepointOrphans(ctx context.Context, location string, err error, o orphanOptions) error {
	if !errors.Is(err, savepoint.ErrNotSavepoint) {
		return err
	}
	if !o.remove && hasMetadata(ctx, location) {
		return err
	}
	found, ferr := findOrphans(ctx, location, nil, o)
	if ferr != nil {
		return errors.Join(err, ferr)
	}
	if len(found) == 0 {
		return err
	}
	return fmt.Errorf("%w; %s", err, orphanSummary(found, o))
}

// hasMetadata reports whether a _metadata object lies at a bucket
// location, as far as the store tells.
func hasMetadata(ctx context.Context, location string) bool {
	loc, err := storage.ParseLocation(location)
	if err != nil || !loc.IsBucket() {
		return false
	}
	dir, err := storage.OpenDir(ctx, location, storage.Options{})
	if err != nil {
		return false
	}
	defer dir.Close()
	there, _ := metadataIn(ctx, dir)
	return there
}
