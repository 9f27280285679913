package rewrite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// ErrRefused is wrapped by the errors of a request that cannot succeed,
// found before anything is written: an unknown operator or state, a
// parameter out of range, a target that would overwrite the input. The CLI
// maps it to its usage exit code.
var ErrRefused = errors.New("rewrite: refused")

// ErrBusy is returned when another rewrite holds the target's lock.
var ErrBusy = errors.New("rewrite: another stateproc is writing this target")

// lockTarget takes the lock at path, beside a target, or fails with
// ErrBusy at once.
func lockTarget(path string) (*storage.FileLock, error) {
	l, err := storage.LockFile(path)
	if errors.Is(err, storage.ErrHeld) {
		return nil, fmt.Errorf("%w (lock %s)", ErrBusy, path)
	}
	return l, err
}

func refusef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
}

// Refusef returns an error wrapping ErrRefused, for the checks that the
// commands built on this package make themselves.
func Refusef(format string, args ...any) error { return refusef(format, args...) }

// CheckTarget refuses a target that cannot receive the output of a rewrite
// of input: the input itself, a place inside it (the output would modify
// the input's directory), or a directory containing it (--force would
// delete the input with the old target); and, without force, any path that
// exists. An empty input is a savepoint made from no local directory
// (bootstrap's from code). It writes nothing, so dry runs call it too.
func CheckTarget(input, target string, force bool) error {
	return checkTarget(input, target, force, true)
}

// CheckTargetToOpen is CheckTarget for a caller that opens the target
// next (storage.OpenTarget, or Create): a target in a bucket is not looked
// into, since opening it looks for a savepoint there, in the same request.
func CheckTargetToOpen(input, target string, force bool) error {
	loc, err := storage.ParseLocation(target)
	return checkTarget(input, target, force, err != nil || !loc.IsBucket())
}

// checkTarget is CheckTarget; without probe, a target in a bucket is not
// looked into.
func checkTarget(input, target string, force, probe bool) error {
	if target == "" {
		return refusef("no target given")
	}
	// No input is a local one of no path: nothing to compare with.
	inLoc := storage.Location{Scheme: "file"}
	if input != "" {
		var err error
		if inLoc, err = storage.ParseLocation(input); err != nil {
			return refusef("%v", err)
		}
		inLoc = savepointDir(inLoc)
	}
	outLoc, err := storage.ParseLocation(target)
	if err != nil {
		return refusef("%v", err)
	}
	switch {
	case outLoc.IsBucket():
		return checkBucketTarget(inLoc, outLoc, target, force || !probe)
	case inLoc.IsBucket():
		return checkLocalTarget("", outLoc.Path, force)
	}
	return checkLocalTarget(inLoc.Path, outLoc.Path, force)
}

// savepointDir is the savepoint directory that loc names: loc itself, or
// the directory of the _metadata file it names, as the readers take it.
func savepointDir(loc storage.Location) storage.Location {
	if loc.IsBucket() {
		if loc.Base() == savepoint.MetadataFile {
			return loc.Parent()
		}
		return loc
	}
	loc.Path = SavepointPath(loc.Path)
	return loc
}

// SavepointPath is the local savepoint directory that p names: p itself,
// or the directory of the _metadata file it names, as the readers take it.
// A target is compared with that directory.
func SavepointPath(p string) string {
	if filepath.Base(p) == savepoint.MetadataFile {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return filepath.Dir(p)
		}
	}
	return p
}

