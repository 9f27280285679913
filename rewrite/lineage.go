package rewrite

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"time"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// Lineage returns the lineage of a rewrite's output: the input's, oldest
// first, and one more entry that says what this rewrite did and which
// savepoint it read. The input is named by id, creation time and directory
// name (not its full path, which would make the output depend on where the
// input happened to lie, on disk or in a bucket, nor on its endpoint).
func Lineage(input string, in *savepoint.Metadata, did string) []string {
	entry := fmt.Sprintf("%s; from savepoint %d %q taken %s", did, in.ID, BaseName(input),
		time.UnixMilli(in.CreatedAt).UTC().Format("2006-01-02T15:04:05.000Z"))
	return append(slices.Clone(in.Lineage), entry)
}

// BaseName is the last element of a location: a directory's name, or the
// last part of a bucket prefix (the bucket's name for its root).
func BaseName(location string) string {
	loc, err := storage.ParseLocation(location)
	switch {
	case err != nil:
		return filepath.Base(filepath.Clean(location))
	case !loc.IsBucket():
		return filepath.Base(loc.Path)
	case loc.Prefix == "":
		return loc.Bucket
	}
	return path.Base(loc.Prefix)
}
