package rewrite

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/stateproc/stateproc/savepoint"
)

// Lineage returns the lineage of a rewrite's output: the input's, oldest
// first, and one more entry that says what this rewrite did and which
// savepoint it read. The input is named by id, creation time and directory
// name (not its full path, which would make the output depend on where the
// input happened to lie).
func Lineage(input string, in *savepoint.Metadata, did string) []string {
	entry := fmt.Sprintf("%s; from savepoint %d %q taken %s", did, in.ID, filepath.Base(filepath.Clean(input)),
		time.UnixMilli(in.CreatedAt).UTC().Format("2006-01-02T15:04:05.000Z"))
	return append(slices.Clone(in.Lineage), entry)
}