// checkLocalTarget is CheckTarget for a local target; input is empty when
// there is none or it lies in a bucket.
func checkLocalTarget(input, target string, force bool) error {
	out, err := resolve(target)
	if err != nil {
		return err
	}
	in := ""
	if input != "" {
		if in, err = resolve(input); err != nil {
			return err
		}
	}
	switch {
	case isTemp(filepath.Base(out)):
		return refusef("the target %s has the name of a temporary directory (%s*)", target, storage.TempPrefix)
	case in == "":
	case in == out:
		return refusef("the target %s is the input savepoint: a rewrite never modifies its input", target)
	case in != "" && Within(out, in):
		return refusef("the target %s lies inside the input savepoint %s", target, input)
	case in != "" && Within(in, out):
		return refusef("the target %s contains the input savepoint %s", target, input)
	}
	if _, err := os.Lstat(target); err == nil && !force {
		return fmt.Errorf("%w: %s (use --force to replace it)", storage.ErrExists, target)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if st, err := os.Stat(filepath.Dir(out)); err != nil {
		return refusef("the target's directory: %v", err)
	} else if !st.IsDir() {
		return refusef("the target's parent %s is not a directory", filepath.Dir(out))
	}
	return nil
}

// checkBucketTarget is CheckTarget where the input or the target lies in
// a bucket: a target in the input's bucket must not be its prefix, nor lie
// under it or above it; without force, a target holding a _metadata, or
// an export's _SUCCESS, is refused. The publish checks that again, create-only.
func checkBucketTarget(in, out storage.Location, target string, force bool) error {
	if in.IsBucket() && in.Scheme == out.Scheme && in.Bucket == out.Bucket {
		switch {
		case in.Prefix == out.Prefix:
			return refusef("the target %s is the input savepoint: a rewrite never modifies its input", out)
		case in.Prefix == "" || strings.HasPrefix(out.Prefix, in.Prefix+"/"):
			return refusef("the target %s lies inside the input savepoint %s", out, in)
		case out.Prefix == "" || strings.HasPrefix(in.Prefix, out.Prefix+"/"):
			return refusef("the target %s contains the input savepoint %s", out, in)
		}
	}
	if isTemp(path.Base(out.Prefix)) {
		return refusef("the target %s has the name of a temporary directory (%s*)", out, storage.TempPrefix)
	}
	if force {
		return nil
	}
	ctx := context.Background()
	d, err := storage.OpenDir(ctx, target, storage.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	for _, m := range []string{storage.MetadataName, storage.SuccessName} {
		switch f, err := d.Open(ctx, m); {
		case err == nil:
			f.Close()
			return fmt.Errorf("%w: %s holds %s (use --force to replace it)", storage.ErrExists, out, storage.Holding(m))
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
	}
	return nil
}

// resolve returns an absolute path with the symbolic links of its existing
// part resolved, so that two spellings of one directory compare equal.
func resolve(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	// Resolve the longest existing prefix; what does not exist yet cannot
	// be a link.
	rest := ""
	for cur := abs; ; {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest), nil
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// Within reports whether p lies strictly inside dir.
func Within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// IsTempName reports whether a directory name is that of a staging or spill
// directory, which is never a savepoint even when it holds a _metadata.
func IsTempName(name string) bool { return isTemp(name) }

func isTemp(name string) bool { return strings.HasPrefix(name, storage.TempPrefix) }

// staleFor reports whether name, an entry of the target's directory, is a
// temporary directory of a rewrite into target: the prefix, the target's
// name, a dash and the digits os.MkdirTemp appends, and for the old target
// that a forced publish moves aside, ".old". Other targets' directories,
// including those of a target whose own name continues after a dash, do not
// match, since their suffix is not all digits.
func staleFor(name, targetBase string) bool {
	rest, ok := strings.CutPrefix(name, storage.TempPrefix+targetBase+"-")
	if !ok {
		return false
	}
	rest = strings.TrimSuffix(rest, ".old")
	if rest == "" {
		return false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// removeStale deletes the temporary directories that earlier runs into
// target left behind when they were killed. The caller holds the target's
// lock, so no live run owns them. It returns their names.
func removeStale(target string) ([]string, error) {
	dir, base := filepath.Dir(target), filepath.Base(target)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		if !staleFor(e.Name(), base) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return removed, fmt.Errorf("rewrite: removing %s, left by an earlier run: %w", e.Name(), err)
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}
