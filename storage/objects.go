package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// A writer that keeps its own names under a location, rather than a
// savepoint's (the engine's checkpoint root: immutable files under shared/
// that several checkpoints reference, and checkpoint directories that
// retention deletes), reads through a Dir from OpenDir and writes and
// deletes single objects with the functions below.

// Put writes the object name of the bucket Dir d from r in one upload,
// replacing one of the same name: an object store shows the new object
// whole or not at all, and durably once Put returns. It suits names whose
// bytes never change (a file named after its database and its number in
// it), where a replacement writes what was there.
func Put(ctx context.Context, d Dir, name string, r io.Reader) error {
	bd, ok := d.(*bucketDir)
	if !ok {
		return fmt.Errorf("storage: %s: Put writes objects of a bucket", d.Location())
	}
	if err := CheckName(name); err != nil {
		return err
	}
	if isTempName(name) || name == MetadataName {
		return fmt.Errorf("%w: %q is not written by Put", ErrBadName, name)
	}
	bd.c.Requests.Add(1)
	cr := &countingReader{r: r, c: bd.c}
	if err := bd.b.Upload(ctx, bd.key(name), cr, &blob.WriterOptions{ContentType: "application/octet-stream"}); err != nil {
		return fmt.Errorf("storage: writing %s: %w", bd.where(name), err)
	}
	return nil
}

type countingReader struct {
	r io.Reader
	c *Counters
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.c.BytesWritten.Add(int64(n))
	return n, err
}

// Remove deletes the file name of d, a Dir from OpenDir or LocalDir. A
// file that is not there is no error.
func Remove(ctx context.Context, d Dir, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	var err error
	switch d := d.(type) {
	case *bucketDir:
		d.c.Requests.Add(1)
		if err = d.b.Delete(ctx, d.key(name)); gcerrors.Code(err) == gcerrors.NotFound {
			return nil
		} else if err != nil {
			return fmt.Errorf("storage: removing %s: %w", d.where(name), err)
		}
		return nil
	case *countedLocalDir:
		err = os.Remove(filepath.Join(d.dir(), filepath.FromSlash(name)))
	case *localDir:
		err = os.Remove(filepath.Join(d.dir(), filepath.FromSlash(name)))
	default:
		return fmt.Errorf("storage: %s: cannot remove files", d.Location())
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// ListUnder lists the objects of the bucket Dir d whose names start with
// under ("chk-", "shared/"), sorted by name: one listing of that part of
// the prefix rather than of all of it. Temporary uploads are listed too,
// for the holder of the prefix to remove what dead or ousted writers left.
func ListUnder(ctx context.Context, d Dir, under string) ([]Object, error) {
	bd, ok := d.(*bucketDir)
	if !ok {
		return nil, fmt.Errorf("storage: %s: ListUnder lists a bucket", d.Location())
	}
	return bd.listObjects(ctx, under)
}

// Sub is the directory name (a relative, slash-separated name) inside d.
// Of a bucket it is a view of the same store under the longer prefix, read
// as a bucket is (InBucket, OpenFirst, Preload and Subdirs know it), which
// closing d closes and closing it does not; of a local directory, the
// directory inside it, read through the directory d holds (see LocalDir)
// and counted as d is, which closing d closes too; of another Dir, one
// that opens and lists d's names under name.
func Sub(d Dir, name string) (Dir, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	switch d := d.(type) {
	case *bucketDir:
		st := *d.bucketStore
		st.loc, st.view = st.loc.Join(name), true
		return &bucketDir{bucketStore: &st}, nil
	case *localDir:
		return d.subdir(name), nil
	case *countedLocalDir:
		return &countedLocalDir{localDir: d.subdir(name), c: d.c}, nil
	}
	return &prefixDir{parent: d, prefix: name}, nil
}

// prefixDir is the names under prefix of another directory.
type prefixDir struct {
	parent Dir
	prefix string
}

func (d *prefixDir) Open(ctx context.Context, name string) (File, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	return d.parent.Open(ctx, d.prefix+"/"+name)
}

func (d *prefixDir) List(ctx context.Context) ([]string, error) {
	all, err := d.parent.List(ctx)
	var out []string
	for _, n := range all {
		if rest, ok := strings.CutPrefix(n, d.prefix+"/"); ok {
			out = append(out, rest)
		}
	}
	return out, err
}

func (d *prefixDir) Location() string { return d.parent.Location() + "/" + d.prefix }

// Files lists the files directly inside the bucket Dir d, temporary
// uploads included, with their sizes, sorted by name: one listing with a
// "/" delimiter (a request per thousand), which names none of the objects
// under deeper prefixes.
func Files(ctx context.Context, d Dir) ([]Object, error) {
	bd, ok := d.(*bucketDir)
	if !ok {
		return nil, fmt.Errorf("storage: %s: Files lists a bucket", d.Location())
	}
	prefix := ""
	if bd.loc.Prefix != "" {
		prefix = bd.loc.Prefix + "/"
	}
	var out []Object
	bd.c.Requests.Add(1)
	it := bd.b.List(&blob.ListOptions{Prefix: prefix, Delimiter: "/"})
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("storage: listing %s: %w", bd.loc, err)
		}
		if !o.IsDir {
			out = append(out, Object{Name: strings.TrimPrefix(o.Key, prefix), Size: o.Size, ModTime: o.ModTime})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Subdirs names the directories directly inside d, sorted. Of a bucket
// they are the prefixes a listing with a "/" delimiter gives, in one
// request (or one per thousand), without naming the objects under them;
// of a local directory, its subdirectories. Another Dir gives the first
// elements of the names List returns.
func Subdirs(ctx context.Context, d Dir) ([]string, error) {
	var names []string
	switch d := d.(type) {
	case *bucketDir:
		prefix := ""
		if d.loc.Prefix != "" {
			prefix = d.loc.Prefix + "/"
		}
		d.c.Requests.Add(1)
		it := d.b.List(&blob.ListOptions{Prefix: prefix, Delimiter: "/"})
		for {
			o, err := it.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("storage: listing %s: %w", d.loc, err)
			}
			if o.IsDir {
				names = append(names, strings.TrimSuffix(strings.TrimPrefix(o.Key, prefix), "/"))
			}
		}
	case *countedLocalDir:
		return Subdirs(ctx, d.localDir)
	case *localDir:
		dirs, err := d.subdirs()
		if err != nil {
			return nil, err
		}
		names = dirs
	default:
		all, err := d.List(ctx)
		if err != nil {
			return nil, err
		}
		for _, n := range all {
			if dir, _, ok := strings.Cut(n, "/"); ok {
				names = append(names, dir)
			}
		}
	}
	sort.Strings(names)
	return slices.Compact(names), nil
}
