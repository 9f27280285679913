package shard

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// ExportCut is what shard s of an export does: the key groups of keyed
// state and timers it exports (none when ok is false), and whether it also
// exports operator and broadcast state, which belong to no key group and
// go to shard 0.
type ExportCut struct {
	KeyGroups    keygroup.Range
	HasKeyed     bool
	WithNonKeyed bool
}

// Export cuts an export of src: key groups of about equal bytes across
// every keyed operator, so that the datasets' files, in shard order, hold
// the rows in the savepoint's order as a single run's do.
func Export(ctx context.Context, src savepoint.Source, s Spec) (ExportCut, error) {
	m := src.Metadata()
	maxP := 0
	for i := range m.Operators {
		if m.Operators[i].Keyed() {
			maxP = max(maxP, m.Operators[i].MaxParallelism)
		}
	}
	segs, err := savepoint.AllSegments(ctx, src)
	if err != nil {
		return ExportCut{}, err
	}
	r, ok := KeyGroups(segs, maxP, s)
	return ExportCut{KeyGroups: r, HasKeyed: ok, WithNonKeyed: s.Index == 0}, nil
}

// NarrowExport narrows o to shard s of an export of src (see Export): its
// key groups, and operator and broadcast state for shard 0 only. A shard
// that gets no key group exports no keyed row, and still writes each
// keyed dataset's columns.
func NarrowExport(ctx context.Context, src savepoint.Source, s Spec, o *export.Options) error {
	if o.KeyGroups != nil {
		return fmt.Errorf("%w: a sharded export cuts the key groups itself", ErrSpec)
	}
	cut, err := Export(ctx, src, s)
	if err != nil {
		return err
	}
	kgs := cut.KeyGroups
	if !cut.HasKeyed {
		kgs = keygroup.Range{Start: 1, End: 0}
	}
	o.KeyGroups, o.WithNonKeyed = &kgs, cut.WithNonKeyed
	return nil
}

// AssembleExport is the commit step of an export run in shards: it copies
// the files of every part (a directory a shard exported into) into out,
// each dataset's files renumbered part-00000, part-00001, ... in shard
// order then in the part's order, so the rows read in name order are in
// the savepoint's order, as a single run writes them. It does not publish
// out.
func AssembleExport(ctx context.Context, parts []string, out storage.Staging) (files int, err error) {
	next := map[string]int{}
	for i, dir := range parts {
		var names []string
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type()&fs.ModeSymlink != 0 || (!d.IsDir() && !d.Type().IsRegular()) {
				return fmt.Errorf("%s: not a regular file or directory", p)
			}
			if !d.IsDir() {
				rel, err := filepath.Rel(dir, p)
				if err != nil {
					return err
				}
				names = append(names, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return files, fmt.Errorf("shard: part %d (%s): %w", i, dir, err)
		}
		slices.Sort(names)
		for _, name := range names {
			if err := ctx.Err(); err != nil {
				return files, err
			}
			dataset, base := path.Split(name)
			ext := path.Ext(base)
			if dataset == "" || !strings.HasPrefix(base, "part-") {
				return files, fmt.Errorf("shard: part %d (%s): %s is no file of an export's dataset", i, dir, name)
			}
			dst := fmt.Sprintf("%spart-%05d%s", dataset, next[dataset], ext)
			next[dataset]++
			if err := copyFile(ctx, filepath.Join(dir, filepath.FromSlash(name)), out, dst); err != nil {
				return files, fmt.Errorf("shard: part %d: %w", i, err)
			}
			files++
		}
	}
	return files, nil
}

func copyFile(ctx context.Context, from string, out storage.Staging, name string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	w, err := out.Create(ctx, name)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, in); err != nil {
		w.Close()
		return fmt.Errorf("%s: %w", from, err)
	}
	return w.Close()
}
