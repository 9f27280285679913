package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/storage"
)

// Stage checks target as the directory for an export of the savepoint in
// input and stages a directory for it beside it, under the rules of a
// rewrite's output (rewrite.StageDir): the export holds the target's lock
// until the staging is published or aborted, and removes what killed
// exports into the same target left behind. Both paths are compared with
// their symbolic links resolved, so that a target spelled through a link
// cannot lie inside the input, nor hold it. A refusal wraps
// rewrite.ErrRefused; a target that exists, without force,
// storage.ErrExists.
func Stage(input, target string, force bool) (storage.Staging, error) {
	in, err := rewrite.Resolve(rewrite.SavepointPath(input))
	if err != nil {
		return nil, err
	}
	out, err := rewrite.Resolve(target)
	if err != nil {
		return nil, err
	}
	switch {
	case within(in, out):
		return nil, refusef("--out %s is inside the savepoint %s, which export never modifies", target, input)
	case within(out, in):
		return nil, refusef("--out %s holds the savepoint %s, which export never modifies", target, input)
	case strings.HasPrefix(filepath.Base(out), storage.TempPrefix):
		return nil, refusef("--out %s has the name of a temporary directory (%s*)", target, storage.TempPrefix)
	}
	// The dataset is staged beside the target, so its directory must exist.
	switch st, err := os.Stat(filepath.Dir(out)); {
	case errors.Is(err, fs.ErrNotExist):
		return nil, refusef("--out %s: the directory %s does not exist", target, filepath.Dir(out))
	case err != nil:
		return nil, refusef("--out %s: %v", target, err)
	case !st.IsDir():
		return nil, refusef("--out %s: %s is not a directory", target, filepath.Dir(out))
	}
	st, _, err := rewrite.StageDir(target, force)
	return st, err
}

// within reports whether path is dir or lies below it.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// refusal is a target refused before anything is written. Its message is
// its own; it matches rewrite.ErrRefused, which the CLI maps to its usage
// exit code.
type refusal struct{ msg string }

func (e *refusal) Error() string { return e.msg }
func (e *refusal) Unwrap() error { return rewrite.ErrRefused }

func refusef(format string, args ...any) error { return &refusal{msg: fmt.Sprintf(format, args...)} }

// Marker is the file that an export into a bucket writes last, create-only,
// as a savepoint's _metadata is: the export is complete exactly when it
// exists. A bucket cannot rename, so the parts are written in place first,
// named after their bytes (part-00000-<16 hex digits of their
// XXH3-64>.parquet), and a reader that must not see a dead run's parts
// reads the files the marker lists. A local export is renamed into place
// whole and has no marker.
const Marker = storage.SuccessName

// MarkerContent is what Marker holds, as JSON.
type MarkerContent struct {
	Summary *Summary `json:"summary"`
	// Files lists every part of the export, sorted by name.
	Files []MarkerFile `json:"files"`
	// Part is Options.Part.
	Part json.RawMessage `json:"part,omitempty"`
}

// MarkerFile is one part of an export in a bucket.
type MarkerFile struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

// writeMarker writes the marker of an export into a bucket; the target
// holds it back until it is published.
func (x *exporter) writeMarker(ctx context.Context, s *Summary) error {
	return WriteMarker(ctx, x.out, MarkerContent{Summary: s, Files: x.files, Part: x.opts.Part})
}

// WriteMarker writes c, its files sorted by name, as the Marker of out: the
// last file of an export into a bucket, which the target holds back until
// it is published. The commit of an export run in shards writes its own.
func WriteMarker(ctx context.Context, out storage.Staging, c MarkerContent) error {
	c.Files = slices.Clone(c.Files)
	slices.SortFunc(c.Files, func(a, b MarkerFile) int { return strings.Compare(a.Name, b.Name) })
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	w, err := out.Create(ctx, Marker)
	if err != nil {
		return fmt.Errorf("export: %s: %w", Marker, err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		w.Close()
		return fmt.Errorf("export: %s: %w", Marker, err)
	}
	return w.Close()
}
